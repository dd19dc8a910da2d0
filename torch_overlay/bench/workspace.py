"""Temporary project roots and caches for one bench run.

Builds run in a temporary project root (a copy of overlay.toml and patches/) inside the cache
directory, so hard links into the extraction cache work and the repository's own build/ is
never touched.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..core.project import Cache, Project
from ..fork.stock import ensure_stock_tree
from ..pinning.base import link_or_copy, load, wheel_path
from ..pinning.pin import Pin
from .worker import run_worker


@dataclass
class Workspace:
    """Temporary project roots and caches for one bench run, on the cache's filesystem."""

    project: Project
    pin: Pin
    root: Path
    _warm: Project | None = None
    _stock: Path | None = None

    @property
    def wheel_file(self) -> Path:
        return wheel_path(self.project.cache, self.pin, self.pin.wheel_for_this_interpreter())

    def new_project(self, name: str, cache: Cache | None = None) -> Project:
        """A project root holding copies of the pin and the series, and nothing built yet."""
        project = Project.at(self.root / name, cache or self.project.cache, base=self.project.base)
        project.root.mkdir(parents=True)
        shutil.copy2(self.project.pin_file, project.pin_file)
        shutil.copytree(self.project.patches_dir, project.patches_dir)  # this base's series only
        return project

    def fresh_cache(self, name: str) -> Cache:
        """A cache holding only the (hard-linked) base wheel: the next build extracts it."""
        cache = Cache(self.root / name)
        wheel = cache.wheel(self.wheel_file.name)
        wheel.parent.mkdir(parents=True)
        link_or_copy(self.wheel_file, wheel)
        return cache

    def warm_project(self) -> Project:
        """One materialised overlay tree, shared by the wheel, recompile and openreg parts."""
        if self._warm is None:
            project = self.new_project("overlay")
            run_worker("tree", root=str(project.root), cache=str(project.cache.root))
            self._warm = project
        return self._warm

    def stock_tree(self) -> Path:
        if self._stock is None:
            base = load(self.project.cache, self.pin, self.pin.wheel_for_this_interpreter())
            self._stock = ensure_stock_tree(base, self.root / "stock")
        return self._stock

    def both_trees(self) -> dict[str, Path]:
        """Stock torch and the overlay, the two sides of every compiled comparison."""
        return {"stock": self.stock_tree(), "overlay": self.warm_project().tree_dir}


@contextmanager
def workspace(project: Project, pin: Pin, parent: Path | None) -> Iterator[Workspace]:
    # The base must be fetched and extracted once up front, so that "warm" means warm.
    load(project.cache, pin, pin.wheel_for_this_interpreter())
    parent = parent or project.cache.root
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-", dir=parent))
    try:
        yield Workspace(project, pin, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
