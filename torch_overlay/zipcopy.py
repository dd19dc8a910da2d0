"""A zip writer that copies members of another zip without recompressing them.

`zipfile` can only write a member by compressing it again; for a 900 MB wheel of which a few
files change, that costs minutes. Here unchanged members are streamed as raw compressed bytes
(with their CRC and sizes), and only new content is deflated. Output depends only on the
inputs: no timestamps from the clock, members in the order they are added.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from .errors import OverlayError

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")
_LIMIT = 0xFFFFFFFF
_UTF8_FLAG = 0x800
_MADE_BY_UNIX = 3 << 8 | 20


@dataclass
class _Entry:
    name: bytes
    flags: int
    method: int
    dos_time: int
    dos_date: int
    crc: int
    compressed: int
    size: int
    external_attr: int
    offset: int


def _dos(date_time: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    year, month, day, hour, minute, second = date_time
    return hour << 11 | minute << 5 | second // 2, (year - 1980) << 9 | month << 5 | day


class RawZipWriter:
    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._entries: list[_Entry] = []

    def copy_from(self, source: zipfile.ZipFile, info: zipfile.ZipInfo, name: str | None = None) -> None:
        """Append `info` from `source` (optionally renamed) by copying its compressed bytes."""
        fp = source.fp
        assert fp is not None
        fp.seek(info.header_offset)
        header = fp.read(_LOCAL.size)
        fields = _LOCAL.unpack(header)
        if fields[0] != b"PK\x03\x04":
            raise OverlayError(f"{source.filename}: bad local header for {info.filename}")
        fp.seek(info.header_offset + _LOCAL.size + fields[9] + fields[10])
        time_, date = _dos(info.date_time)
        self._start(name or info.filename, info.compress_type, time_, date, info.CRC,
                    info.compress_size, info.file_size, info.external_attr)
        remaining = info.compress_size
        while remaining:
            chunk = fp.read(min(remaining, 1 << 20))
            if not chunk:
                raise OverlayError(f"{source.filename}: truncated member {info.filename}")
            self._out.write(chunk)
            remaining -= len(chunk)

    def write(self, name: str, data: bytes, date_time: tuple[int, int, int, int, int, int], mode: int = 0o644) -> None:
        """Append a new member, deflated."""
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        packed = compressor.compress(data) + compressor.flush()
        time_, date = _dos(date_time)
        self._start(name, zipfile.ZIP_DEFLATED, time_, date, zlib.crc32(data), len(packed), len(data),
                    (0o100000 | mode) << 16)
        self._out.write(packed)

    def _start(self, name: str, method: int, time_: int, date: int, crc: int, compressed: int, size: int,
               external_attr: int) -> _Entry:
        offset = self._out.tell()
        if max(offset, compressed, size) > _LIMIT:
            raise OverlayError(f"{name}: member or archive beyond 4 GiB needs zip64, which is not supported")
        encoded = name.encode("utf-8")
        flags = 0 if encoded.isascii() else _UTF8_FLAG
        entry = _Entry(encoded, flags, method, time_, date, crc, compressed, size, external_attr, offset)
        self._out.write(_LOCAL.pack(b"PK\x03\x04", 20, flags, method, time_, date, crc, compressed, size,
                                    len(encoded), 0))
        self._out.write(encoded)
        self._entries.append(entry)
        return entry

    def close(self) -> None:
        start = self._out.tell()
        for e in self._entries:
            self._out.write(_CENTRAL.pack(b"PK\x01\x02", _MADE_BY_UNIX, 20, e.flags, e.method, e.dos_time,
                                          e.dos_date, e.crc, e.compressed, e.size, len(e.name), 0, 0, 0, 0,
                                          e.external_attr, e.offset))
            self._out.write(e.name)
        size = self._out.tell() - start
        if len(self._entries) > 0xFFFF or start > _LIMIT:
            raise OverlayError("archive needs zip64 (too many members or too large), which is not supported")
        count = len(self._entries)
        self._out.write(_END.pack(b"PK\x05\x06", 0, 0, count, count, size, start, 0))
