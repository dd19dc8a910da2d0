"""The one last line every repro prints: how the torch it ran under fares on its report."""

from __future__ import annotations

from collections.abc import Callable


def report(issue: int, agrees_with_eager: Callable[[], bool]) -> None:
    """`REPRO <issue> fixed` (compiled agrees with eager, or raises eager's error), `reproduces`
    (it differs silently) or `error: ...` (compiled raises where eager does not)."""
    try:
        ok = agrees_with_eager()
    except Exception as e:
        print(f"REPRO {issue} error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return
    print(f"REPRO {issue} {'fixed' if ok else 'reproduces'}")
