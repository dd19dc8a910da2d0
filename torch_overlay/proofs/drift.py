"""Upstream drift: which patches a later release already carries, still needs, or conflicts with.

For each patch, on a stock tree of the release (hard links into its extraction, its own
dependencies on PYTHONPATH): do the patch's regression tests pass there, and does the patch
apply (`git apply --check`) or apply in reverse (already there)? The tests come from the
overlay tree, as for `verify patches`.

    already upstream   the tests pass on the release and/or the patch reverse-applies
    partly upstream    some cases that fail on the base pass on the release (upstream's fix is
                       there) and others still fail: the patch covers cases beyond upstream
    still needed       the tests fail there and the patch applies
    conflicts          the tests fail and the patch neither applies nor reverse-applies

The comparison is per test case: each case of the patch's suite is run on the base (stock) and
on the release, so a case the release fixed is told apart from one it still gets wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from ..core import log, records
from ..core.errors import OverlayError
from ..core.lock import build_lock
from ..core.outcomes import CaseOutcome, Drift, FileOutcome, render_table
from ..core.project import Project
from ..fork import applycheck, stock, tree
from ..fork.applycheck import ApplyCheck
from ..fork.series import Patch
from ..pinning.base import Base
from ..pinning.base import load as load_base
from ..pinning.deps import NO_EXTENSIONS, Runtime, ensure_deps, runtime
from ..pinning.pin import Pin
from . import upstream
from .drift_record import DriftRecord, FileRun, PatchDriftRecord, ReleaseDrift, WheelRef
from .prove import existing_tests, run_side, side_summary, with_privateuse1_backend
from .testrun import RunResult


@dataclass(frozen=True)
class PatchDrift:
    patch: Patch
    tests: tuple[RunResult, ...]  # on the release
    apply: ApplyCheck
    base_tests: tuple[RunResult, ...] = ()  # the same files on the base (stock)

    @property
    def tests_pass(self) -> bool:
        # Only a real pass counts: a file whose tests were all skipped there proves nothing.
        return bool(self.tests) and all(r.outcome == FileOutcome.PASS for r in self.tests)

    def _cases(self, runs: tuple[RunResult, ...]) -> dict[str, CaseOutcome]:
        return {f"{r.file}::{name}": outcome for r in runs for name, outcome in r.cases.items()}

    @property
    def fixed_upstream(self) -> list[str]:
        """Cases that fail on the base and pass on the release: upstream's fix is there."""
        base, release = self._cases(self.base_tests), self._cases(self.tests)
        return sorted(c for c, o in base.items() if o == CaseOutcome.FAILED and release.get(c) == CaseOutcome.PASSED)

    @property
    def beyond_upstream(self) -> list[str]:
        """Cases that fail on the base and still do not pass on the release."""
        base, release = self._cases(self.base_tests), self._cases(self.tests)
        return sorted(c for c, o in base.items() if o == CaseOutcome.FAILED and release.get(c) != CaseOutcome.PASSED)

    @property
    def verdict(self) -> Drift:
        if self.tests_pass or self.apply.reverse_applies:
            return Drift.ALREADY_UPSTREAM
        if self.fixed_upstream and self.beyond_upstream:
            return Drift.PARTLY_UPSTREAM
        return Drift.STILL_NEEDED if self.apply.applies else Drift.CONFLICTS

    def evidence(self) -> str:
        tests = f"tests {side_summary(self.tests)}" if self.tests else "no tests"
        return f"{tests}; patch {self.apply.describe()}"

    def cases_summary(self) -> str:
        """`fixed upstream 3, beyond upstream 2`: the cases that fail on the base, by their fate."""
        return f"fixed upstream {len(self.fixed_upstream)}, beyond upstream {len(self.beyond_upstream)}"

    def to_record(self) -> PatchDriftRecord:
        return PatchDriftRecord(
            self.patch.id, self.patch.path.name, self.patch.title, [_file_run(r) for r in self.tests],
            self.tests_pass, [_file_run(r) for r in self.base_tests], self.fixed_upstream, self.beyond_upstream,
            self.apply.applies, self.apply.reverse_applies, self.apply.output, self.verdict,
        )


def _file_run(run: RunResult) -> FileRun:
    return FileRun(run.file, run.outcome, run.returncode, run.tests_run, run.failed, run.skipped, run.seconds,
                   run.cases, run.log, run.tail)


def drift_on_tree(release_tree: Path, overlay_tree: Path, release: Runtime, patches: list[Patch],
                  logs: Path, timeout: float, base_tree: Path | None = None,
                  base: Runtime | None = None) -> list[PatchDrift]:
    """Apply checks and test runs of each patch on a stock tree of another release.

    With `base_tree` (a stock tree of the base) the same tests also run there, so that each
    case can be told fixed upstream or beyond upstream.
    """
    results = []
    for index, patch in enumerate(patches, 1):
        log.info(f"[{index}/{len(patches)}] {patch.path.name}")
        stock.clear_tests(release_tree)  # the check must see the release's files only
        check = applycheck.check(release_tree, patch)
        files = existing_tests(patch, overlay_tree)
        stock.place_tests(release_tree, overlay_tree, files)
        runs = run_side(release_tree, [release_tree, *release.pythonpath], patch, "upstream", files, logs, timeout,
                        release.env)
        base_runs: tuple[RunResult, ...] = ()
        if base_tree is not None:
            stock.place_tests(base_tree, overlay_tree, files)
            base_extra = base or Runtime()
            base_runs = run_side(base_tree, [base_tree, *base_extra.pythonpath], patch, "stock", files, logs, timeout,
                                 base_extra.env)
        results.append(PatchDrift(patch, runs, check, base_runs))
    stock.clear_tests(release_tree)
    return results


@dataclass
class Measured:
    """What preparing a release cost, for the record."""

    seconds: dict[str, float]
    bytes: dict[str, int]
    deps: list[str]


def evaluate_release(project: Project, pin: Pin, version: str, patches: list[Patch], *, keep: bool,
                     timeout: float) -> tuple[Base, list[PatchDrift], Measured]:
    """Fetch (verified), extract and equip `version`, then run the drift checks on it."""
    release_pin, wheel = upstream.release_pin(project.pin_file, version)  # unknown version: fails here
    if version == pin.version or wheel.sha256 in {w.sha256 for w in pin.wheels}:
        raise OverlayError(f"torch {version} is the base itself; `verify patches` checks it")
    base = load_base(project.cache, pin, pin.wheel_for_this_interpreter())
    tree.materialise(project, base)  # the tests are taken from the overlay tree
    work = project.verify_dir
    try:
        clock = time.monotonic()
        release = upstream.load_release(project.cache, release_pin, wheel)
        seconds = {"fetch_extract": time.monotonic() - clock}
        clock = time.monotonic()
        deps = ensure_deps(project.cache, release)
        seconds["dependencies"] = time.monotonic() - clock
        measured = Measured(seconds, {
            "wheel": release.wheel_path.stat().st_size,
            "extracted": upstream.disk_usage(release.extracted),
            "dependencies": upstream.disk_usage(deps),
        }, (deps / ".complete").read_text().split() if deps else [])
        with (build_lock(work), stock.stock_tree(release, work, keep=keep) as release_tree,
              stock.stock_tree(base, work, keep=keep) as base_tree):
            clock = time.monotonic()
            # Both sides with a PrivateUse1 device, as `verify patches` runs them (`prove`).
            release_openreg = project.with_base(version).stock_openreg_build_dir
            release_extra = with_privateuse1_backend(release_tree / "torch", release_openreg,
                                                     Runtime([deps] if deps else [], dict(NO_EXTENSIONS)))
            base_extra = with_privateuse1_backend(project.tree_dir / "torch", project.openreg_build_dir,
                                                  runtime(project.cache, base))
            results = drift_on_tree(release_tree, project.tree_dir, release_extra, patches, work / "logs", timeout,
                                    base_tree, base_extra)
            seconds["checks"] = time.monotonic() - clock
    finally:
        if not keep:  # also after an interruption: a release weighs gigabytes
            upstream.remove_release(project.cache, release_pin, wheel)
    measured.seconds = {k: round(v, 1) for k, v in seconds.items()}
    return release, results, measured


def render(version: str, results: list[PatchDrift]) -> str:
    rows = [("patch", f"tests on {version}", "cases failing on the base", "git apply --check", "verdict")]
    rows += [(r.patch.id, side_summary(r.tests), r.cases_summary(), r.apply.describe(), r.verdict) for r in results]
    lines = [render_table(rows)]
    for r in results:  # a crash (e.g. an import error) says nothing about the bug: point at it
        for run in r.tests:
            if run.outcome in (FileOutcome.CRASH, FileOutcome.TIMEOUT):
                lines.append(f"{r.patch.id}: {run.file} did not run to completion on {version} ({run.outcome}); "
                             f"the verdict rests on git apply. Log: {run.log}")
        lines.extend(f"{r.patch.id}: beyond upstream: {case}" for case in r.beyond_upstream
                     if r.verdict == Drift.PARTLY_UPSTREAM)
    return "\n".join(lines)


def to_record(release: Base, results: list[PatchDrift], measured: Measured) -> ReleaseDrift:
    return ReleaseDrift(release.version, WheelRef(release.wheel.tag, release.wheel.sha256),
                        datetime.now(timezone.utc).isoformat(timespec="seconds"), measured.seconds, measured.bytes,
                        measured.deps, [r.to_record() for r in results])


def _merged(previous: ReleaseDrift | None, entry: ReleaseDrift) -> ReleaseDrift:
    """A run of some patches against the same release wheel updates those patches and keeps the
    others' earlier results (in patch order); a different wheel replaces the whole entry."""
    if previous is None or previous.wheel != entry.wheel:
        return entry
    patches = {p.id: p for p in previous.patches} | {p.id: p for p in entry.patches}
    return replace(entry, patches=[patches[i] for i in sorted(patches)])


# How to mend a drift record that cannot be read: the committed one from git, or new runs.
RECORD_FIX = "restore it with git, or measure each release again: `verify against VERSION --record`"


def load_record(project: Project) -> DriftRecord:
    """Every release measured so far (none yet: an empty record)."""
    found = records.load(project.drift_record_file, "drift record", RECORD_FIX, DriftRecord.from_json)
    return found if found is not None else DriftRecord({})


def record(project: Project, entry: ReleaseDrift) -> Path:
    """Merge one release's measured results into `Project.drift_record_file` (keyed by version,
    then by patch), without this machine's log paths."""
    releases = dict(load_record(project).releases)
    releases[entry.version] = _merged(releases.get(entry.version), entry)
    # In release order (2.10.0rc1, 2.10.0, 2.11.0), not as strings ("2.10.0" < "2.9.1").
    ordered = {version: releases[version].portable() for version in sorted(releases, key=upstream.version_key)}
    records.write(project.drift_record_file, DriftRecord(ordered).to_json())
    return project.drift_record_file

