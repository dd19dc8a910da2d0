"""PEP 517 / PEP 660 hooks of the `torch_openreg` distribution (OpenReg, the PrivateUse1 test backend).

OpenReg is a distribution of its own, never part of the torch wheel: `test/requirements.txt`
installs it editable, so the README's set-up command makes `import torch_openreg` work and
registers it under the `torch.backends` entry-point group, which `import torch` autoloads
(`TORCH_DEVICE_BACKEND_AUTOLOAD=0` turns that off). It is compiled against the repository's
fork tree (brought up to date first, as the torch backend does), in `build/openreg`: the same
persistent build directory `test/run_test.py` uses, so a re-install or a test run after a
source change recompiles only what changed.
"""

from __future__ import annotations

import contextlib
import sys
import sysconfig
from pathlib import Path
from typing import Any

from ..core.errors import OverlayError
from ..core.project import Project
from .build_backend import frontend_hook, prepare_tree
from .editable import write_wheel
from .openreg import LIBRARY_NAME, PACKAGE_NAME, OpenRegBuildError, build_openreg

NAME = "torch_openreg"
VERSION = "0.0.1"  # upstream's version of OpenReg
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = (
    f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
    "Summary: OpenReg, PyTorch's reference PrivateUse1 backend, built for this overlay's tests\n"
    "Requires-Python: >=3.10\n"
)
# `import torch` loads the torch.backends entry point (importing the package registers the
# device); torch.compile(backend="openreg") finds the compile backend through the second group.
ENTRY_POINTS = (
    f"[torch.backends]\n{NAME} = {NAME}:_autoload\n\n"
    f"[torch_dynamo_backends]\nopenreg = {NAME}.compiler:openreg_backend\n"
)
WHEEL = "Wheel-Version: 1.0\nGenerator: torch_overlay.artifacts.openreg_backend\nRoot-Is-Purelib: false\nTag: {tag}\n"


def _dist_info(tag: str) -> dict[str, bytes]:
    return {
        f"{DIST_INFO}/METADATA": METADATA.encode(),
        f"{DIST_INFO}/entry_points.txt": ENTRY_POINTS.encode(),
        f"{DIST_INFO}/WHEEL": WHEEL.format(tag=tag).encode(),
    }


def _prepare_metadata(metadata_directory: str) -> str:
    for name, data in _dist_info("py3-none-any").items():
        path = Path(metadata_directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return DIST_INFO


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: dict[str, Any] | None = None) -> str:
    return _prepare_metadata(metadata_directory)


def _build() -> Path:
    """Compile OpenReg against the fork tree; returns the staging dir holding the package."""
    project = Project.discover(Path.cwd())
    prepare_tree(project)
    try:
        # The compile (~20 s cold) shows its progress wherever the hook's stderr goes: the terminal.
        with contextlib.redirect_stdout(sys.stderr):
            return build_openreg(project.tree_dir / "torch", project.openreg_build_dir)
    except OpenRegBuildError as e:
        raise OverlayError(str(e)) from e


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """A `.pth` to the staging dir: its sources are symlinks, so Python edits are live."""
    with frontend_hook():
        staging = _build()
        target = Path(wheel_directory) / f"{NAME}-{VERSION}-py3-none-any.whl"
        pth = {f"__editable__.{NAME}-{VERSION}.pth": f"{staging}\n".encode()}
        write_wheel(target, {**pth, **_dist_info("py3-none-any")})
        return target.name


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    """The package with its compiled libraries (symlinked sources resolved): any CPython here."""
    with frontend_hook():
        package = _build() / PACKAGE_NAME
        files = {
            f"{PACKAGE_NAME}/{path.relative_to(package).as_posix()}": path.read_bytes()
            for path in sorted(package.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
        }
        if f"{PACKAGE_NAME}/lib/{LIBRARY_NAME}" not in files:
            raise OverlayError(f"{package / 'lib' / LIBRARY_NAME} is missing after the build")
        tag = f"py3-none-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
        target = Path(wheel_directory) / f"{NAME}-{VERSION}-{tag}.whl"
        write_wheel(target, {**files, **_dist_info(tag)})
        return target.name

