"""Part `floats`: the float-parameter catalog of inductor/test_float_param_specialization on stock
and the overlay: per program, whether results equal eager for 5 values, and compiles."""

from __future__ import annotations

import concurrent.futures

from .options import BenchOptions
from .runner import run_under
from .stats import Json, log
from .table import Row, row
from .targets import FLOATS_STALE, Measured, TargetCheck
from .workspace import Workspace

CATALOG = "test/inductor/test_float_param_specialization.py"
VALUES = (0.5, 0.75, 1.25, 1.5, 0.3)


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    """Programs of the catalog (default: all), on both sides, through the test file's own
    --worker mode. The two sides run at the same time: this part counts, it does not time."""
    trees = ws.both_trees()
    catalog = str(trees["overlay"] / CATALOG)
    values = str(list(VALUES))
    programs = options.float_programs
    log(f"floats: {len(programs) or 'every'} catalog program(s) on stock and overlay (many minutes)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {side: pool.submit(run_under, tree, [catalog, "--worker", "cpu", values, *programs],
                                     f"float catalog on {side}") for side, tree in trees.items()}
        sides = {side: future.result() for side, future in futures.items()}
    results = {
        name: {side: {"eager_equal": not sides[side][name][0], "wrong_values": sides[side][name][0],
                      "compiles": sides[side][name][1]} for side in trees}
        for name in sides["overlay"]
    }
    part: Json = {
        "values": list(VALUES), "programs": results,
        "stale_on_stock": _stale(results, "stock"),
        "stale_on_overlay": _stale(results, "overlay"),
        "regressed": [n for n, p in results.items() if p["stock"]["eager_equal"] and not p["overlay"]["eager_equal"]],
    }
    return part, [FLOATS_STALE.check(len(part["stale_on_overlay"]))]


def _stale(results: Json, side: str) -> list[str]:
    return sorted(name for name, program in results.items() if not program[side]["eager_equal"])


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    return [row(
        f"Float catalog ({len(part['programs'])} programs x {len(part['values'])} values): stale on stock / overlay",
        f"{len(part['stale_on_stock'])} / {len(part['stale_on_overlay'])}", targets, FLOATS_STALE,
    )]


def repetitions(part: Json) -> int:
    return 1  # each program's values are checked once per side
