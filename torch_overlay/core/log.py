"""Messages on stderr: what the tool is doing, and what went wrong.

stdout carries a command's result (a path, a table, JSON), so it can be piped or parsed;
everything else goes to stderr, through here, in one style: progress as plain lines, failures
as one `error: ...` line. `-q` hides progress (errors always show); `-v` adds tracebacks.
stderr is looked up on every call: the build backend redirects it to the terminal.
"""

from __future__ import annotations

import sys
from enum import IntEnum


class Verbosity(IntEnum):
    QUIET = 0  # -q: errors only
    NORMAL = 1
    VERBOSE = 2  # -v: tracebacks with errors


_verbosity = Verbosity.NORMAL


def set_verbosity(verbosity: Verbosity) -> None:
    global _verbosity
    _verbosity = verbosity


def is_verbose() -> bool:
    return _verbosity >= Verbosity.VERBOSE


def info(message: str, *, end: str = "\n") -> None:
    """A progress line (hidden by -q); `end=""` with a leading `\\r` redraws it on a terminal."""
    if _verbosity >= Verbosity.NORMAL:
        print(message, end=end, file=sys.stderr, flush=True)


def warning(message: str) -> None:
    """Something the run goes on without, as one line (always shown)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    """A failure, as one line (always shown)."""
    print(f"error: {message}", file=sys.stderr, flush=True)
