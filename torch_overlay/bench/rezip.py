"""The naive wheel builder the custom wheel is compared with, and the check that both hold the
same content."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path


def naive_rezip(src: Path, dst: Path) -> None:
    """What a builder without raw copy does: inflate every member and deflate it again.

    Streamed member by member (zipfile's default level, like the custom wheel's new members),
    so the comparison is about CPU, not memory.
    """
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            member = zipfile.ZipInfo(info.filename, info.date_time)
            member.external_attr = info.external_attr
            member.compress_type = zipfile.ZIP_DEFLATED
            member.file_size = info.file_size  # lets zipfile pick zip64 up front for huge members
            if info.is_dir():
                zout.writestr(member, b"")
                continue
            with zin.open(info) as reader, zout.open(member, "w") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)


def same_members(a: Path, b: Path) -> bool:
    """Whether two zips hold the same members with the same content (names, CRCs, sizes)."""
    def listing(path: Path) -> list[tuple[str, int, int]]:
        with zipfile.ZipFile(path) as zf:
            return sorted((i.filename, i.CRC, i.file_size) for i in zf.infolist())
    return listing(a) == listing(b)
