"""Part `kernels`: what inductor emits (programs/kernel_metrics.py: in-place programs without an
aliasing hazard and compiled `optim_db` optimizer steps) on stock and the overlay. The mutation
and aliasing fixes refuse unsafe in-place rewrites; this part checks they cost no kernel and no
byte where the rewrite was safe. The optimizer steps make kernel counts a contract for the
hyperparameter inputs (0010, 0017), which change what inductor fuses: each optimizer's first
`optim_db` configuration (every one with `bench --tier full`: many times longer) x `foreach` x
`score_fusion_memory_threshold` (default and 1) x a constant and a scheduled learning rate."""

from __future__ import annotations

import concurrent.futures

from .options import BenchOptions
from .runner import program, run_under
from .stats import Json, log
from .table import Row, row
from .targets import KERNELS_NOT_MORE, Measured, TargetCheck
from .workspace import Workspace


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    """Both sides at once: this part counts, it does not time."""
    trees = ws.both_trees()
    log("kernels: in-place programs and compiled optimizer steps on stock and overlay (minutes)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        args = [program("kernel_metrics"), *(["--every-config"] if options.every_config else [])]
        futures = {side: pool.submit(run_under, tree, args, f"kernel metrics on {side}")
                   for side, tree in trees.items()}
        sides = {side: future.result()["programs"] for side, future in futures.items()}
    programs: Json = {name: {side: _counts(sides[side][name]) for side in trees} for name in sides["stock"]}
    return summarize(programs)


def is_optimizer_step(name: str) -> bool:
    return "foreach=" in name


def summarize(programs: Json) -> Measured:
    """The part's measures and targets from each program's counts on both sides.

    Kernels may not grow anywhere, bytes not for in-place programs. A compiled optimizer step
    reads a scheduled learning rate from a 0-d tensor input on the overlay (0010: one graph for
    every value) where stock bakes it in as a constant (and recompiles for each new value): those
    few bytes per step are reported, not counted against the overlay."""
    failing = sorted(name for name, entry in programs.items() if None in entry.values())
    compiled: Json = {name: entry for name, entry in programs.items() if name not in failing}

    def grows(name: str, key: str) -> bool:
        return bool(compiled[name]["overlay"][key] > compiled[name]["stock"][key])

    more = [name for name in compiled
            if grows(name, "kernels") or (not is_optimizer_step(name) and grows(name, "bytes"))]
    # A program that compiles on stock only counts against the overlay, like one with more kernels.
    more += [name for name in failing if programs[name]["stock"] is not None]
    step_bytes = [compiled[n]["overlay"]["bytes"] - compiled[n]["stock"]["bytes"]
                  for n in compiled if is_optimizer_step(n)]
    part: Json = {"programs": programs, "not_compiled": failing, "more_on_overlay": sorted(more),
                  "optimizer_step_extra_bytes": max(step_bytes, default=0),
                  "totals": {side: _totals(compiled, side) for side in ("stock", "overlay")}}
    return part, [KERNELS_NOT_MORE.check(len(more))]


def _counts(measured: list[int] | None) -> Json | None:
    return None if measured is None else {"kernels": measured[0], "bytes": measured[1]}


def _totals(programs: Json, side: str) -> Json:
    return {key: sum(entry[side][key] for entry in programs.values()) for key in ("kernels", "bytes")}


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    compiled = [name for name in part["programs"] if name not in part["not_compiled"]]
    optimizers = sum(1 for name in compiled if is_optimizer_step(name))
    stock, overlay = part["totals"]["stock"], part["totals"]["overlay"]
    extra = part["optimizer_step_extra_bytes"]
    step_bytes = (f" (an optimizer step reads at most {extra} more bytes: its hyperparameter inputs, 0010)"
                  if extra > 0 else "")
    return [row(
        f"Inductor output, {len(compiled) - optimizers} in-place programs without aliasing + "
        f"{optimizers} compiled `optim_db` steps (`foreach` both ways; not compiling on a side: "
        f"{', '.join(_steps(part['not_compiled'])) or 'none'}): stock vs overlay",
        f"{stock['kernels']} vs {overlay['kernels']} kernels; {stock['bytes'] / 1024:.1f} vs "
        f"{overlay['bytes'] / 1024:.1f} KiB accessed; more on the overlay: {len(part['more_on_overlay'])} programs"
        f"{step_bytes}",
        targets, KERNELS_NOT_MORE,
    )]


def _steps(names: list[str]) -> list[str]:
    """Optimizer x foreach, once each: "Muon foreach=False threshold=1 lr=constant" -> "Muon foreach=False"."""
    return list(dict.fromkeys(name.split(" threshold=")[0] for name in names))


def repetitions(part: Json) -> int:
    return 1  # counts do not vary between runs
