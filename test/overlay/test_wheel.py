"""The custom wheel on a synthetic base: raw-copied members, rewritten dist-info, determinism."""

from __future__ import annotations

import csv
import io
import tempfile
import zipfile
from pathlib import Path

from synthetic import SyntheticProject, record_hash, sha256

from torch.testing._internal.common_utils import TestCase, run_tests


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


class TestCustomWheel(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.p = SyntheticProject(Path(self._tmp.name))
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        self.p.add_test_file("torch/extra.py", "NEW = 1\n", "[ops] Add a module")
        self.p.add_test_file("test/ops/test_mul.py", "print('ok')\n", "[ops] Add a test")
        self.p.tool("export")
        self.out = Path(self._tmp.name) / "dist"

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

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


if __name__ == "__main__":
    run_tests()
