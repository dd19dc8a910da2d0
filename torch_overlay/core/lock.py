"""An exclusive lock around everything that writes the build directory."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import log

_held: list[int] = []


def inherited_fds() -> tuple[int, ...]:
    """Lock fds to pass to child processes, so the lock outlives a killed parent's children."""
    return tuple(_held)


@contextmanager
def build_lock(build_dir: Path) -> Iterator[None]:
    """Hold `<dir>/.lock`; a second build waits (and says so) instead of racing the first.

    The kernel drops the lock when its last holder dies, even by `kill -9`, so it can never go
    stale. Children get the fd too (see `inherited_fds`): after a `kill -9` of this process an
    orphaned `git` still holds the lock, and the next run waits for it instead of racing it.
    """
    build_dir.mkdir(parents=True, exist_ok=True)
    path = build_dir / ".lock"
    with path.open("a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            log.info(f"waiting for {path} (held by pid {holder}) ...")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        os.set_inheritable(f.fileno(), True)
        _held.append(f.fileno())
        try:
            yield
        finally:
            _held.remove(f.fileno())
            f.truncate(0)
            fcntl.flock(f, fcntl.LOCK_UN)
