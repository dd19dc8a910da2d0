"""`python -m torch_overlay bench`: measure the chosen parts and merge them into the results file."""

from __future__ import annotations

from ..core.project import Project
from ..core.records import BaseRef
from ..fork.series import local_tag, read_series
from ..pinning.pin import Pin
from .chart import CHART_FILE, write_chart
from .options import BenchOptions
from .parts import PARTS
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


def run_bench(project: Project, pin: Pin, options: BenchOptions) -> BenchRecord:
    """This run's results, merged into `options.output`'s when it is given (`targets_ok`: every target met)."""
    results = measure(project, pin, options)
    if options.output is not None:
        results = merge(load_results(options.output), results)
        write_results(options.output, results)
        if options.chart:
            write_chart(results, options.output / CHART_FILE)
    return results
