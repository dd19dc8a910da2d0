"""Replacing a file or a directory in one step: readers see the old one or the new one, never half.

The new content is assembled beside the target, under a fixed name (`.NAME.partial`), then
renamed over it. Beside it, because a rename is only atomic within one file system; under a
fixed name, because a run killed mid-write (`kill -9`, a power cut) cleans up nothing, and the
next run must find and discard what it left. Any other failure removes the partial at once and
leaves the target as it was.

A directory cannot be renamed over a non-empty one: the old directory is removed just before
the rename. Directories replaced this way mark their completeness inside (a manifest, a record,
a marker file), so a reader never takes a missing or unfinished one for a finished one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def partial_path(target: Path) -> Path:
    """Where `target` is assembled before it is renamed into place."""
    return target.with_name(f".{target.name}.partial")


def remove(path: Path) -> None:
    """Delete a file or a directory tree; nothing to do when it is not there."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def replacing(target: Path) -> Iterator[Path]:
    """Yield the partial path of `target`, where the block creates a file (opened for writing,
    which truncates one a killed run left) or a directory (one left is removed first). When the
    block ends, the partial replaces `target`; when it fails, the partial is removed.

    An OSError without a file name (a full disk names none on `write()`) is given `target`'s,
    so that the message says what could not be written.
    """
    partial = partial_path(target)
    if partial.is_dir():  # left by a killed run (a file left so is truncated when the block opens it)
        remove(partial)
    try:
        yield partial
        if partial.is_dir() and target.exists():
            remove(target)
        os.replace(partial, target)
    except OSError as e:
        if e.filename or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror, str(target)) from e
    finally:
        remove(partial)


def write_text(target: Path, text: str) -> None:
    """Replace `target` with a file holding `text`."""
    with replacing(target) as partial:
        partial.write_text(text)
