"""The cells of the bench's summary table: one row per measured claim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .targets import Target, TargetCheck


class Row(NamedTuple):
    measure: str
    result: str
    target: str = ""
    met: str = ""


def row(measure: str, result: str, recorded: Sequence[TargetCheck] = (), *targets: Target) -> Row:
    """A table row whose target and met columns state `targets`, judged as `recorded` says."""
    if not targets:
        return Row(measure, result)
    ok = {t.name: t.ok for t in recorded}
    stated = ", ".join(dict.fromkeys(t.shown for t in targets))
    return Row(measure, result, stated, "yes" if all(ok[t.name] for t in targets) else "**no**")


def seconds(value: float) -> str:
    """A duration: one decimal from a second up, two below, milliseconds below a tenth."""
    if value >= 1:
        return f"{value:.1f} s"
    return f"{value:.2f} s" if value >= 0.1 else f"{value * 1000:.1f} ms"


# A chart panel: (title, [slow label, fast label], [slow seconds, fast seconds]).
Panel = tuple[str, list[str], list[float]]
