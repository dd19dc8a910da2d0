"""End to end on the real pinned base: the installed torch is the overlay, and its custom wheel
is reproducible, faithful to the base wheel, and installs with pip."""

from __future__ import annotations

import email.parser
import importlib.metadata
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

import torch
from synthetic import REPO, sha256
from test_wheel import raw_members
from torch.testing._internal.common_utils import TestCase, run_tests

sys.path.insert(0, str(REPO))
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.fork.series import overlay_version, read_series  # noqa: E402
from torch_overlay.pinning.base import wheel_path  # noqa: E402
from torch_overlay.pinning.pin import load_pin  # noqa: E402

PROJECT = Project.discover(REPO)
PIN = load_pin(PROJECT.pin_file, PROJECT.base)
PATCHES = read_series(PROJECT.patches_dir)
# This interpreter's base wheel: the cache may hold the pinned wheels of other Pythons too.
BASE_WHEEL = wheel_path(PROJECT.cache, PIN, PIN.wheel_for_this_interpreter())


class TestInstalledOverlay(TestCase):
    def test_torch_is_the_patched_tree(self) -> None:
        self.assertEqual(Path(torch.__file__).resolve().parent, PROJECT.tree_dir / "torch")
        self.assertEqual(torch.__version__, overlay_version(PIN.version, PATCHES))
        self.assertEqual(torch.version.git_version, PIN.revision)
        self.assertEqual(torch.version.overlay_patches, tuple((p.id, p.title) for p in PATCHES))

    def test_installed_metadata_is_the_base_wheels(self) -> None:
        with zipfile.ZipFile(BASE_WHEEL) as zf:
            base = email.parser.Parser().parsestr(zf.read(f"torch-{PIN.version}.dist-info/METADATA").decode())
        self.assertEqual(importlib.metadata.requires("torch"), base.get_all("Requires-Dist"))
        self.assertEqual(importlib.metadata.metadata("torch")["Requires-Python"], base["Requires-Python"])


class TestRealWheel(TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = Path(cls._tmp.name)
        cls.wheels = [cls._build(cls.tmp / name) for name in ("a", "b")]

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()
        super().tearDownClass()

    @staticmethod
    def _build(out: Path) -> Path:
        result = subprocess.run([sys.executable, "-m", "torch_overlay", "wheel", "-o", str(out)], cwd=REPO,
                                capture_output=True, text=True)
        if result.returncode:
            raise AssertionError(result.stderr)
        return Path(result.stdout.strip())

    def test_two_builds_have_the_same_sha256(self) -> None:
        self.assertEqual(sha256(self.wheels[0]), sha256(self.wheels[1]))

    def test_only_patched_files_and_dist_info_differ_from_the_base(self) -> None:
        wheel = self.wheels[0]
        patched = {f for p in PATCHES for f in p.files if not f.startswith("test/")} | {"torch/version.py"}
        base, new = raw_members(BASE_WHEEL), raw_members(wheel)
        old_info = f"torch-{PIN.version}.dist-info/"
        differing = {n for n, data in base.items() if not n.startswith(old_info) and new.get(n) != data}
        self.assertEqual(differing, patched & set(base))
        with zipfile.ZipFile(wheel) as zf:
            self.assertIsNone(zf.testzip())

    def test_installs_into_a_fresh_venv(self) -> None:
        env_dir = self.tmp / "venv"
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "-q", str(self.wheels[0])],
                                 capture_output=True, text=True)
        self.assertEqual(install.returncode, 0, install.stderr)
        shown = subprocess.run([str(python), "-m", "pip", "show", "torch"], capture_output=True, text=True).stdout
        self.assertIn(f"Version: {overlay_version(PIN.version, PATCHES)}\n", shown)


if __name__ == "__main__":
    run_tests()
