"""Stock trees: an unpatched torch release as an importable directory, made of hard links.

A stock tree holds the release's `torch/`, `torchgen/` and `functorch/` exactly as its wheel
ships them, every file a hard link into the extraction cache: building one costs inodes, not
gigabytes, and needs no download and no second virtual environment (`PYTHONPATH=<stock tree>`
selects it). Nothing ever writes into a linked file; Python's bytecode goes to new files in
the tree's own `__pycache__` directories. The only files of its own are the regression tests
placed under `test/` for one patch at a time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core import atomic
from ..core.progress import Progress
from ..pinning.base import Base, link_or_copy
from .series import TEST_DIR
from .tree import package_files

COMPLETE = ".stock-complete"  # holds the wheel's sha256; a tree without it is unfinished


def ensure_stock_tree(base: Base, dest: Path) -> Path:
    """`dest` as a stock tree of `base`; reused when a finished one for the same wheel is there."""
    marker = dest / COMPLETE
    if marker.exists() and marker.read_text() == base.wheel.sha256:
        return dest
    files = package_files(base)
    progress = Progress(f"linking stock torch {base.version}", total=len(files), unit="files")
    with atomic.replacing(dest) as partial:
        for name in files:
            out = partial / name
            out.parent.mkdir(parents=True, exist_ok=True)
            link_or_copy(base.extracted / name, out)
            progress.advance(1)
        progress.done()
        (partial / COMPLETE).write_text(base.wheel.sha256)
    return dest


@contextmanager
def stock_tree(base: Base, work: Path, *, keep: bool) -> Iterator[Path]:
    """A stock tree of `base` in `work` (named for its version, so one is reused), holding no
    test, for the block; removed afterwards, also after an error or an interruption, unless
    `keep` (then only the tests placed in it go)."""
    tree = ensure_stock_tree(base, work / f"stock-{base.version}")
    clear_tests(tree)
    try:
        yield tree
    finally:
        if keep:
            clear_tests(tree)
        else:
            remove(tree)


def place_tests(stock: Path, source_root: Path, test_files: tuple[str, ...]) -> None:
    """Make `stock/test/` hold exactly `test_files`, copied from `source_root` (the overlay tree)."""
    clear_tests(stock)
    for name in test_files:
        out = stock / name
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_root / name, out)  # a copy: the tests are small, the tree is editable


def clear_tests(stock: Path) -> None:
    shutil.rmtree(stock / TEST_DIR, ignore_errors=True)


def remove(path: Path) -> None:
    """Delete a stock tree; unlinking leaves the cache's files untouched."""
    atomic.remove(path)
    atomic.remove(atomic.partial_path(path))
