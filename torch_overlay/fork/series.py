"""A base's patch series: `patches/<version>/series` lists `NNNN-slug.patch` files in `git format-patch` form."""

from __future__ import annotations

import email.header
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..core.errors import OverlayError

# A wheel-based build reuses the official compiled libraries, so a patch may only touch what
# the wheel ships as source text (Python, stubs, templates) plus new regression tests.
WHEEL_PACKAGES = ("torch", "torchgen", "functorch")
TEST_DIR = "test"
COMPILED_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp", ".yaml", ".cmake", ".S", ".mm"}
COMPILED_NAMES = {"CMakeLists.txt", "setup.py", "BUILD.bazel", "build.bzl"}


@dataclass(frozen=True)
class Patch:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name.split("-", 1)[0]

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def title(self) -> str:
        return parse_subject(self.text)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(re.findall(r"^diff --git a/(\S+) b/", self.text, flags=re.M)))

    @property
    def upstream_issues(self) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"^Fixes #(\d+)", self.text, flags=re.M))

    @property
    def test_files(self) -> tuple[str, ...]:
        return tuple(f for f in self.files if f.startswith(TEST_DIR + "/") and f.endswith(".py"))

    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def parse_subject(text: str) -> str:
    """The commit title: the (possibly folded, RFC 2047 encoded) Subject without `[PATCH ...]`."""
    match = re.search(r"^Subject: (.*(?:\n[ \t].*)*)", text, flags=re.M)
    if not match:
        return ""
    raw = re.sub(r"\n[ \t]", " ", match.group(1))
    decoded = str(email.header.make_header(email.header.decode_header(raw)))
    return re.sub(r"^\[PATCH[^\]]*\]\s*", "", decoded)


def series_file(patches_dir: Path) -> Path:
    return patches_dir / "series"


# A patch of an earlier base that this base no longer carries because the release has the fix is
# named in `series` by a comment line: `# dropped: NNNN-slug.patch (why, with the evidence)`.
_DROPPED = re.compile(r"^# dropped: (\S+\.patch) \((.*)\)$")


def read_dropped(patches_dir: Path) -> dict[str, str]:
    """The patches the series lists as dropped (file name -> why); none for a missing series."""
    listing = series_file(patches_dir)
    if not listing.exists():
        return {}
    found = (_DROPPED.match(line) for line in listing.read_text().splitlines())
    return {m.group(1): m.group(2) for m in found if m}


def series_text(names: list[str], dropped: dict[str, str]) -> str:
    """The `series` file listing `names` in order, then the dropped patches."""
    return "".join(f"{n}\n" for n in names) + "".join(f"# dropped: {n} ({why})\n" for n, why in dropped.items())


def read_series(patches_dir: Path) -> list[Patch]:
    """The patches in series order; a missing or empty series is an empty list."""
    listing = series_file(patches_dir)
    if not listing.exists():
        return []
    patches = []
    for lineno, line in enumerate(listing.read_text().splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        path = patches_dir / name
        if not re.fullmatch(r"\d{4}-[\w.+-]+\.patch", name) or not path.is_file():
            raise OverlayError(f"{listing}:{lineno}: {name!r} is not an existing NNNN-slug.patch file")
        patches.append(Patch(path))
    return patches


def series_hash(patches: list[Patch]) -> str:
    digest = hashlib.sha256()
    for patch in patches:
        digest.update(f"{patch.path.name}\0{patch.sha256()}\n".encode())
    return digest.hexdigest()


def local_tag(patches: list[Patch]) -> str:
    """The local version label that identifies a series: `ovl<count>.g<hash8>`.

    The `g` (as in `git describe`) keeps the hash a string: PEP 440 normalisation would read an
    all-digit hash as a number and drop its leading zeros (`01234567` -> `1234567`).
    """
    return f"ovl{len(patches)}.g{series_hash(patches)[:8]}"


def overlay_version(base_version: str, patches: list[Patch]) -> str:
    """The version of torch with the series applied (`2.9.1+ovl4.g0123abcd`): the tree's, the wheels'."""
    return f"{base_version}+{local_tag(patches)}"


def needs_source_build(path: str) -> bool:
    """Whether a change to `path` cannot be carried by the official wheel's compiled libraries."""
    p = PurePosixPath(path)
    if p.parts[0] == TEST_DIR:
        return False
    return p.parts[0] not in WHEEL_PACKAGES or p.suffix in COMPILED_SUFFIXES or p.name in COMPILED_NAMES


def check_wheel_buildable(patches: list[Patch]) -> None:
    for patch in patches:
        compiled = [f for f in patch.files if needs_source_build(f)]
        if compiled:
            raise OverlayError(
                f"{patch.path.name} touches {', '.join(compiled)}: these are compiled into the official "
                "wheel's libraries, so the wheel-based overlay cannot carry it. A source build is needed "
                "(scripts/build_from_source.py)."
            )
