"""The pins (`overlay.toml`): for each base (`[bases."VERSION"]`) its upstream revision and the
sha256 of each wheel file, and the wheels of the later releases the tool may compare against
(`[upstream.wheels."VERSION"]`). This module is the one that interprets them
(`core.project` parses the file and knows which base is the default).

Which pinned wheel fits an interpreter is decided by `packaging.tags`, the same rules pip uses:
the interpreter's supported tags are tried from most to least specific, so e.g. a macOS arm64
CPython 3.12 takes `cp312-none-macosx_11_0_arm64` (torch's macOS files carry the `none` ABI tag)
and a free-threaded 3.13 takes `cp313-cp313t-...`, never the other build.
"""

from __future__ import annotations

import platform
import re
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..core.errors import OverlayError
from ..core.project import read_pin_file


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

    def wheel_for_tags(self, supported: Iterable[str]) -> WheelPin | None:
        """The pinned wheel that comes first in `supported` (most preferred tag first)."""
        by_tag = {tag: wheel for wheel in self.wheels for tag in expand_tag(wheel.tag)}
        return next((by_tag[tag] for tag in supported if tag in by_tag), None)

    def wheel_for_this_interpreter(self) -> WheelPin:
        wheel = self.wheel_for_tags(interpreter_tags())
        if wheel is None:
            raise OverlayError(
                f"no pinned torch {self.version} wheel runs on this interpreter ({describe_interpreter()}); "
                f"{self._supported()}. Use a matching interpreter, or add the wheel's tag and sha256 to overlay.toml."
            )
        return wheel

    def _supported(self) -> str:
        return "supported wheel tags: " + ", ".join(w.tag for w in self.wheels)


def load_pin(path: Path, version: str) -> Pin:
    """The pin of base `version` (`[bases."VERSION"]`)."""
    data = read_pin_file(path)
    bases = data.get("bases", {})
    if not isinstance(bases, dict) or version not in bases:
        known = ", ".join(bases) if isinstance(bases, dict) else "none"
        raise OverlayError(f'{path}: torch {version} is not a base (no [bases."{version}"]; bases: {known or "none"})')
    try:
        base = bases[version]
        pin = Pin(
            version=version,
            revision=base["revision"],
            wheels=parse_wheels(base["wheels"], f'{path} [bases."{version}".wheels]'),
            source_build_env={k: str(v) for k, v in data.get("source-build", {}).items()},
        )
    except (KeyError, AttributeError, TypeError) as e:
        raise OverlayError(f'{path}: [bases."{version}"] is not a valid pin ({e!r})') from e
    return pin


def base_versions(path: Path) -> tuple[str, ...]:
    """Every base the pin file pins, in its order."""
    bases = read_pin_file(path).get("bases", {})
    return tuple(bases) if isinstance(bases, dict) else ()


def load_release_pins(path: Path) -> dict[str, tuple[WheelPin, ...]]:
    """The pinned wheels of each later release, by version: every base's and `[upstream.wheels]`'s."""
    data = read_pin_file(path)
    try:
        table = dict(data.get("upstream", {}).get("wheels", {}))
        table.update({v: base["wheels"] for v, base in data.get("bases", {}).items()})
        return {v: parse_wheels(tags, f'{path} wheels of "{v}"') for v, tags in table.items()}
    except (AttributeError, KeyError, TypeError) as e:
        raise OverlayError(f"{path}: invalid [upstream.wheels] or [bases] table ({e!r})") from e


def parse_wheels(table: dict[str, str], where: str) -> tuple[WheelPin, ...]:
    """A `"tag" = "sha256"` table of the pin file, every tag and hash checked to be one."""
    wheels = tuple(WheelPin(tag, sha.lower()) for tag, sha in table.items())
    for wheel in wheels:
        if not re.fullmatch(r"[0-9a-f]{64}", wheel.sha256):
            raise OverlayError(f"{where}: sha256 of {wheel.tag} is not 64 hex digits")
        # Its shape only: reading a pin needs no `packaging` (scripts/build_from_source.py runs on a
        # bare interpreter); `expand_tag` parses the tag with packaging where one is chosen.
        if not re.fullmatch(r"[\w.]+-[\w.]+-[\w.]+", wheel.tag):
            raise OverlayError(f"{where}: {wheel.tag!r} is not a wheel tag (python-abi-platform)")
    return wheels


def _tags_module() -> ModuleType:
    try:
        from packaging import tags
    except ImportError as e:
        raise OverlayError(
            "torch_overlay needs the `packaging` module to choose a wheel: pip install -r test/requirements.txt"
        ) from e
    return tags


def expand_tag(tag: str) -> list[str]:
    """A (possibly compressed, `cp311.cp312-...`) wheel tag as the plain tags it stands for."""
    return [str(t) for t in _tags_module().parse_tag(tag)]


def interpreter_tags() -> list[str]:
    """The wheel tags this interpreter accepts, most preferred first (pip's order)."""
    return [str(t) for t in _tags_module().sys_tags()]


def tag_matches_interpreter(tag: str) -> bool:
    """Whether a wheel with this tag can be installed for the running interpreter."""
    return not set(expand_tag(tag)).isdisjoint(interpreter_tags())


def describe_interpreter() -> str:
    threading = " free-threaded" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return (f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor}{threading}, "
            f"{platform.system()} {platform.machine()}")
