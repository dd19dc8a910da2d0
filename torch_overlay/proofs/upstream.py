"""Later upstream releases: pinned wheels, fetched and verified, extracted, with their dependencies.

`overlay.toml` pins each release the tool may compare against:

    [upstream.wheels."2.10.0"]
    "cp311-cp311-manylinux_2_28_x86_64" = "<sha256 of the wheel file on PyPI>"

A release is fetched with pip like the base (`base`), hash-checked before use and extracted into
the same cache. Its own compiled dependencies (CUDA runtime libraries, triton) often differ from
the base's: `pinning.deps` installs the ones this environment lacks.
"""

from __future__ import annotations

import os
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..core import atomic
from ..core.errors import OverlayError
from ..core.project import Cache
from ..pinning import base as base_mod
from ..pinning.base import Base
from ..pinning.pin import Pin, WheelPin, load_release_pins, tag_matches_interpreter


def release_pin(pin_file: Path, version: str) -> tuple[Pin, WheelPin]:
    """The pin of an upstream release and its wheel for this interpreter, or a clear error."""
    pins = load_release_pins(pin_file)
    if version not in pins:
        known = ", ".join(sorted(pins, key=version_key)) or "none"
        raise OverlayError(
            f"torch {version} is not pinned in {pin_file.name}, as a base or under [upstream.wheels] "
            f"(pinned: {known}). "
            f'Add `[upstream.wheels."{version}"]` with the wheel tag and the sha256 PyPI lists for it.'
        )
    pin = Pin(version=version, revision="", wheels=pins[version], source_build_env={})
    for wheel in pin.wheels:
        if tag_matches_interpreter(wheel.tag):
            return pin, wheel
    return pin, pin.wheel_for_this_interpreter()  # raises, listing the pinned tags


def version_key(version: str) -> Version:
    """`version` as PEP 440 orders releases: 2.10.0rc1 before 2.10.0, 2.10.0 after 2.9.1."""
    try:
        return Version(version)
    except InvalidVersion:
        raise OverlayError(f"{version!r} is not a release version (PEP 440), e.g. 2.10.0 or 2.10.0rc1") from None


def load_release(cache: Cache, pin: Pin, wheel: WheelPin) -> Base:
    base_mod.fetch(cache, pin, wheel)
    return base_mod.load(cache, pin, wheel)


def remove_release(cache: Cache, pin: Pin, wheel: WheelPin) -> None:
    """Delete what `load_release` and `ensure_deps` put in the cache, finished or interrupted."""
    for path in (cache.extraction(wheel.sha256), cache.release_deps(wheel.sha256)):
        atomic.remove(path)
        atomic.remove(atomic.partial_path(path))
    base_mod.wheel_path(cache, pin, wheel).unlink(missing_ok=True)


def disk_usage(path: Path | None) -> int:
    """Bytes under `path`, each hard-linked inode counted once."""
    if path is None or not path.exists():
        return 0
    seen: set[int] = set()
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(root, name))
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total
