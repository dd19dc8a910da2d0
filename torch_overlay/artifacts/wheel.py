"""The custom wheel: the base wheel with the tree's patched files and a new dist-info.

Every member the series does not touch is copied as raw compressed bytes (`zipcopy`), so the
result is byte-identical to the base there and the build takes seconds. Patched and added
files are deflated anew; the dist-info is renamed for the overlay version, METADATA gets the new
version and RECORD is rewritten with the sha256 and size of every member. The same inputs
always give the same bytes.
"""

from __future__ import annotations

import base64
import csv
import email.parser
import email.policy
import hashlib
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..core import atomic, git
from ..core.errors import OverlayError
from ..core.fault import fault_point
from ..core.progress import Progress
from ..core.project import Cache
from ..core.zipcopy import RawZipWriter
from ..fork.series import WHEEL_PACKAGES, Patch, overlay_version
from ..fork.tree import VERSION_PY, TreeRecord, is_fresh, require_committed
from ..pinning.base import Base, fetch
from ..pinning.pin import Pin


@dataclass
class TreeChanges:
    """What the series changed in the wheel's packages, relative to the base commit."""

    modified: dict[str, bytes] = field(default_factory=dict)
    added: dict[str, bytes] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)


def tree_changes(tree: Path, record: TreeRecord) -> TreeChanges:
    listing = git.out(tree, "diff", "--name-status", "--no-renames", "-z", record.base_commit, "HEAD",
                      "--", *WHEEL_PACKAGES)
    fields = listing.split("\0")
    changes = TreeChanges()
    for status, path in zip(fields[0::2], fields[1::2], strict=False):  # the NUL ending -z's list pairs nothing
        if status == "D":
            changes.deleted.add(path)
        else:
            target = changes.added if status == "A" else changes.modified
            target[path] = (tree / path).read_bytes()
    changes.modified[VERSION_PY] = (tree / VERSION_PY).read_bytes()  # generated, never tracked
    return changes


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


# METADATA is an email-style header block (core metadata spec). compat32 with no line limit
# writes every other field and the description back byte for byte: no refolding, no re-encoding.
_METADATA_POLICY = email.policy.compat32.clone(max_line_length=0)


def set_metadata_version(metadata: bytes, version: str) -> bytes:
    """`metadata` (a METADATA file) with its Version field set to `version`, all else unchanged."""
    message = email.parser.BytesParser(policy=_METADATA_POLICY).parsebytes(metadata)
    try:
        message.replace_header("Version", version)
    except KeyError:
        raise OverlayError("base METADATA has no Version field") from None
    return message.as_bytes()


def build_wheel(pin: Pin, base: Base, cache: Cache, tree: Path, patches: list[Patch], out_dir: Path) -> Path:
    """Write the custom wheel into `out_dir`; the tree must be fresh and clean."""
    record = TreeRecord.read(tree) if (tree / ".git").exists() else None
    if not is_fresh(record, base, patches):
        raise OverlayError(f"{tree} does not match patches/; run `python -m torch_overlay tree` first")
    assert record is not None
    require_committed(tree, record, "then export and build the wheel again")
    if git.out(tree, "rev-parse", "HEAD") != record.head:
        raise OverlayError(f"{tree}'s HEAD is not what patches/ holds; export it (or run `tree --force`) first")
    fetch(cache, pin, base.wheel)  # the wheel itself is read: verify it (again) first
    version = overlay_version(base.version, patches)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / base.wheel.filename(version)
    with atomic.replacing(target) as partial, partial.open("wb") as out:
        _write(base, tree_changes(tree, record), version, out)
    return target


def _write(base: Base, changes: TreeChanges, version: str, out: io.BufferedWriter) -> None:
    out_path = Path(out.name)
    old_info, new_info = base.dist_info, f"torch-{version}.dist-info"
    writer = RawZipWriter(out)
    # `zipfile` reads the central directory and the members that change; `raw` feeds the copies.
    with zipfile.ZipFile(base.wheel_path) as src, base.wheel_path.open("rb") as raw:
        hashes = _base_record(src, old_info)
        infos = src.infolist()
        progress = Progress("writing wheel", total=sum(i.compress_size for i in infos))
        rows: list[tuple[str, str, str]] = []
        dist_infos = [i for i in infos if i.filename.startswith(old_info + "/")]
        for info in (i for i in infos if not i.filename.startswith(old_info + "/")):
            name = info.filename
            if name in changes.deleted:
                pass
            elif name in changes.modified:
                data = changes.modified[name]
                writer.write(name, data, info.date_time, (info.external_attr >> 16) & 0o777 or 0o644)
                rows.append((name, record_hash(data), str(len(data))))
            else:
                writer.copy_from(raw, info)
                if not info.is_dir():
                    rows.append((name, *_known_hash(src, info, hashes)))
            progress.advance(info.compress_size)
            fault_point("wheel", out_path)
        stamp = src.getinfo(f"{old_info}/METADATA").date_time
        for name, data in sorted(changes.added.items()):
            writer.write(name, data, stamp)
            rows.append((name, record_hash(data), str(len(data))))
        for info in dist_infos:
            name = new_info + info.filename[len(old_info):]
            if info.filename == f"{old_info}/RECORD":
                continue
            if info.filename == f"{old_info}/METADATA":
                data = set_metadata_version(src.read(info), version)
                writer.write(name, data, info.date_time)
                rows.append((name, record_hash(data), str(len(data))))
            else:
                writer.copy_from(raw, info, name)
                if not info.is_dir():
                    rows.append((name, *_known_hash(src, info, hashes)))
            progress.advance(info.compress_size)
        rows.append((f"{new_info}/RECORD", "", ""))
        writer.write(f"{new_info}/RECORD", _format_record(rows), stamp)
        writer.close()
        progress.done()


def _base_record(src: zipfile.ZipFile, dist_info: str) -> dict[str, tuple[str, str]]:
    reader = csv.reader(io.StringIO(src.read(f"{dist_info}/RECORD").decode()))
    return {row[0]: (row[1], row[2]) for row in reader if row}


def _known_hash(src: zipfile.ZipFile, info: zipfile.ZipInfo, hashes: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """A copied member's RECORD hash and size: the base's, or computed if its RECORD omits it."""
    if info.filename in hashes and hashes[info.filename][0]:
        return hashes[info.filename]
    data = src.read(info)
    return record_hash(data), str(len(data))


def _format_record(rows: list[tuple[str, str, str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode()
