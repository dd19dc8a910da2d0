"""A base's own runtime dependencies, for running its torch from this environment.

A torch tree (a base's stock tree, its fork tree, a later release) runs with this interpreter,
chosen by PYTHONPATH. When this environment's installed torch is of another release (the 2.9.1
overlay's venv running 2.15.0's tests), that torch's compiled dependencies (CUDA runtime
libraries, triton) are not the tree's: the ones this environment does not already satisfy are
installed once with `pip install --target` into a per-wheel directory of the cache that goes on
PYTHONPATH after the tree, and backend extensions built against the installed torch (OpenReg)
are not autoloaded, since they cannot load into another release.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from ..core import atomic, log
from ..core.errors import OverlayError
from ..core.project import Cache
from .base import Base, pip_env

# Backend extensions installed in this environment (OpenReg) are built against its torch's ABI.
NO_EXTENSIONS = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def requirements(release: Base) -> list[str]:
    """The release's Requires-Dist that hold in this environment without extras: what pip installs with it."""
    metadata = (release.extracted / release.dist_info / "METADATA").read_text()
    message = email.parser.Parser().parsestr(metadata, headersonly=True)
    return [r for r in message.get_all("Requires-Dist", []) if _applies_without_extras(Requirement(r))]


def _applies_without_extras(requirement: Requirement) -> bool:
    # The marker is evaluated as pip does for a plain `torch==V`: this environment, no extra.
    return requirement.marker is None or requirement.marker.evaluate({"extra": ""})


def missing_requirements(reqs: list[str]) -> list[str]:
    """`name==version` of what pip would install so that this environment satisfies `reqs`."""
    with tempfile.TemporaryDirectory() as tmp:
        listing, report = Path(tmp) / "requirements.txt", Path(tmp) / "report.json"
        listing.write_text("\n".join(reqs) + "\n")
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--only-binary=:all:",
               "--report", str(report), "-r", str(listing)]
        # The release's own requirements, exactly: a user's constraint file has no say in them.
        if subprocess.run(cmd, stdout=sys.stderr, env=pip_env()).returncode != 0:
            raise OverlayError("pip could not resolve the release's dependencies")
        installs = json.loads(report.read_text()).get("install", [])
    return [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in installs]


def ensure_deps(cache: Cache, release: Base) -> Path | None:
    """A directory holding the release's dependencies this environment lacks (None: it lacks none)."""
    dest = cache.release_deps(release.wheel.sha256)
    if (dest / ".complete").exists():
        return dest
    needed = missing_requirements(requirements(release))
    if not needed:
        return None
    log.info(f"installing for torch {release.version}: {' '.join(needed)}")
    with atomic.replacing(dest) as partial:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-cache-dir",
               "--only-binary=:all:", "--target", str(partial), *needed]
        if subprocess.run(cmd, stdout=sys.stderr, env=pip_env()).returncode != 0:
            raise OverlayError(f"pip could not install the dependencies of torch {release.version}")
        (partial / ".complete").write_text("\n".join(needed) + "\n")
    return dest


@dataclass(frozen=True)
class Runtime:
    """What a run of a base's torch tree adds to this environment."""

    pythonpath: list[Path] = field(default_factory=list)  # after the tree
    env: dict[str, str] = field(default_factory=dict)

    @property
    def other_release(self) -> bool:
        """Whether the tree is another release than the installed torch's: the installed extensions,
        built for the installed torch, are then kept from loading (`NO_EXTENSIONS`)."""
        return NO_EXTENSIONS.items() <= self.env.items()


def installed_release() -> str | None:
    """The release of the torch installed in this environment (`2.9.1` for `2.9.1+ovl35.g...`)."""
    try:
        return Version(importlib.metadata.version("torch")).public
    except (importlib.metadata.PackageNotFoundError, InvalidVersion):
        return None


def runtime(cache: Cache, base: Base) -> Runtime:
    """Nothing when this environment's torch is `base`'s release; else its dependencies, no extensions."""
    if installed_release() == base.version:
        return Runtime()
    deps = ensure_deps(cache, base)
    return Runtime([deps] if deps else [], dict(NO_EXTENSIONS))
