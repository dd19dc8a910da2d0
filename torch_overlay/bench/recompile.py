"""Part `recompile`: a compiled optimizer-style step (programs/compiled_step.py), a new learning
rate on each of 20 steps, on stock 2.9.1 and the overlay: compiles and time."""

from __future__ import annotations

from .options import BenchOptions
from .runner import program, run_under, summarize_runs
from .stats import Json, log, ratio
from .table import Panel, Row, row, seconds
from .targets import RECOMPILE_COMPILES, RECOMPILE_SPEEDUP, Measured, TargetCheck
from .workspace import Workspace

FORMS = {"mul_div": "`mul_`/`div_` form", "alpha": "`add_(g, alpha=-lr / (1 - beta2) ** 0.5)`"}
STEPS = 20


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    trees = ws.both_trees()
    runs: dict[str, dict[str, list[Json]]] = {form: {side: [] for side in trees} for form in FORMS}
    for i in range(options.repeat):
        for form in FORMS:
            for side, tree in trees.items():
                log(f"recompile {i + 1}/{options.repeat}: {form} on {side}")
                runs[form][side].append(run_under(tree, [program("compiled_step"), form, str(STEPS)],
                                                  f"compiled step ({form})"))
    part: Json = {"steps": STEPS, "recompile_limit": STEPS + 8, "forms": {}}
    targets = []
    for form, sides in runs.items():
        entry: Json = {side: summarize_runs(results) for side, results in sides.items()}
        entry["stock_over_overlay"] = ratio(entry["stock"]["median_s"], entry["overlay"]["median_s"])
        part["forms"][form] = entry
        targets += [
            RECOMPILE_COMPILES.at(form=form).check(max(entry["overlay"]["compiles"])),
            RECOMPILE_SPEEDUP.at(form=form).check(entry["stock_over_overlay"]),
        ]
    return part, targets


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    found = []
    for form, entry in part["forms"].items():
        stock, overlay = entry["stock"], entry["overlay"]
        found.append(row(
            f"Compiled step, {part['steps']} learning rates, {FORMS.get(form, form)}: stock vs overlay",
            f"{max(stock['compiles'])} vs {max(overlay['compiles'])} compiles; {seconds(stock['median_s'])} vs "
            f"{seconds(overlay['median_s'])} (**{entry['stock_over_overlay']}x**)",
            targets, RECOMPILE_COMPILES.at(form=form), RECOMPILE_SPEEDUP.at(form=form),
        ))
    return found


def repetitions(part: Json) -> int:
    return min(len(entry["stock"]["runs_s"]) for entry in part["forms"].values())


def panels(part: Json) -> list[Panel]:
    return [(f"compiled step ({form})", ["stock", "overlay"],
             [entry["stock"]["median_s"], entry["overlay"]["median_s"]]) for form, entry in part["forms"].items()]
