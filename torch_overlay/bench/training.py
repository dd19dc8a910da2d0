"""Part `training`: a compiled training loop (programs/training_loop.py: MLP, cross-entropy,
optimizer + StepLR, 100 steps, foreach both ways) on stock and the overlay: compiles, time,
and whether the parameters end equal to eager."""

from __future__ import annotations

from .options import BenchOptions
from .runner import program, run_under, summarize_runs
from .stats import Json, log, ratio
from .table import Row, row, seconds
from .targets import TRAINING_COMPILES, TRAINING_EQUAL, Measured, TargetCheck
from .workspace import Workspace

# Optimizer name -> how the table describes it (the program sets the hyper-parameters).
OPTIMIZERS = {"SGD": "SGD(momentum)", "AdamW": "AdamW"}
STEPS = 100
SCHEDULER = "StepLR(step_size=10, gamma=0.7)"
LOOP = "MLP forward and `opt.step()` compiled, cross-entropy"


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    trees = ws.both_trees()
    part: Json = {"steps": STEPS, "scheduler": SCHEDULER, "runs": {}}
    targets = []
    for optimizer in OPTIMIZERS:
        for foreach in (0, 1):
            run = f"{optimizer} foreach={bool(foreach)}"
            args = [program("training_loop"), "--optimizer", optimizer, "--foreach", str(foreach),
                    "--steps", str(STEPS)]
            entry: Json = {}
            for side, tree in trees.items():
                results = []
                for i in range(options.repeat):
                    log(f"training {i + 1}/{options.repeat}: {run} on {side}")
                    results.append(run_under(tree, args, f"training loop ({run})"))
                entry[side] = _side(results)
            entry["stock_over_overlay"] = ratio(entry["stock"]["median_s"], entry["overlay"]["median_s"])
            part["runs"][run] = entry
            targets += [
                TRAINING_EQUAL.at(run=run).check(entry["overlay"]["equal_to_eager"]),
                TRAINING_COMPILES.at(run=run).check(
                    max(entry["overlay"]["compiles"]) <= max(entry["stock"]["compiles"])),
            ]
    return part, targets


def _side(results: list[Json]) -> Json:
    return dict(summarize_runs(results), equal_to_eager=all(r["equal_to_eager"] for r in results))


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    found = []
    for run, entry in part["runs"].items():
        stock, overlay = entry["stock"], entry["overlay"]
        optimizer, foreach = run.split(" ", 1)
        found.append(row(
            f"Compiled training loop ({LOOP}), {part['steps']} steps, {OPTIMIZERS.get(optimizer, optimizer)} "
            f"{foreach} + {part['scheduler']}: stock vs overlay",
            f"{max(stock['compiles'])} vs {max(overlay['compiles'])} compiles; {seconds(stock['median_s'])} vs "
            f"{seconds(overlay['median_s'])}; equal to eager: {_yes(stock['equal_to_eager'])} / "
            f"{_yes(overlay['equal_to_eager'])}",
            targets, TRAINING_EQUAL.at(run=run), TRAINING_COMPILES.at(run=run),
        ))
    return found


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def repetitions(part: Json) -> int:
    return min(len(entry["stock"]["runs_s"]) for entry in part["runs"].values())
