"""The overlay under another CPython (3.12 by default): installed with plain `pip install` from
the sdist into a fresh venv, where the patches' regression suites must pass.

Full tier (a fresh venv with torch's CUDA dependencies, the base wheel for that Python and the
patch suites take several minutes): runs with `python test/run_test.py --tier full`, skips otherwise.
`TORCH_OVERLAY_OTHER_PYTHON` names the interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPO
from torch.testing._internal.common_utils import TestCase, run_tests

sys.path.insert(0, str(REPO))
from torch_overlay.artifacts.build_backend import write_sdist  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.fork.series import overlay_version, read_series  # noqa: E402
from torch_overlay.pinning.pin import load_pin  # noqa: E402

FULL_TIER = os.environ.get("TORCH_OVERLAY_TEST_TIER") == "full"
OTHER_VERSION = "3.12"
PROJECT = Project.discover(REPO)
VERSION = overlay_version(load_pin(PROJECT.pin_file, PROJECT.base).version, read_series(PROJECT.patches_dir))
TIMEOUT = 3600


def runs(python: str) -> bool:
    return shutil.which(python) is not None and subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0


def other_python() -> str | None:
    """`TORCH_OVERLAY_OTHER_PYTHON`, else python3.12 on PATH, else a pyenv-installed 3.12 that is
    not the active version (its shim refuses to run it, its own binary runs)."""
    named = os.environ.get("TORCH_OVERLAY_OTHER_PYTHON")
    if named:
        return named if runs(named) else None
    if runs(f"python{OTHER_VERSION}"):
        return f"python{OTHER_VERSION}"
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return None
    root = Path(subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip())
    installed = sorted(root.glob(f"versions/{OTHER_VERSION}*/bin/python{OTHER_VERSION}"))
    return str(installed[-1]) if installed and runs(str(installed[-1])) else None


@unittest.skipUnless(FULL_TIER, "full tier: `python test/run_test.py --tier full`")
class TestOtherPython(TestCase):
    def setUp(self) -> None:
        super().setUp()
        python = other_python()
        if python is None:
            self.fail(f"no CPython {OTHER_VERSION} runs here; set TORCH_OVERLAY_OTHER_PYTHON to another CPython's path")
        self.python = python
        self._tmp = tempfile.TemporaryDirectory(prefix="other-python-")
        self.tmp = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()  # the venv weighs ~7 GB
        super().tearDown()

    def run_checked(self, *cmd: str, **env: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(cmd, cwd=self.tmp, env={**os.environ, **env}, capture_output=True, text=True,
                                timeout=TIMEOUT)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-60:])
            self.fail(f"{' '.join(cmd[:4])} ... exited {result.returncode}:\n{tail}")
        return result

    def test_sdist_installs_and_the_patch_suites_pass(self) -> None:
        sdist = self.tmp / f"torch-{VERSION}.tar.gz"
        write_sdist(PROJECT, VERSION, sdist)
        env_dir = self.tmp / "venv"
        self.run_checked(self.python, "-m", "venv", str(env_dir))
        python = str(env_dir / "bin" / "python")
        self.run_checked(python, "-m", "pip", "install", "-q", str(sdist), "pytest", "numpy", "expecttest")
        shown = self.run_checked(python, "-c", "import sys, torch; print(sys.version_info[:2], torch.__version__, "
                                 "torch.__file__, len(torch.version.overlay_patches))").stdout
        self.assertIn(f"{VERSION} {env_dir}", shown)  # the custom wheel, installed in that venv
        self.assertNotIn(str(sys.version_info[:2]), shown)  # really another Python
        # The regression tests the series adds, copied out of the fork tree (no bytecode left there).
        tests = self.tmp / "test"
        shutil.copytree(PROJECT.tree_dir / "test", tests, ignore=shutil.ignore_patterns("__pycache__"))
        cache = self.tmp / "inductor-cache"
        result = self.run_checked(python, "-m", "pytest", str(tests), "-p", "no:cacheprovider", "-q",
                                  TORCHINDUCTOR_CACHE_DIR=str(cache))
        self.assertRegex(result.stdout.splitlines()[-1], r"^=* ?\d+ passed")
        self.assertNotIn("failed", result.stdout.splitlines()[-1])


if __name__ == "__main__":
    run_tests()
