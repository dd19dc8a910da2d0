"""The exceptions the command line turns into one clear line on stderr, and the exit codes.

Each exit code means one thing, across the command line and `test/run_test.py`:
0 everything is fine, 1 a check failed (a proof, a regression, a test), 2 the input is wrong
(usage, overlay.toml, series, a patch, the tree's state refuses the command), 3 the tool or its
environment broke (git missing, download failed, disk full, corrupt cache or state).
"""

OK = 0
CHECK_FAILED = 1
INPUT_ERROR = 2
TOOL_BROKE = 3


class OverlayError(Exception):
    """A user-facing failure of the input: the message names what is wrong and how to fix it."""

    exit_code = INPUT_ERROR


class CheckFailed(OverlayError):
    """A check ran and its answer is no (e.g. an out-of-date README table)."""

    exit_code = CHECK_FAILED


class ToolError(OverlayError):
    """The tool or its environment broke: a missing program, the network, the disk, the cache."""

    exit_code = TOOL_BROKE
