"""The verdicts on a patch, and the table that shows them.

A verdict's value is the text that is printed and recorded (`benchmarks/drift.json`,
`stage.json`): it compares, hashes and serialises as that string, so a record read back from
JSON holds plain strings that equal the members.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path

# Each release's drift verdicts as measured (`verify --against V --record`); the README's
# "first release with the fix" is read from it.
DRIFT_RECORD_FILE = Path("benchmarks") / "drift.json"


class Verdict(str, Enum):
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Proof(Verdict):
    """`verify`: do the patch's regression tests fail on stock torch and pass on the overlay?"""

    OK = "ok"
    NO_TESTS = "no regression test"
    NOT_CAUGHT = "passes on stock: test does not catch the bug"
    BROKEN = "fails on overlay"


class Drift(Verdict):
    """`verify --against` and `stage`: what a later release (or an upstream checkout) makes of a patch."""

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
