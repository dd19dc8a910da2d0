"""Where things live: the repository's layout (pin, patches, records, build outputs) and the
user cache. Every path of either is named here and nowhere else.

A project carries one series per base (an official torch release it patches): `overlay.toml`
pins every base, `patches/<version>/` holds each base's series, and `build/<version>/` each
base's outputs. A `Project` is the repository seen through one base: `TORCH_OVERLAY_BASE` (or
the command line's `--base`) chooses it, else `overlay.toml`'s `default-base`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import OverlayError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (a build requirement of the backend)
    import tomli as tomllib

CACHE_ENV = "TORCH_OVERLAY_CACHE"
BASE_ENV = "TORCH_OVERLAY_BASE"
PIN_FILE = "overlay.toml"
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


def read_pin_file(path: Path) -> dict[str, Any]:
    """`overlay.toml`, parsed; anything unreadable is one line naming the file."""
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise OverlayError(f"{path}: not a valid pin file ({e!r})") from e


def choose_base(pin_file: Path, requested: str | None = None) -> str:
    """The base a command works on: `requested` (`--base`), else `$TORCH_OVERLAY_BASE`, else the
    pin file's `default-base`. Whether it is pinned is checked where its pin is read."""
    return requested or os.environ.get(BASE_ENV) or default_base(pin_file)


def default_base(pin_file: Path) -> str:
    """The pin file's `default-base`: what users install and what the README's tables are about."""
    default = read_pin_file(pin_file).get("default-base") if pin_file.exists() else None
    if not isinstance(default, str):
        raise OverlayError(f"{pin_file}: no `default-base = \"VERSION\"`; name a base with --base or {BASE_ENV}")
    return default


@dataclass(frozen=True)
class Project:
    root: Path
    cache: Cache
    base: str  # the version of the base this project is seen through, e.g. "2.9.1"

    @classmethod
    def at(cls, root: Path, cache: Cache | None = None, base: str | None = None) -> Project:
        root = root.resolve()
        return cls(root=root, cache=cache or Cache.default(), base=choose_base(root / PIN_FILE, base))

    @classmethod
    def discover(cls, start: Path | None = None) -> Project:
        """The repository containing `start` (default: this tool's checkout)."""
        here = (start or CHECKOUT).resolve()
        for candidate in (here, *here.parents):
            if (candidate / PIN_FILE).is_file():
                return cls.at(candidate)
        raise FileNotFoundError(f"no {PIN_FILE} above {here}")

    def with_base(self, base: str) -> Project:
        """The same repository and cache seen through another base."""
        return Project(self.root, self.cache, base)

    # The layout of a project, one path per property (`duplicates` lists these alike-shaped
    # properties as a pair; each names a different place).
    @property
    def pin_file(self) -> Path:
        """Every base's pin (and the later releases `verify against` compares with)."""
        return self.root / PIN_FILE

    @property
    def patches_dir(self) -> Path:
        """This base's series (`patches/<version>/`): `series`, the patch files and their notes."""
        return self.root / "patches" / self.base

    @property
    def build_dir(self) -> Path:
        """This base's outputs (git-ignored): its fork tree, OpenReg's build, verify and gate logs."""
        return self.root / "build" / self.base

    @property
    def tree_dir(self) -> Path:
        return self.build_dir / "tree"

    @property
    def test_dir(self) -> Path:
        """The project's test suites (`test/run_test.py` runs them)."""
        return self.root / "test"

    @property
    def catalogue_dir(self) -> Path:
        """Upstream's silent-correctness reports, one repro each (`verify catalogue` runs them)."""
        return self.test_dir / "catalogue"

    @property
    def openreg_build_dir(self) -> Path:
        """OpenReg's CMake build and the staged `torch_openreg` package."""
        return self.build_dir / "openreg"

    @property
    def stock_openreg_build_dir(self) -> Path:
        """OpenReg built against this release's stock tree (`verify against` runs its tests there)."""
        return self.build_dir / "openreg-stock"

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
