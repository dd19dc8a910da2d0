"""The editable install (PEP 660): torch's own metadata, and a `.pth` that puts the tree on sys.path.

The wheel `build_editable` hands to the front-end holds no code: the base wheel's dist-info
(METADATA under the overlay version, WHEEL, entry points, licences: so the same Requires-Dist,
extras and console scripts as the official wheel and the custom one) and one `.pth` file naming
`build/tree`, so an edit in the tree is live at the next `import torch`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..core import atomic
from ..fork.series import Patch, overlay_version
from ..pinning.base import Base
from .wheel import record_hash, set_metadata_version

# Fixed member timestamp: the same inputs give the same bytes.
STAMP = (2025, 11, 12, 0, 0, 0)


def dist_info_files(base: Base, version: str) -> dict[str, bytes]:
    """The base wheel's dist-info, renamed for `version`, without RECORD (written anew)."""
    source = base.extracted / base.dist_info
    target = f"torch-{version}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        relative = path.relative_to(source).as_posix()
        if relative == "RECORD":
            continue
        data = path.read_bytes()
        files[f"{target}/{relative}"] = set_metadata_version(data, version) if relative == "METADATA" else data
    return files


def write_wheel(path: Path, files: dict[str, bytes]) -> None:
    """A wheel of `files` (dist-info last, RECORD listing every member), written atomically."""
    dist_info = next(name.split("/", 1)[0] for name in files if name.split("/", 1)[0].endswith(".dist-info"))
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    members = dict(files, **{f"{dist_info}/RECORD": (record + f"{dist_info}/RECORD,,\n").encode()})
    with atomic.replacing(path) as partial, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, STAMP)
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)


def build_editable_wheel(base: Base, patches: list[Patch], tree: Path, out_dir: Path) -> Path:
    version = overlay_version(base.version, patches)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / base.wheel.filename(version)
    pth = {f"__editable__.torch-{version}.pth": f"{tree.resolve()}\n".encode()}
    write_wheel(target, {**pth, **dist_info_files(base, version)})
    return target
