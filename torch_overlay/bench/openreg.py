"""Part `openreg`: OpenReg cold build (fresh build dir) and unchanged rebuild against the overlay."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..artifacts.openreg import build_openreg
from .options import BenchOptions
from .stats import Json, log, summarize, timed
from .table import Row, row, seconds
from .targets import OPENREG_COLD, OPENREG_UNCHANGED, Measured, TargetCheck
from .workspace import Workspace


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    torch_dir = ws.warm_project().tree_dir / "torch"
    cold: list[float] = []
    unchanged: list[float] = []
    for i in range(options.repeat):
        log(f"openreg {i + 1}/{options.repeat}: cold build, then unchanged rebuild")
        build_dir = ws.root / f"openreg-{i}"
        cold.append(_build_seconds(torch_dir, build_dir))
        unchanged.append(_build_seconds(torch_dir, build_dir))
        shutil.rmtree(build_dir)
    part: Json = {"cold": summarize(cold), "unchanged": summarize(unchanged)}
    return part, [OPENREG_COLD.check(part["cold"]["median_s"]),
                OPENREG_UNCHANGED.check(part["unchanged"]["median_s"])]


def _build_seconds(torch_dir: Path, build_dir: Path) -> float:
    seconds, _ = timed(lambda: build_openreg(torch_dir, build_dir, quiet=True))
    return seconds


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    return [
        row("OpenReg cold build (fresh build dir)", seconds(part["cold"]["median_s"]), targets, OPENREG_COLD),
        row("OpenReg unchanged rebuild", seconds(part["unchanged"]["median_s"]), targets, OPENREG_UNCHANGED),
    ]


def repetitions(part: Json) -> int:
    return len(part["cold"]["runs_s"])
