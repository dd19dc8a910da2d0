"""Fault injection for tests: make the tool die (or stop, or fail) at a named step.

`TORCH_OVERLAY_FAULT=STEP[:N[:ACTION]]` acts the N-th time (default 1) the tool passes
`fault_point(STEP)`. ACTION is `kill` (default: SIGKILL, nothing gets to clean up, as with a
power cut or the OOM killer), `stop` (SIGSTOP, so a test can start a second process while this one
holds its lock, then SIGCONT it) or an errno name such as `ENOSPC`, raised as that OSError.

Steps: `fetch` (download verified, not yet in the cache), `extract` (after each member of the
base wheel), `populate` (after each file copied into a new tree, then once more when it is complete but not
yet in place), `apply` (after each patch is committed, before the tree's record says so),
`export` (after each patch file is written, then after the series), `wheel` (after each wheel member),
`openreg` (after configuring, before building).
Unset, a fault point costs one dictionary lookup.
"""

from __future__ import annotations

import errno
import os
import signal
from collections import Counter
from pathlib import Path

FAULT_ENV = "TORCH_OVERLAY_FAULT"

_passes: Counter[str] = Counter()


def fault_point(step: str, path: Path | None = None) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    name, _, rest = spec.partition(":")
    if name != step:
        return
    count, _, action = rest.partition(":")
    _passes[step] += 1
    if _passes[step] != int(count or 1):
        return
    if action in ("", "kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    else:
        code = getattr(errno, action)
        raise OSError(code, os.strerror(code), None if path is None else str(path))
