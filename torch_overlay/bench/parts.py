"""The measured parts, in the order they run and are reported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import compiletime, floats, kernels, openreg, recompile, suite, training, tree, wheel
from .options import BenchOptions
from .stats import Json
from .table import Panel, Row
from .targets import Measured, TargetCheck
from .workspace import Workspace


def _no_panels(part: Json) -> list[Panel]:
    return []


@dataclass(frozen=True)
class Part:
    measure: Callable[[Workspace, BenchOptions], Measured]
    rows: Callable[[Json, list[TargetCheck]], list[Row]]  # its lines of the summary table
    repetitions: Callable[[Json], int]             # how many runs its medians are of
    panels: Callable[[Json], list[Panel]] = _no_panels  # its paired timings in the chart


PARTS: dict[str, Part] = {
    "tree": Part(tree.measure, tree.rows, tree.repetitions, tree.panels),
    "wheel": Part(wheel.measure, wheel.rows, wheel.repetitions, wheel.panels),
    "recompile": Part(recompile.measure, recompile.rows, recompile.repetitions, recompile.panels),
    "training": Part(training.measure, training.rows, training.repetitions),
    "compiletime": Part(compiletime.measure, compiletime.rows, compiletime.repetitions),
    "floats": Part(floats.measure, floats.rows, floats.repetitions),
    "kernels": Part(kernels.measure, kernels.rows, kernels.repetitions),
    "openreg": Part(openreg.measure, openreg.rows, openreg.repetitions),
    "suite": Part(suite.measure, suite.rows, suite.repetitions),
}
