"""The differential gate's record (`Project.gate_record_file`, and a shard's `--json`) and the case
durations recorded beside it (`Project.case_times_file`).

The record is what `regressions` writes and merges, and what the README's gate section and the
command line read: per corpus part, each side's run, the verdict counts and every case that is
not agree-pass or skipped, by name. `ok` and `totals` are written for readers of the file and
computed again from the parts on reading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..core.outcomes import CaseOutcome, CaseVerdict
from ..core.records import BaseRef, RecordError, field, member, number, optional, schema

SIDES = ("stock", "overlay")


def _strings(data: Any, key: str) -> list[str]:
    values = field(data, key, list)
    if not all(isinstance(value, str) for value in values):
        raise RecordError(f"{key!r} holds a value that is not a string")
    return values


def _seconds_by_case(data: Any, key: str) -> dict[str, float]:
    return {case: number(data[key], case) for case in field(data, key, dict)}


@dataclass(frozen=True)
class CaseRecord:
    """One case the gate lists by name: its verdict and its outcomes on each side (first run first)."""

    case: str
    verdict: CaseVerdict
    stock: list[CaseOutcome]
    overlay: list[CaseOutcome]
    upstream: str | None = None  # "#N" or a reason: the known upstream bug its failure message names

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"case": self.case, "verdict": self.verdict, "stock": self.stock,
                                "overlay": self.overlay}
        if self.upstream:
            data["upstream"] = self.upstream
        return data

    @classmethod
    def from_json(cls, data: Any) -> CaseRecord:
        return cls(field(data, "case", str), member(CaseVerdict, field(data, "verdict", str)),
                   [member(CaseOutcome, o) for o in _strings(data, "stock")],
                   [member(CaseOutcome, o) for o in _strings(data, "overlay")], optional(data, "upstream", str))


@dataclass(frozen=True)
class SideRecord:
    """How one side of a part ran: its exit status (None: timed out), seconds and cases reported."""

    returncode: int | None
    seconds: float
    cases: int

    def to_json(self) -> dict[str, Any]:
        return {"returncode": self.returncode, "seconds": self.seconds, "cases": self.cases}

    @classmethod
    def from_json(cls, data: Any) -> SideRecord:
        field(data, "returncode", object)  # present, and null when the side timed out
        return cls(optional(data, "returncode", int), number(data, "seconds"), field(data, "cases", int))


@dataclass(frozen=True)
class ShardRecord:
    """Shard `index` (1-based) of `total` of a part: the cases both sides collected, its own, and
    those of its own that neither side reported."""

    index: int
    total: int
    collected: list[str]
    cases: list[str]
    missing: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "total": self.total, "collected": self.collected, "cases": self.cases,
                "missing": self.missing}

    @classmethod
    def from_json(cls, data: Any) -> ShardRecord:
        return cls(field(data, "index", int), field(data, "total", int), _strings(data, "collected"),
                   _strings(data, "cases"), _strings(data, "missing"))


@dataclass(frozen=True)
class PartRecord:
    """One corpus part of a gate run, as recorded."""

    part: str  # `differential/test_programs`
    seconds: float | None  # wall time (both sides and the re-runs); None: recorded before it was measured
    counts: dict[CaseVerdict, int]  # every verdict, in CaseVerdict's order
    runs: dict[str, SideRecord]  # by side, SIDES
    # Every case but the agree-pass and skipped ones: they are the bulk (skipped: every CUDA
    # variant on a machine without CUDA), counted only.
    cases: list[CaseRecord]
    series: str  # each part says on which series and when it ran: a record merges runs of single parts
    date: str
    durations: dict[str, float] | None = None  # case -> seconds; moved to the case times when recorded
    shard: ShardRecord | None = None  # a shard's record
    missing: list[str] | None = None  # merged shards: collected cases no shard reported

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"part": self.part}
        if self.seconds is not None:
            data["seconds"] = self.seconds
        data.update(counts=self.counts, runs={side: run.to_json() for side, run in self.runs.items()},
                    cases=[case.to_json() for case in self.cases])
        optional_fields = {"durations": self.durations, "shard": self.shard.to_json() if self.shard else None,
                           "missing": self.missing}
        data.update({key: value for key, value in optional_fields.items() if value is not None})
        data.update(series=self.series, date=self.date)
        return data

    @classmethod
    def from_json(cls, data: Any) -> PartRecord:
        counts = field(data, "counts", dict)
        runs = field(data, "runs", dict)
        shard = optional(data, "shard", dict)
        return cls(
            part=field(data, "part", str),
            seconds=number(data, "seconds") if "seconds" in data else None,
            counts=verdict_counts({member(CaseVerdict, v): field(counts, v, int) for v in counts}),
            runs={side: SideRecord.from_json(field(runs, side, dict)) for side in SIDES},
            cases=[CaseRecord.from_json(case) for case in field(data, "cases", list)],
            series=field(data, "series", str),
            date=field(data, "date", str),
            durations=_seconds_by_case(data, "durations") if "durations" in data else None,
            shard=None if shard is None else ShardRecord.from_json(shard),
            missing=_strings(data, "missing") if "missing" in data else None,
        )


def verdict_counts(counts: Mapping[CaseVerdict, int]) -> dict[CaseVerdict, int]:
    """Every verdict's count, in CaseVerdict's order (a table's columns)."""
    return {v: counts.get(v, 0) for v in CaseVerdict}


@dataclass(frozen=True)
class GateRecord:
    """A gate run (or a merge of runs of single parts, or of shards): what `verify gate`
    prints with --json and records in `Project.gate_record_file`."""

    SCHEMA: ClassVar[int] = 1

    date: str
    tier: str
    base: BaseRef
    series: str
    python: str
    parts: list[PartRecord]

    @property
    def totals(self) -> dict[CaseVerdict, int]:
        total = Counter[CaseVerdict]()
        for part in self.parts:
            total.update(part.counts)
        return verdict_counts(total)

    @property
    def ok(self) -> bool:
        """No case regressed and every side ran to its end, every case reported (a cut-short run
        proves nothing of the cases it did not reach)."""
        return not self.totals[CaseVerdict.REGRESSED] and not self.timed_out() and not self.missing_cases()

    def regressed_cases(self) -> list[str]:
        return [f"{p.part}::{c.case}" for p in self.parts for c in p.cases if c.verdict == CaseVerdict.REGRESSED]

    def missing_cases(self) -> list[str]:
        """Cases a sharded part collected that no shard reported on either side."""
        return [f"{p.part}::{case}" for p in self.parts for case in p.missing or ()]

    def timed_out(self) -> list[tuple[str, str]]:
        """(part, side) for each side of a recorded part stopped at the timeout: the cases it did not
        reach are missing from the record."""
        return [(p.part, side) for p in self.parts for side in SIDES if p.runs[side].returncode is None]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.SCHEMA, "date": self.date, "tier": self.tier, "base": self.base.to_json(),
            "series": self.series, "python": self.python, "parts": [part.to_json() for part in self.parts],
            "ok": self.ok, "totals": self.totals,
        }

    @classmethod
    def from_json(cls, data: Any) -> GateRecord:
        schema(data, cls.SCHEMA)
        return cls(field(data, "date", str), field(data, "tier", str), BaseRef.from_json(field(data, "base", dict)),
                   field(data, "series", str), field(data, "python", str),
                   [PartRecord.from_json(part) for part in field(data, "parts", list)])


@dataclass(frozen=True)
class CaseTimes:
    """Each corpus case's recorded duration in seconds, by tier and part (`Project.case_times_file`):
    what the gate's shards are sized by. Written sorted, so a re-recorded part changes its own lines."""

    SCHEMA: ClassVar[int] = 2  # 1: the bare mapping of tiers

    tiers: dict[str, dict[str, dict[str, float]]]

    def of(self, tier: str, part: str) -> dict[str, float]:
        return self.tiers.get(tier, {}).get(part, {})

    def updated(self, tier: str, durations: dict[str, dict[str, float]]) -> CaseTimes:
        """These parts' durations (by part) replace theirs in `tier`; every other part's stay."""
        parts = dict(self.tiers.get(tier, {}), **durations)
        return CaseTimes(dict(sorted(dict(self.tiers, **{tier: dict(sorted(parts.items()))}).items())))

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.SCHEMA, "tiers": self.tiers}

    @classmethod
    def from_json(cls, data: Any) -> CaseTimes:
        tiers = data if schema(data, cls.SCHEMA, default=1) == 1 else field(data, "tiers", dict)
        return cls({tier: {part: _seconds_by_case(parts, part) for part in field(tiers, tier, dict)}
                    for tier, parts in tiers.items()})
