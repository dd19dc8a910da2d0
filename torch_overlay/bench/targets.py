"""What the bench claims, each claim defined once: the number it checks and the way the tables
state it both come from one `Target` record."""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.records import RecordError, field, number
from .stats import Json

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {"<=": operator.le, ">=": operator.ge, "==": operator.eq}


@dataclass(frozen=True)
class Target:
    """A measured value must satisfy `op limit`.

    `name` is the key in results.json; a `{placeholder}` in it is filled by `at()` for each form
    or run measured. The limit is stated in `unit`s, `per_unit` measured units each (a 20 min
    limit on a wall time in seconds has per_unit=60). A condition that simply holds or not
    (limit True) is stated by `holds` instead.
    """

    name: str
    op: str
    limit: float | bool
    unit: str = ""
    per_unit: int = 1
    holds: str = ""

    def at(self, **labels: str) -> Target:
        return dataclasses.replace(self, name=self.name.format(**labels))

    @property
    def measured_limit(self) -> float | bool:
        return self.limit if isinstance(self.limit, bool) else self.limit * self.per_unit

    def check(self, value: float | bool) -> TargetCheck:
        limit = self.measured_limit
        return TargetCheck(self.name, value, self.op, limit, bool(OPERATORS[self.op](value, limit)))

    @property
    def shown(self) -> str:
        if self.holds:
            return self.holds
        spacing = "" if self.unit == "x" else " "
        stated = f"{self.limit:g}{spacing}{self.unit}".rstrip()
        return stated if self.op == "==" else f"{self.op} {stated}"


@dataclass(frozen=True)
class TargetCheck:
    """A target judged on a measured value: what results.json records for each claim."""

    name: str
    value: float | bool
    op: str
    limit: float | bool
    ok: bool

    def to_json(self) -> Json:
        return {"name": self.name, "value": self.value, "op": self.op, "limit": self.limit, "ok": self.ok}

    @classmethod
    def from_json(cls, data: Any) -> TargetCheck:
        op = field(data, "op", str)
        if op not in OPERATORS:
            raise RecordError(f"{op!r} is not a comparison: one of {', '.join(OPERATORS)}")
        return cls(field(data, "name", str), _value(data, "value"), op, _value(data, "limit"), field(data, "ok", bool))


def _value(data: Any, key: str) -> float | bool:
    """A measured value or a limit: a number, or whether a condition holds."""
    return data[key] if isinstance(data, dict) and isinstance(data.get(key), bool) else number(data, key)


# What a part's `measure` returns: its measures (a part's own JSON) and its targets, judged.
Measured = tuple[Json, list[TargetCheck]]


# -- the claims ---------------------------------------------------------------------------------

TREE_COLD = Target("cold extraction to patched tree (s)", "<=", 60, "s")
TREE_UNCHANGED = Target("unchanged re-run (s)", "<=", 5, "s")
TREE_RSS = Target("tree build peak RSS (MB)", "<=", 24, "GB", per_unit=1024)

WHEEL_SPEEDUP = Target("naive / build_wheel time", ">=", 10, "x")
WHEEL_DETERMINISTIC = Target("identical sha256 across builds", "==", True, holds="identical")
WHEEL_SAME_CONTENT = Target("naive re-deflate holds the same members", "==", True, holds="same members")
WHEEL_RSS = Target("wheel build peak RSS (MB)", "<=", 24, "GB", per_unit=1024)

RECOMPILE_COMPILES = Target("{form}: overlay compiles", "<=", 2, "compiles")
RECOMPILE_SPEEDUP = Target("{form}: stock / overlay time", ">=", 5, "x")

TRAINING_EQUAL = Target("training {run}: overlay equal to eager", "==", True, holds="equal to eager")
TRAINING_COMPILES = Target("training {run}: overlay compiles <= stock", "==", True, holds="compiles <= stock")

# Issue targets: the overlay's first compiled step (CPU seconds) at most 5 % and its steady-state
# step at most 2 % slower than stock's; with a constant learning rate, no more compiles.
COMPILETIME_FIRST_STEP = Target("compiletime {run}: first step CPU overlay / stock", "<=", 1.05, "x")
COMPILETIME_STEADY = Target("compiletime {run}: steady-state step overlay / stock", "<=", 1.02, "x")
COMPILETIME_COMPILES = Target("compiletime {run}: overlay compiles <= stock", "==", True,
                              holds="compiles <= stock")

FLOATS_STALE = Target("float catalog: programs stale on the overlay", "==", 0, "on the overlay")

KERNELS_NOT_MORE = Target("kernels: programs with more kernels (or bytes, in-place programs) on the overlay",
                          "==", 0, holds="none more than stock")

# Splitting OpenReg's C++ by concern must not make it slow to build: at most 1.5x the cold build
# of the single-file c10 layer it replaced (recorded 2026-11-21).
OPENREG_SINGLE_FILE_COLD_S = 21.8
OPENREG_COLD = Target("cold build (s)", "<=", round(1.5 * OPENREG_SINGLE_FILE_COLD_S, 1), "s")
OPENREG_UNCHANGED = Target("unchanged rebuild (s)", "<=", 3, "s")

# `python test/run_test.py` on 2 quiet cores: CI runs it after a fresh install within its limit.
SUITE_WALL = Target("suite wall time (s)", "<=", 30, "min", per_unit=60)
SUITE_EXIT = Target("suite exit status", "==", 0, holds="exit status 0")
