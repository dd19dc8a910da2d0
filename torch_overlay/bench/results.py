"""The results file (`benchmarks/results.json`, `bench --output DIR`): its schema, and how a run
merges into it.

The envelope (when, where, on what, each part's targets) is typed; each part's own measures are
its module's JSON, read by that module's `rows`, `repetitions` and `panels`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from ..core import records
from ..core.records import BaseRef, RecordError, field, schema
from .options import PART_NAMES
from .stats import Json, Machine, load_average
from .targets import TargetCheck

RESULTS_FILE = "results.json"
# How to mend a results file that cannot be read: the committed one from git, or a new run.
RESULTS_FIX = "restore it with git, or measure again: `bench --output DIR`"
# The envelope of a part: what `bench` adds to the measures of each part's module.
PART_ENVELOPE = ("targets", "measured_at", "load_average_after")


@dataclass(frozen=True)
class BenchPart:
    """One measured part: its measures, its targets judged, when it ran and the load it left."""

    measures: Json
    targets: list[TargetCheck]
    measured_at: str
    load_average_after: list[float]

    def to_json(self) -> Json:
        return dict(self.measures, targets=[t.to_json() for t in self.targets], measured_at=self.measured_at,
                    load_average_after=self.load_average_after)

    @classmethod
    def from_json(cls, data: Any) -> BenchPart:
        targets = [TargetCheck.from_json(t) for t in field(data, "targets", list)]
        measures = {key: value for key, value in data.items() if key not in PART_ENVELOPE}
        return cls(measures, targets, field(data, "measured_at", str), load_average(data, "load_average_after"))


@dataclass(frozen=True)
class BenchRecord:
    """A bench run, or the runs merged in a results file: each part in PART_NAMES' order."""

    SCHEMA: ClassVar[int] = 1

    date: str
    machine: Machine
    base: BaseRef
    series: str
    repeat: int  # runs per measurement, the median reported (`settings` in the file)
    parts: dict[str, BenchPart]

    @property
    def targets_ok(self) -> bool:
        return all(t.ok for part in self.parts.values() for t in part.targets)

    def to_json(self) -> Json:
        return {"schema": self.SCHEMA, "date": self.date, "machine": self.machine.to_json(),
                "base": self.base.to_json(), "series": self.series, "settings": {"repeat": self.repeat},
                "parts": {name: part.to_json() for name, part in self.parts.items()}, "targets_ok": self.targets_ok}

    @classmethod
    def from_json(cls, data: Any) -> BenchRecord:
        schema(data, cls.SCHEMA)
        parts = field(data, "parts", dict)
        unknown = [name for name in parts if name not in PART_NAMES]
        if unknown:
            raise RecordError(f"unknown part {', '.join(map(repr, unknown))}: parts are {', '.join(PART_NAMES)}")
        return cls(field(data, "date", str), Machine.from_json(field(data, "machine", dict)),
                   BaseRef.from_json(field(data, "base", dict)), field(data, "series", str),
                   field(field(data, "settings", dict), "repeat", int),
                   {name: BenchPart.from_json(parts[name]) for name in parts})


def merge(previous: BenchRecord | None, new: BenchRecord) -> BenchRecord:
    """Parts measured now replace the old ones; parts not run this time are kept (the slow suite
    is measured separately). Each part carries its own date and load average."""
    if previous is None:
        return new
    parts = dict(previous.parts, **new.parts)
    return replace(new, parts={name: parts[name] for name in PART_NAMES if name in parts})


def load_results(directory: Path) -> BenchRecord | None:
    return records.load(directory / RESULTS_FILE, "bench record", RESULTS_FIX, BenchRecord.from_json)


def write_results(directory: Path, results: BenchRecord) -> None:
    records.write(directory / RESULTS_FILE, results.to_json())
