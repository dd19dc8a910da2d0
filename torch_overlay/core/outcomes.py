"""Every outcome the tool names, in one place: how a test file or a test case ended, what the
differential gate makes of a case on both sides, and the verdicts on a patch.

Each is a string enum whose value is the text that is printed and recorded (`benchmarks/*.json`,
`stage.json`, JUnit-derived records): a member compares, hashes and serialises as that string, so
a record read back from JSON holds plain strings that equal the members.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum


class Outcome(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class FileOutcome(Outcome):
    """How one pytest run of a test file ended."""

    PASS = "pass"
    FAIL = "fail"
    CRASH = "crash"  # no (whole) JUnit report: the process died before or while running
    EMPTY = "no-tests"  # it ran no test, or skipped them all: proves nothing either way (not a pass)
    TIMEOUT = "timeout"
    BROKEN = "broken"  # pytest itself failed (an internal or usage error): says nothing of the tests

    @property
    def failing(self) -> bool:
        """Whether the file did not pass: what a regression test must do on an unfixed torch."""
        return self in (FileOutcome.FAIL, FileOutcome.CRASH, FileOutcome.TIMEOUT)


class CaseOutcome(Outcome):
    """How one test case ended on one side: pytest's words, and two the tool adds."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    CRASHED = "crashed"  # its process died inside it (a segfault in compiled code)
    MISSING = "missing"  # not reported on that side (its file crashed there, or the corpus differs)


class RunStatus(Outcome):
    """What `test/run_test.py` prints for a file (upstream's runner's words)."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"  # nothing ran, or everything skipped
    BROKEN = "BROKEN"  # pytest itself failed

    @classmethod
    def of(cls, outcome: FileOutcome) -> RunStatus:
        return _RUN_STATUS[outcome]


_RUN_STATUS = {FileOutcome.PASS: RunStatus.PASSED, FileOutcome.EMPTY: RunStatus.SKIPPED,
               FileOutcome.FAIL: RunStatus.FAILED, FileOutcome.CRASH: RunStatus.FAILED,
               FileOutcome.TIMEOUT: RunStatus.FAILED, FileOutcome.BROKEN: RunStatus.BROKEN}


class CaseVerdict(Outcome):
    """The differential gate's verdict on one case, from its outcomes on stock and on the overlay."""

    AGREE_PASS = "agree-pass"
    AGREE_FAIL = "agree-fail"
    FIXED = "fixed"  # fails on stock, passes on the overlay
    REGRESSED = "regressed"  # passes on stock every time, fails (or is skipped) on the overlay even once
    FLAKY_STOCK = "flaky-on-stock"
    FLAKY_OVERLAY = "flaky-on-overlay"
    SKIPPED = "skipped"  # on both sides
    ONE_SIDED = "one-sided"  # reported on one side only, and not a case stock passes


class Proof(Outcome):
    """`verify patches`: do the patch's regression tests fail on stock torch and pass on the overlay?"""

    OK = "ok"
    NO_TESTS = "no regression test"
    NOT_CAUGHT = "passes on stock: test does not catch the bug"
    BROKEN = "fails on overlay"


class Repro(Outcome):
    """`verify catalogue`: what one torch makes of an upstream report's repro (its last line)."""

    REPRODUCES = "reproduces"  # compiled differs from eager without an error
    FIXED = "fixed"  # compiled agrees with eager, or raises eager's error
    ERROR = "error"  # compiled raises where eager does not
    NO_VERDICT = "no verdict"  # the repro died, timed out or printed no verdict line

    @property
    def rank(self) -> int:
        """How well a torch fares: fixed > a clear error > a silent wrong result or no answer."""
        return {Repro.FIXED: 2, Repro.ERROR: 1}.get(self, 0)


class Drift(Outcome):
    """`verify against` and `stage`: what a later release (or an upstream checkout) makes of a patch."""

    ALREADY_UPSTREAM = "already upstream"
    PARTLY_UPSTREAM = "partly upstream"
    STILL_NEEDED = "still needed"
    CONFLICTS = "conflicts"


def render_table(rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns (the first row is the header, ruled off below); the last column, the
    verdict, is left unpadded since its texts vary most in length."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([*(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=False)), f"{row[-1]}"])
             for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)
