"""What one bench run measures and where its results go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import OverlayError

PART_NAMES = ("tree", "wheel", "recompile", "training", "compiletime", "floats", "kernels", "openreg", "suite")
# The suite, the compile times of real models, the float catalog and the kernel counts take
# many minutes each.
DEFAULT_PARTS = ("tree", "wheel", "recompile", "training", "openreg")


def select_parts(only: Sequence[str] = (), every: bool = False) -> tuple[str, ...]:
    """The parts to run, in their fixed order: those named, else all of them (`every`) or the default set."""
    return tuple(p for p in PART_NAMES if p in (only or (PART_NAMES if every else DEFAULT_PARTS)))


@dataclass(frozen=True)
class BenchOptions:
    parts: tuple[str, ...] = DEFAULT_PARTS
    repeat: int = 3                          # runs per measurement; the median is reported
    workdir: Path | None = None              # where temporary trees go (default: the cache dir)
    float_programs: tuple[str, ...] = ()     # floats part: only these catalog programs
    every_config: bool = False               # kernels part: every optim_db configuration, not the first
    output: Path | None = None               # merge the results into this directory's results.json
    chart: bool = True                       # with output: also draw the chart

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise OverlayError("--repeat must be at least 1")
