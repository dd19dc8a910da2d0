"""`python -m torch_overlay bench`: measure the chosen parts, merge them into the results file,
print the summary table."""

from __future__ import annotations

import json

from ..core.project import Project
from ..core.records import BaseRef
from ..fork.series import local_tag, read_series
from ..pinning.pin import Pin
from .chart import CHART_FILE, write_chart
from .options import BenchOptions
from .parts import PARTS
from .report import render_table
from .results import BenchPart, BenchRecord, load_results, merge, write_results
from .stats import machine_info, now
from .workspace import workspace


def measure(project: Project, pin: Pin, options: BenchOptions) -> BenchRecord:
    # What the run starts on: a long run records the series it measured, not one exported meanwhile.
    date, machine, series = now(), machine_info(), local_tag(read_series(project.patches_dir))
    parts: dict[str, BenchPart] = {}
    with workspace(project, pin, options.workdir) as ws:
        for name in options.parts:
            start = now()
            measures, targets = PARTS[name].measure(ws, options)
            parts[name] = BenchPart(measures, targets, start, machine_info().load_average)
    return BenchRecord(date, machine, BaseRef(pin.version, pin.revision), series, options.repeat, parts)


def run_bench(project: Project, pin: Pin, options: BenchOptions) -> int:
    """Exit status 0 when every target is met, 1 otherwise."""
    results = measure(project, pin, options)
    if options.output is not None:
        results = merge(load_results(options.output), results)
        write_results(options.output, results)
        if options.chart:
            write_chart(results, options.output / CHART_FILE)
    print(json.dumps(results.to_json(), indent=1) if options.as_json else render_table(results))
    return 0 if results.targets_ok else 1
