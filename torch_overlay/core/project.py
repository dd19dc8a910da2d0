"""Where things live: the repository's layout (pin, patches, records, build outputs) and the
user cache. Every path of either is named here and nowhere else."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "TORCH_OVERLAY_CACHE"
# The checkout this tool runs from: the directory `torch_overlay` is imported from, which holds
# the C++ extensions' CMake project too.
CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Cache:
    """The user cache, outside any repository and shared by all of them. Every entry is keyed by
    the wheel's sha256, so a cached file is what its pin names or nothing:

        wheels/<wheel file>             a verified wheel (the base, or a later release)
        base/<sha256[:16]>/             its members, extracted; a manifest marks it complete
        upstream-deps/<sha256[:16]>/    a later release's own dependencies (`verify against`)
    """

    root: Path

    @classmethod
    def default(cls) -> Cache:
        """`$TORCH_OVERLAY_CACHE`, else `torch-overlay` in the XDG user cache dir."""
        if os.environ.get(CACHE_ENV):
            return cls(Path(os.environ[CACHE_ENV]).expanduser().resolve())
        xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return cls((Path(xdg) / "torch-overlay").resolve())

    def wheel(self, filename: str) -> Path:
        return self.root / "wheels" / filename

    def extraction(self, sha256: str) -> Path:
        return self.root / "base" / sha256[:16]

    def release_deps(self, sha256: str) -> Path:
        return self.root / "upstream-deps" / sha256[:16]


@dataclass(frozen=True)
class Project:
    root: Path
    cache: Cache

    @classmethod
    def at(cls, root: Path, cache: Cache | None = None) -> Project:
        return cls(root=root.resolve(), cache=cache or Cache.default())

    @classmethod
    def discover(cls, start: Path | None = None) -> Project:
        """The repository containing `start` (default: this tool's checkout)."""
        here = (start or CHECKOUT).resolve()
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
    def test_dir(self) -> Path:
        """The project's test suites (`test/run_test.py` runs them)."""
        return self.root / "test"

    @property
    def openreg_build_dir(self) -> Path:
        """OpenReg's CMake build and the staged `torch_openreg` package."""
        return self.build_dir / "openreg"

    @property
    def verify_dir(self) -> Path:
        """The stock trees and logs of `verify patches` and `verify against`."""
        return self.build_dir / "verify"

    @property
    def gate_dir(self) -> Path:
        """The differential gate's stock tree and logs."""
        return self.build_dir / "regressions"

    @property
    def export_scratch_dir(self) -> Path:
        """Where `export` writes the series before it replaces `patches/` (a fixed name: a killed
        export's is reused)."""
        return self.build_dir / "export.partial"

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
