"""`python -m torch_overlay bench`: measure the chosen parts and merge them into the results file."""

from __future__ import annotations

from ..core.project import Project
from ..fork.series import local_tag, read_series
from ..pinning.pin import Pin
from .chart import CHART_FILE, write_chart
from .options import BenchOptions
from .parts import PARTS
from .results import SCHEMA, all_met, load_results, merge, write_results
from .stats import Json, machine_info, now
from .workspace import workspace


def measure(project: Project, pin: Pin, options: BenchOptions) -> Json:
    results: Json = {
        "schema": SCHEMA, "date": now(), "machine": machine_info(),
        "base": {"version": pin.version, "revision": pin.revision},
        "series": local_tag(read_series(project.patches_dir)),
        "settings": {"repeat": options.repeat}, "parts": {},
    }
    with workspace(project, pin, options.workdir) as ws:
        for name in options.parts:
            start = now()
            part = PARTS[name].measure(ws, options)
            results["parts"][name] = dict(part, measured_at=start, load_average_after=machine_info()["load_average"])
    results["targets_ok"] = all_met(results["parts"])
    return results


def run_bench(project: Project, pin: Pin, options: BenchOptions) -> Json:
    """This run's results, merged into `options.output`'s when it is given (`targets_ok`: every target met)."""
    results = measure(project, pin, options)
    if options.output is not None:
        results = merge(load_results(options.output), results)
        write_results(options.output, results)
        if options.chart:
            write_chart(results, options.output / CHART_FILE)
    return results
