"""The custom wheel on a synthetic base: raw-copied members, rewritten dist-info, determinism."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import struct
import sys
import tempfile
import unittest
import zipfile
import zlib
from pathlib import Path

from installer.exceptions import InstallerError
from installer.sources import WheelFile
from packaging.version import Version
from synthetic import (
    DATE,
    REPO,
    TempDirMixin,
    project_with_a_patch,
    record_hash,
    sha256,
)

sys.path.insert(0, str(REPO))
from torch_overlay.core.zipcopy import RawZipWriter  # noqa: E402
from torch_overlay.fork.series import Patch, overlay_version, series_hash  # noqa: E402


def raw_members(path: Path) -> dict[str, bytes]:
    """Each member's compressed bytes exactly as stored."""
    members = {}
    with zipfile.ZipFile(path) as zf, path.open("rb") as f:
        for info in zf.infolist():
            f.seek(info.header_offset)
            header = f.read(30)
            skip = int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
            f.seek(info.header_offset + 30 + skip)
            members[info.filename] = f.read(info.compress_size)
    return members


class TestCustomWheel(TempDirMixin, unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.p = project_with_a_patch(self.tmp)
        self.p.add_test_file("torch/extra.py", "NEW = 1\n", "[ops] Add a module")
        self.p.add_test_file("test/ops/test_mul.py", "print('ok')\n", "[ops] Add a test")
        self.p.tool("export")
        self.out = self.tmp / "dist"

    def build(self, out: Path) -> Path:
        return Path(self.p.tool("wheel", "-o", str(out)).stdout.strip())

    def test_members_are_the_base_except_patched_files_and_dist_info(self) -> None:
        wheel = self.build(self.out)
        version = (self.p.tree / "torch/version.py").read_text().split("__version__ = '")[1].split("'")[0]
        self.assertRegex(version, r"^2\.9\.1\+ovl3\.g[0-9a-f]{8}$")
        self.assertEqual(wheel.name, f"torch-{version}-{self.p.wheel.name.split('-', 2)[2]}")
        base, new = raw_members(self.p.wheel), raw_members(wheel)
        old_info, new_info = "torch-2.9.1.dist-info", f"torch-{version}.dist-info"
        changed = {"torch/ops.py", "torch/version.py"}
        for name, data in base.items():
            if name.startswith(old_info) or name in changed:
                continue
            self.assertEqual(new[name], data, name)  # the stored bytes, not just the content
        self.assertEqual(new[f"{new_info}/WHEEL"], base[f"{old_info}/WHEEL"])
        with zipfile.ZipFile(wheel) as zf:
            self.assertIsNone(zf.testzip())
            self.assertIn("return b * a", zf.read("torch/ops.py").decode())
            self.assertEqual(zf.read("torch/extra.py"), b"NEW = 1\n")
            self.assertIn(f"__version__ = '{version}'", zf.read("torch/version.py").decode())
            self.assertNotIn("test/ops/test_mul.py", zf.namelist())  # tests stay in the tree
            self.assertIn(f"Version: {version}\n", zf.read(f"{new_info}/METADATA").decode())
            self.assertFalse(any(n.startswith(old_info) for n in zf.namelist()))

    def test_record_lists_every_member_with_its_hash_and_size(self) -> None:
        wheel = self.build(self.out)
        with zipfile.ZipFile(wheel) as zf:
            record_name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            rows = {r[0]: r[1:] for r in csv.reader(io.StringIO(zf.read(record_name).decode())) if r}
            files = [i for i in zf.infolist() if not i.is_dir()]
            self.assertEqual(set(rows), {i.filename for i in files})
            for info in files:
                if info.filename == record_name:
                    self.assertEqual(rows[info.filename], ["", ""])
                    continue
                data = zf.read(info)
                self.assertEqual(rows[info.filename], [record_hash(data), str(len(data))], info.filename)

    def test_record_passes_an_independent_reader(self) -> None:
        """`installer` (the reference wheel installer library) parses RECORD with its own code and
        checks each member's hash and size; it must also reject a RECORD that lies about one."""
        wheel = self.build(self.out)
        with WheelFile.open(wheel) as source:
            source.validate_record()
            record_name = f"{source.dist_info_dir}/RECORD"
        lying = self.out / "lying" / wheel.name
        lying.parent.mkdir()
        with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(lying, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == record_name:
                    data = data.replace(record_hash(src.read("torch/ops.py")).encode(), record_hash(b"").encode())
                dst.writestr(info, data)
        with WheelFile.open(lying) as source:
            with self.assertRaisesRegex(InstallerError, "torch/ops.py didn.t match RECORD"):
                source.validate_record()

    def test_two_builds_are_byte_identical(self) -> None:
        first = self.build(self.out / "a")
        second = self.build(self.out / "b")
        self.assertEqual(sha256(first), sha256(second))

    def test_refuses_a_dirty_tree(self) -> None:
        (self.p.tree / "torch/ops.py").write_text("# uncommitted\n")
        result = self.p.tool("wheel", "-o", str(self.out), check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("torch/ops.py", result.stderr)
        self.assertFalse(self.out.exists() and any(self.out.iterdir()))

    def test_tampered_base_wheel_is_refused(self) -> None:
        data = bytearray(self.p.wheel.read_bytes())
        data[100] ^= 0xFF
        self.p.wheel.write_bytes(bytes(data))
        result = self.p.tool("wheel", "-o", str(self.out), check=False)
        self.assertEqual(result.returncode, 3)
        self.assertIn("does not match the pin", result.stderr)
        self.assertFalse(self.out.exists() and any(self.out.iterdir()))


    def test_base_record_missing_a_member_is_completed(self) -> None:
        """Every wheel pip accepts lists each member in RECORD; a base that does not still builds."""
        rewritten = self.p.wheel.with_suffix(".tmp")
        with zipfile.ZipFile(self.p.wheel) as src, zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename.endswith("/RECORD"):
                    data = b"".join(row for row in data.splitlines(keepends=True) if not row.startswith(b"torch/lib/"))
                dst.writestr(info, data)
        rewritten.replace(self.p.wheel)
        self.p.write_pin(sha256(self.p.wheel))
        self.p.tool("tree", "--force")
        wheel = self.build(self.out)
        with zipfile.ZipFile(wheel) as zf:
            record_name = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
            rows = {r[0]: r[1:] for r in csv.reader(io.StringIO(zf.read(record_name).decode())) if r}
            lib = zf.read("torch/lib/libtorch_cpu.so")
        self.assertEqual(rows["torch/lib/libtorch_cpu.so"], [record_hash(lib), str(len(lib))])


class TestVersion(unittest.TestCase):
    def test_local_tag_survives_normalisation_of_a_leading_zero_all_digit_hash(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            patch = Patch(Path(tmp) / "0001-ops-Fix.patch")
            for attempt in range(50_000):  # about 1 series in 430 hashes to "0" + 7 digits
                patch.path.write_text(f"Subject: [PATCH] [ops] Fix\n\n{attempt}\n")
                digits = series_hash([patch])[:8]
                if re.fullmatch(r"0[0-9]{7}", digits):
                    break
            else:
                self.fail("no series hashed to a leading-zero all-digit tag")
            version = overlay_version("2.9.1", [patch])
        self.assertEqual(version, f"2.9.1+ovl1.g{digits}")
        self.assertEqual(str(Version(version)), version)
        self.assertEqual(Version(version).local, f"ovl1.g{digits}")
        # What the letter prevents: an all-digit segment is a number and loses its zeros.
        self.assertEqual(str(Version(f"2.9.1+ovl1.{digits}")), f"2.9.1+ovl1.{digits.lstrip('0')}")


def forge_zip64(path: Path, name: str, stream: bytes, crc: int, size: int) -> None:
    """A one-member zip whose deflated member inflates to `size` (> 4 GiB) bytes, written by hand.

    Only the compressed stream is stored, so the archive is a few MB; its records follow the
    zip format's zip64 rules independently of the writer under test.
    """
    big = 0xFFFFFFFF
    extra = struct.pack("<2H2Q", 1, 16, size, len(stream))
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 45, 0, 8, 0, 0x21, crc, big, big, len(name), len(extra))
    central_extra = struct.pack("<2H2Q", 1, 16, size, len(stream))
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 45, 45, 0, 8, 0, 0x21, crc, big, big, len(name),
                          len(central_extra), 0, 0, 0, 0o100644 << 16, 0)
    with path.open("wb") as f:
        f.write(local + name.encode() + extra + stream)
        start = f.tell()
        f.write(central + name.encode() + central_extra)
        cd_size = f.tell() - start
        record = f.tell()
        f.write(struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, 1, 1, cd_size, start))
        f.write(struct.pack("<4sLQL", b"PK\x06\x07", 0, record, 1))
        f.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, cd_size, start, 0))


class TestZip64(TempDirMixin, unittest.TestCase):
    """The raw-copy writer past the 32-bit limits, without writing 4 GiB to disk."""

    def setUp(self) -> None:
        super().setUp()

    def test_member_larger_than_4_gib_is_copied_raw(self) -> None:
        # 4 GiB + 1 MiB of zeros as identical deflate blocks (a full flush resets the history).
        chunk, blocks = bytes(1 << 20), 4097
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        block = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
        stream = block * blocks + compressor.flush()
        crc = 0
        for _ in range(blocks):
            crc = zlib.crc32(chunk, crc)
        size = len(chunk) * blocks
        source = self.tmp / "source.zip"
        forge_zip64(source, "torch/lib/libhuge.so", stream, crc, size)
        out = self.tmp / "out.zip"
        with zipfile.ZipFile(source) as src, source.open("rb") as raw, out.open("wb") as f:
            writer = RawZipWriter(f)
            writer.write("torch/__init__.py", b"", DATE)
            writer.copy_from(raw, src.getinfo("torch/lib/libhuge.so"))
            writer.write("torch/after.py", b"AFTER = 1\n", DATE)
            writer.close()
        with zipfile.ZipFile(out) as zf:
            huge = zf.getinfo("torch/lib/libhuge.so")
            self.assertEqual((huge.file_size, huge.compress_size, huge.CRC), (size, len(stream), crc))
            with zf.open(huge) as member:
                head = member.read(1 << 21)  # inflates from the right offset
            self.assertEqual((len(head), head.count(0)), (1 << 21, 1 << 21))
            self.assertEqual(zf.read("torch/after.py"), b"AFTER = 1\n")
        # Compared by hash: torch's assertEqual would walk megabytes of bytes one by one.
        self.assertEqual(hashlib.sha256(raw_members(out)["torch/lib/libhuge.so"]).hexdigest(),
                         hashlib.sha256(stream).hexdigest())

    def test_archive_past_4_gib_and_65535_members(self) -> None:
        # A sparse file: the archive starts beyond 4 GiB, so every offset needs zip64.
        out = self.tmp / "sparse.zip"
        with out.open("wb") as f:
            f.seek(5 << 30)
            writer = RawZipWriter(f)
            for i in range(0x10001):
                writer.write(f"torch/m{i}.py", b"X = %d\n" % i, DATE)
            writer.close()
        self.assertLess(out.stat().st_blocks * 512, 64 << 20)  # nothing like 5 GiB was written
        with zipfile.ZipFile(out) as zf:
            infos = zf.infolist()
            self.assertEqual(len(infos), 0x10001)
            self.assertEqual(infos[0].header_offset, 5 << 30)
            for i in (0, 0xFFFF, 0x10000):
                self.assertEqual(zf.read(f"torch/m{i}.py"), b"X = %d\n" % i)
            self.assertIsNone(zf.testzip())

    def test_small_archives_have_no_zip64_records(self) -> None:
        out = self.tmp / "small.zip"
        with out.open("wb") as f:
            writer = RawZipWriter(f)
            writer.write("torch/a.py", b"A = 1\n", DATE)
            writer.close()
        data = out.read_bytes()
        self.assertNotIn(b"PK\x06\x06", data)
        self.assertEqual(data[4:6], b"\x14\x00")  # version needed 2.0, as before zip64 support


if __name__ == "__main__":
    unittest.main()
