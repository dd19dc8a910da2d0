"""The repository's PEP 517 / PEP 660 build backend (`pyproject.toml`: `backend-path = ["."]`).

Every front-end (pip, build, uv) gets what the command line makes, from the same code:

* `build_wheel`: the custom wheel, byte-identical to `python -m torch_overlay wheel`'s;
* `build_editable`: the base's dist-info under the overlay version plus a `.pth` to the base's
  fork tree (`build/<version>/tree`);
* `build_sdist`: the pin, the series and this tool, which is all `build_wheel` needs.

Which base is built: the `base` config setting (`pip install . --config-settings base=2.15.0`,
`python -m build -C base=2.15.0`), else `$TORCH_OVERLAY_BASE`, else overlay.toml's
`default-base`. An sdist carries its base's series and names that base as its default.

The hooks run in the project directory. Front-ends capture a backend's output and show it only
on failure, so the long steps (fetching and extracting the 900 MB base wheel) report to the
controlling terminal when there is one; an `OverlayError` ends the hook with its message alone.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import re
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core import atomic
from ..core.errors import OverlayError
from ..core.project import PIN_FILE, Project
from ..fork.series import overlay_version, read_series, series_file
from ..fork.tree import materialise
from ..pinning.base import Base, load
from ..pinning.pin import Pin, load_pin
from .editable import build_editable_wheel
from .wheel import build_wheel as build_custom_wheel

# What an sdist carries: enough to run build_wheel anywhere (the base wheel is fetched by pin).
SDIST_FILES = ("pyproject.toml", "overlay.toml", "README.md")
SDIST_TOOL = "torch_overlay"
# The config setting naming the base to build (`-C base=2.15.0`).
BASE_SETTING = "base"
# sdist members get this mtime (2025-11-12, the base commit's date): same inputs, same bytes.
SDIST_MTIME = 1762905600


@contextlib.contextmanager
def _progress_to_terminal() -> Iterator[None]:
    """Send stderr (progress lines, pip's download) to the terminal while a hook runs."""
    if sys.stderr.isatty():
        yield
        return
    try:
        terminal = open("/dev/tty", "w")  # noqa: SIM115 (closed below)
    except OSError:  # no controlling terminal (CI): the front-end's log gets the lines
        yield
        return
    with terminal, contextlib.redirect_stderr(terminal):
        print(file=terminal)  # off the front-end's spinner line
        yield


@contextlib.contextmanager
def frontend_hook() -> Iterator[None]:
    """Around a hook's body: progress to the terminal, an OverlayError as `error: <message>`."""
    try:
        with _progress_to_terminal():
            yield
    except OverlayError as e:
        raise SystemExit(f"error: {e}") from None


def prepare_tree(project: Project) -> tuple[Pin, Base]:
    """The pin, and the base for this interpreter with the tree brought up to date."""
    pin = load_pin(project.pin_file, project.base)
    base = load(project.cache, pin, pin.wheel_for_this_interpreter())
    materialise(project, base)
    return pin, base


def project_for(config_settings: dict[str, Any] | None) -> Project:
    """The project in the current directory, seen through the base the front-end asked for."""
    base = (config_settings or {}).get(BASE_SETTING)
    if base is not None and not isinstance(base, str):
        raise OverlayError(f"--config-settings {BASE_SETTING}=VERSION takes one version, got {base!r}")
    return Project.at(Path.cwd(), base=base)


# The PEP 517/660 hooks below read alike on purpose (a front-end calls each on its own: each
# prepares the tree, then builds its artifact); `duplicates` lists them as a same-shape pair.
def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    with frontend_hook():
        project = project_for(config_settings)
        pin, base = prepare_tree(project)
        patches = read_series(project.patches_dir)
        wheel = build_custom_wheel(pin, base, project.cache, project.tree_dir, patches, Path(wheel_directory))
        return wheel.name


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    with frontend_hook():
        project = project_for(config_settings)
        _, base = prepare_tree(project)
        patches = read_series(project.patches_dir)
        return build_editable_wheel(base, patches, project.tree_dir, Path(wheel_directory)).name


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    with frontend_hook():
        project = project_for(config_settings)
        pin = load_pin(project.pin_file, project.base)
        version = overlay_version(pin.version, read_series(project.patches_dir))
        target = Path(sdist_directory) / f"torch-{version}.tar.gz"
        write_sdist(project, version, target)
        return target.name


def sdist_members(project: Project, version: str) -> dict[str, bytes]:
    """Relative path -> content of every file the sdist holds, PKG-INFO first."""
    root = project.root
    patches = read_series(project.patches_dir)
    members = {"PKG-INFO": _pkg_info(version)}
    for name in SDIST_FILES:
        if not (root / name).is_file():
            raise OverlayError(f"{root / name} is missing; an sdist without it could not build the wheel")
        members[name] = (root / name).read_bytes()
    members[PIN_FILE] = with_default_base(members[PIN_FILE], project.base)
    listing = series_file(project.patches_dir)
    members[listing.relative_to(root).as_posix()] = listing.read_bytes()
    for patch in patches:
        members[patch.path.relative_to(root).as_posix()] = patch.path.read_bytes()
    for source in sorted((root / SDIST_TOOL).rglob("*.py")):
        members[source.relative_to(root).as_posix()] = source.read_bytes()
    return members


def with_default_base(pin_file: bytes, base: str) -> bytes:
    """The pin file naming `base` as its default: the sdist builds the base it was made from."""
    text, count = re.subn(r'^default-base = ".*"$', f'default-base = "{base}"', pin_file.decode(), count=1,
                          flags=re.M)
    if not count:
        raise OverlayError(f"{PIN_FILE} has no `default-base = \"VERSION\"` line to name the sdist's base")
    return text.encode()


def _pkg_info(version: str) -> bytes:
    # Metadata 2.1: nothing in an sdist's PKG-INFO is binding. The wheel built from it carries
    # the official wheel's METADATA (dependencies, Requires-Python) under this version.
    return (
        "Metadata-Version: 2.1\nName: torch\n"
        f"Version: {version}\n"
        "Summary: the official torch wheel with this overlay's patches (built from the pinned wheel)\n"
    ).encode()


def write_sdist(project: Project, version: str, target: Path) -> None:
    prefix = f"torch-{version}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sdist_members(project, version).items():
            info = tarfile.TarInfo(f"{prefix}/{name}")
            info.size, info.mtime, info.mode = len(data), SDIST_MTIME, 0o644
            tar.addfile(info, io.BytesIO(data))
    target.parent.mkdir(parents=True, exist_ok=True)
    with (atomic.replacing(target) as partial, partial.open("wb") as raw,
          gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=SDIST_MTIME) as gz):
        gz.write(buffer.getvalue())
