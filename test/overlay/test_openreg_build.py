"""Building OpenReg: clear errors for missing tools, and a no-op when nothing changed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from synthetic import REPO, repo_build_dir
from torch.testing._internal.common_utils import TestCase, run_tests

TORCH_DIR = Path(torch.__file__).resolve().parent


def build(build_dir: Path, env: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    # -S: without site-packages the `cmake`/`ninja` PyPI modules are not importable either, so
    # PATH alone decides which tools exist.
    cmd = [sys.executable, *flags, "-m", "torch_overlay.artifacts.openreg", "--torch-dir", str(TORCH_DIR),
           "--build-dir", str(build_dir)]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)


class TestOpenRegBuildErrors(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.build_dir = Path(self._tmp.name) / "openreg"
        self.bin = Path(self._tmp.name) / "bin"
        self.bin.mkdir()

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def env_with(self, *tools: str) -> dict[str, str]:
        """A PATH holding only the named tools (found on the current PATH)."""
        for tool in tools:
            found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
            if found:
                os.symlink(found, self.bin / tool)
        env = {k: v for k, v in os.environ.items() if k != "CXX"}
        env.update(PATH=str(self.bin), PYTHONPATH=str(REPO))
        return env

    def test_missing_cmake_names_it_and_how_to_install_it(self) -> None:
        result = build(self.build_dir, self.env_with("ninja", "c++"), "-S")
        self.assertEqual(result.returncode, 1)
        self.assertIn("CMake not found", result.stderr)
        self.assertIn("pip install cmake ninja", result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_missing_compiler_is_a_clear_error(self) -> None:
        env = self.env_with("cmake", "ninja")
        env["CXX"] = "/nonexistent/g++"
        result = build(self.build_dir, env, "-S")
        self.assertEqual(result.returncode, 1)
        self.assertIn("CXX='/nonexistent/g++' does not name an executable C++ compiler", result.stderr)
        self.assertFalse((self.build_dir / "build.ninja").exists())


class TestOpenRegRebuild(TestCase):
    def test_unchanged_rebuild_has_no_work_to_do(self) -> None:
        build_dir = repo_build_dir() / "openreg"  # the runner's build: already up to date
        env = dict(os.environ, PYTHONPATH=str(REPO))
        first = build(build_dir, env)
        self.assertEqual(first.returncode, 0, first.stderr)
        again = build(build_dir, env)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("no work to do", again.stdout + again.stderr)


if __name__ == "__main__":
    run_tests()
