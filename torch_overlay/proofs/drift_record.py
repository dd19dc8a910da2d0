"""The drift record (`Project.drift_record_file`): each later release's verdict on each patch, what
`verify against VERSION` prints with --json and records, and the README's patch table reads.

Schema 1 was the bare mapping of release to entry; schema 2 wraps it, `{"schema": 2, "releases":
{...}}`, so that the file can say which schema it is. Both are read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..core.outcomes import CaseOutcome, Drift, FileOutcome
from ..core.records import RecordError, field, member, number, optional, schema


def _strings(data: Any, key: str) -> list[str]:
    values = field(data, key, list)
    if not all(isinstance(value, str) for value in values):
        raise RecordError(f"{key!r} holds a value that is not a string")
    return values


@dataclass(frozen=True)
class FileRun:
    """How one test file of a patch ended on one side, with its cases' outcomes."""

    file: str
    outcome: FileOutcome
    returncode: int | None
    tests_run: int | None  # None: pytest wrote no report
    failed: int
    skipped: int
    seconds: float
    cases: dict[str, CaseOutcome]  # keyed `Class::test`; none in records made before cases were
    # Where this machine keeps the run's log, and its tail: printed, never committed (`portable`).
    log: str | None = None
    tail: str | None = None

    def portable(self) -> FileRun:
        return replace(self, log=None, tail=None)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"file": self.file, "outcome": self.outcome, "returncode": self.returncode,
                                "tests_run": self.tests_run, "failed": self.failed, "skipped": self.skipped,
                                "seconds": self.seconds}
        if self.log is not None:
            data.update(log=self.log, tail=self.tail)
        data["cases"] = self.cases
        return data

    @classmethod
    def from_json(cls, data: Any) -> FileRun:
        cases = optional(data, "cases", dict) or {}
        return cls(field(data, "file", str), member(FileOutcome, field(data, "outcome", str)),
                   optional(data, "returncode", int), optional(data, "tests_run", int), field(data, "failed", int),
                   field(data, "skipped", int), number(data, "seconds"),
                   {case: member(CaseOutcome, outcome) for case, outcome in cases.items()},
                   optional(data, "log", str), optional(data, "tail", str))


@dataclass(frozen=True)
class PatchDriftRecord:
    """One patch on one release: its tests there (and on the base), `git apply --check`, the verdict."""

    id: str
    file: str  # the patch file's name
    title: str
    tests: list[FileRun]  # on the release
    tests_pass: bool
    base_tests: list[FileRun]  # the same files on the base; none in records made before cases were
    fixed_upstream: list[str]  # cases failing on the base that pass on the release
    beyond_upstream: list[str]  # cases failing on the base that still do not pass there
    applies: bool
    reverse_applies: bool
    apply_output: str
    verdict: Drift

    def portable(self) -> PatchDriftRecord:
        return replace(self, tests=[t.portable() for t in self.tests],
                       base_tests=[t.portable() for t in self.base_tests])

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "title": self.title, "tests": [t.to_json() for t in self.tests],
                "tests_pass": self.tests_pass, "base_tests": [t.to_json() for t in self.base_tests],
                "fixed_upstream": self.fixed_upstream, "beyond_upstream": self.beyond_upstream,
                "applies": self.applies, "reverse_applies": self.reverse_applies, "apply_output": self.apply_output,
                "verdict": self.verdict}

    @classmethod
    def from_json(cls, data: Any) -> PatchDriftRecord:
        # Records made before the per-case comparison lack the base's runs and the cases' fates:
        # none were measured, as a run without base runs has none.
        unmeasured = isinstance(data, dict) and "fixed_upstream" not in data
        return cls(
            field(data, "id", str), field(data, "file", str), field(data, "title", str),
            [FileRun.from_json(t) for t in field(data, "tests", list)], field(data, "tests_pass", bool),
            [FileRun.from_json(t) for t in field(data, "base_tests", list)],
            [] if unmeasured else _strings(data, "fixed_upstream"),
            [] if unmeasured else _strings(data, "beyond_upstream"),
            field(data, "applies", bool), field(data, "reverse_applies", bool), field(data, "apply_output", str),
            member(Drift, field(data, "verdict", str)),
        )


@dataclass(frozen=True)
class WheelRef:
    """The release wheel a drift entry was measured on."""

    tag: str
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"tag": self.tag, "sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Any) -> WheelRef:
        return cls(field(data, "tag", str), field(data, "sha256", str))


@dataclass(frozen=True)
class ReleaseDrift:
    """One release's drift: its wheel, what preparing it cost, and each patch measured on it."""

    version: str
    wheel: WheelRef
    measured_at: str
    seconds: dict[str, float]  # fetch_extract, dependencies, checks
    bytes: dict[str, int]  # wheel, extracted, dependencies
    dependencies_installed: list[str]
    patches: list[PatchDriftRecord]

    def portable(self) -> ReleaseDrift:
        """Without this machine's log paths and log tails: the console shows them, the committed
        record keeps only what was measured."""
        return replace(self, patches=[p.portable() for p in self.patches])

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "wheel": self.wheel.to_json(), "measured_at": self.measured_at,
                "seconds": self.seconds, "bytes": self.bytes, "dependencies_installed": self.dependencies_installed,
                "patches": [p.to_json() for p in self.patches]}

    @classmethod
    def from_json(cls, data: Any) -> ReleaseDrift:
        seconds, sizes = field(data, "seconds", dict), field(data, "bytes", dict)
        return cls(field(data, "version", str), WheelRef.from_json(field(data, "wheel", dict)),
                   field(data, "measured_at", str), {key: number(seconds, key) for key in seconds},
                   {key: field(sizes, key, int) for key in sizes}, _strings(data, "dependencies_installed"),
                   [PatchDriftRecord.from_json(p) for p in field(data, "patches", list)])


@dataclass(frozen=True)
class DriftRecord:
    """Every measured release's drift, by version in release order."""

    SCHEMA: ClassVar[int] = 2

    releases: dict[str, ReleaseDrift]

    def to_json(self) -> dict[str, Any]:
        return {"schema": self.SCHEMA, "releases": {version: e.to_json() for version, e in self.releases.items()}}

    @classmethod
    def from_json(cls, data: Any) -> DriftRecord:
        found = schema(data, cls.SCHEMA, default=1)
        releases = data if found == 1 else field(data, "releases", dict)
        return cls({version: ReleaseDrift.from_json(field(releases, version, dict)) for version in releases})
