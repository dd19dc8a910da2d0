"""Where things live: the repository's pin, patches and build directory, and the user cache."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "TORCH_OVERLAY_CACHE"


def default_cache_dir() -> Path:
    """The base-wheel cache: `$TORCH_OVERLAY_CACHE`, else the XDG user cache dir."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "torch-overlay"


@dataclass(frozen=True)
class Project:
    root: Path
    cache_dir: Path

    @classmethod
    def at(cls, root: Path, cache_dir: Path | None = None) -> Project:
        return cls(root=root.resolve(), cache_dir=(cache_dir or default_cache_dir()).resolve())

    @classmethod
    def discover(cls, start: Path | None = None) -> Project:
        """The repository containing `start` (default: this package's checkout)."""
        here = (start or Path(__file__).parent).resolve()
        for candidate in (here, *here.parents):
            if (candidate / "overlay.toml").is_file():
                return cls.at(candidate)
        raise FileNotFoundError(f"no overlay.toml above {here}")

    # The layout of a project, one path per property (`duplicates` lists these alike-shaped
    # properties as a pair; each names a different place).
    @property
    def pin_file(self) -> Path:
        return self.root / "overlay.toml"

    @property
    def patches_dir(self) -> Path:
        return self.root / "patches"

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    @property
    def tree_dir(self) -> Path:
        return self.build_dir / "tree"

    @property
    def records_dir(self) -> Path:
        """The measured records the README's tables are rendered from (committed)."""
        return self.root / "benchmarks"

    @property
    def gate_record_file(self) -> Path:
        """The differential gate's verdicts, by tier and part (`verify gate --record`)."""
        return self.records_dir / "regressions.json"

    @property
    def case_times_file(self) -> Path:
        """Each differential corpus case's recorded duration, by part: what gate shards are sized by."""
        return self.records_dir / "regressions-times.json"

    @property
    def drift_record_file(self) -> Path:
        """Each later release's drift verdicts (`verify against V --record`)."""
        return self.records_dir / "drift.json"
