"""The pin (`overlay.toml`): base version, upstream revision and the sha256 of each wheel."""

from __future__ import annotations

import os
import platform
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import OverlayError


@dataclass(frozen=True)
class WheelPin:
    tag: str  # e.g. cp311-cp311-manylinux_2_28_x86_64
    sha256: str

    def filename(self, version: str) -> str:
        return f"torch-{version}-{self.tag}.whl"


@dataclass(frozen=True)
class Pin:
    version: str
    revision: str
    wheels: tuple[WheelPin, ...]
    source_build_env: dict[str, str]

    def wheel_for_tag(self, tag: str) -> WheelPin:
        for wheel in self.wheels:
            if wheel.tag == tag:
                return wheel
        raise OverlayError(f"no pinned torch {self.version} wheel for tag {tag}; {self._supported()}")

    def wheel_for_this_interpreter(self) -> WheelPin:
        for wheel in self.wheels:
            if tag_matches_interpreter(wheel.tag):
                return wheel
        raise OverlayError(
            f"no pinned torch {self.version} wheel runs on this interpreter "
            f"(Python {sys.version_info.major}.{sys.version_info.minor}, "
            f"{platform.system()} {platform.machine()}); {self._supported()}. "
            "Use a matching interpreter, or add the wheel's tag and sha256 to overlay.toml."
        )

    def _supported(self) -> str:
        return "supported wheel tags: " + ", ".join(w.tag for w in self.wheels)


def load_pin(path: Path) -> Pin:
    try:
        data = tomllib.loads(path.read_text())
        base = data["base"]
        wheels = parse_wheels(base["wheels"], f"{path} [base.wheels]")
        pin = Pin(
            version=base["version"],
            revision=base["revision"],
            wheels=wheels,
            source_build_env={k: str(v) for k, v in data.get("source-build", {}).items()},
        )
    except (OSError, tomllib.TOMLDecodeError, KeyError, AttributeError) as e:
        raise OverlayError(f"{path}: not a valid pin file ({e!r})") from e
    return pin


def parse_wheels(table: dict[str, str], where: str) -> tuple[WheelPin, ...]:
    """A `"tag" = "sha256"` table of the pin file, every hash checked to be one."""
    wheels = tuple(WheelPin(tag, sha.lower()) for tag, sha in table.items())
    for wheel in wheels:
        if not re.fullmatch(r"[0-9a-f]{64}", wheel.sha256):
            raise OverlayError(f"{where}: sha256 of {wheel.tag} is not 64 hex digits")
    return wheels


def _glibc_version() -> tuple[int, int] | None:
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def tag_matches_interpreter(tag: str) -> bool:
    """Whether a `cpXY-cpXY-manylinux_A_B_arch` wheel tag can run here (the only kind pinned)."""
    match = re.fullmatch(r"cp(\d)(\d+)-cp\1\2-manylinux_(\d+)_(\d+)_(\w+)", tag)
    if not match or sys.implementation.name != "cpython":
        return False
    major, minor, glibc_major, glibc_minor, arch = match.groups()
    glibc = _glibc_version()
    return (
        (int(major), int(minor)) == sys.version_info[:2]
        and sys.platform == "linux"
        and platform.machine() == arch
        and glibc is not None
        and glibc >= (int(glibc_major), int(glibc_minor))
    )
