"""A zip writer that copies members of another zip without recompressing them.

`zipfile` can only write a member by compressing it again; for a 900 MB wheel of which a few
files change, that costs minutes. Here unchanged members are streamed as raw compressed bytes
(with their CRC and sizes), and only new content is deflated. Output depends only on the
inputs: no timestamps from the clock, members in the order they are added.

Members and archives past 4 GiB (or 65535 members) get zip64 records, as some variant wheels
need; everything else is written exactly as without zip64, so small wheels stay byte-stable.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

from .errors import ToolError

_LOCAL = struct.Struct("<4s5H3L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EXTRA_ID = 0x0001
_LIMIT = 0xFFFFFFFF  # a 32-bit field holding this value means "see the zip64 record"
_COUNT_LIMIT = 0xFFFF
_UTF8_FLAG = 0x800
_VERSION = 20
_ZIP64_VERSION = 45
_UNIX = 3 << 8


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

    def copy_from(self, archive: BinaryIO, info: zipfile.ZipInfo, name: str | None = None) -> None:
        """Append member `info` of the zip file open as `archive` (optionally renamed) by copying
        its compressed bytes. `info` comes from `zipfile`'s reading of that file's central directory;
        where the bytes start is in the member's local header, which `zipfile` does not expose."""
        where = getattr(archive, "name", "zip archive")
        archive.seek(info.header_offset)
        header = archive.read(_LOCAL.size)
        if len(header) != _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise ToolError(f"{where}: bad local header for {info.filename}")
        *_, name_length, extra_length = _LOCAL.unpack(header)
        archive.seek(info.header_offset + _LOCAL.size + name_length + extra_length)
        time_, date = _dos(info.date_time)
        self._start(name or info.filename, info.compress_type, time_, date, info.CRC,
                    info.compress_size, info.file_size, info.external_attr)
        remaining = info.compress_size
        while remaining:
            chunk = archive.read(min(remaining, 1 << 20))
            if not chunk:
                raise ToolError(f"{where}: truncated member {info.filename}")
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
        encoded = name.encode("utf-8")
        flags = 0 if encoded.isascii() else _UTF8_FLAG
        entry = _Entry(encoded, flags, method, time_, date, crc, compressed, size, external_attr, offset)
        # The local header's zip64 field must hold both sizes as soon as either overflows.
        big = max(compressed, size) >= _LIMIT
        extra = _zip64_extra([size, compressed]) if big else b""
        self._out.write(_LOCAL.pack(_LOCAL_SIGNATURE, _ZIP64_VERSION if big else _VERSION, flags, method, time_,
                                    date, crc, _LIMIT if big else compressed, _LIMIT if big else size,
                                    len(encoded), len(extra)))
        self._out.write(encoded + extra)
        self._entries.append(entry)
        return entry

    def close(self) -> None:
        start = self._out.tell()
        for e in self._entries:
            self._out.write(_central_header(e))
        size = self._out.tell() - start
        count = len(self._entries)
        if count >= _COUNT_LIMIT or max(size, start) >= _LIMIT:
            record = self._out.tell()
            self._out.write(_ZIP64_END.pack(b"PK\x06\x06", _ZIP64_END.size - 12, _UNIX | _ZIP64_VERSION,
                                            _ZIP64_VERSION, 0, 0, count, count, size, start))
            self._out.write(_ZIP64_LOCATOR.pack(b"PK\x06\x07", 0, record, 1))
        short = min(count, _COUNT_LIMIT)
        self._out.write(_END.pack(b"PK\x05\x06", 0, 0, short, short, min(size, _LIMIT), min(start, _LIMIT), 0))


def _zip64_extra(values: list[int]) -> bytes:
    return struct.pack(f"<2H{len(values)}Q", _ZIP64_EXTRA_ID, 8 * len(values), *values)


def _central_header(e: _Entry) -> bytes:
    """The central directory entry; fields past 32 bits move to a zip64 extra field, in order."""
    fields = [e.size, e.compressed, e.offset]
    wide = [value for value in fields if value >= _LIMIT]
    extra = _zip64_extra(wide) if wide else b""
    size, compressed, offset = (_LIMIT if value >= _LIMIT else value for value in fields)
    version = _ZIP64_VERSION if wide else _VERSION
    return _CENTRAL.pack(b"PK\x01\x02", _UNIX | version, version, e.flags, e.method, e.dos_time, e.dos_date,
                         e.crc, compressed, size, len(e.name), len(extra), 0, 0, 0, e.external_attr,
                         offset) + e.name + extra
