"""ruff and mypy, configured in pyproject.toml, are clean on the tool, the test driver and scripts/
(ruff also on OpenReg's Python package).

They run here, as a suite of `python test/run_test.py`, so CI fails on a lint or type error the
same way it fails on a broken test. Both read what they check from pyproject.toml (`[tool.ruff]`,
`[tool.mypy] files`): the configuration is the one place that says what is checked.
"""

from __future__ import annotations

import subprocess
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What the issue of record asks to be clean; mypy's `files` in pyproject.toml names the same but
# OpenReg's package, which is typed against torch's untyped internals.
OPENREG_PACKAGE = "test/cpp_extensions/open_registration_extension/torch_openreg/torch_openreg"
RUFF_PATHS = ("torch_overlay", "test/run_test.py", "scripts", OPENREG_PACKAGE)


def run_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` from the repository root, with this interpreter's install of it."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True)


class TestLint(unittest.TestCase):
    def assert_clean(self, proc: subprocess.CompletedProcess[str], tool: str) -> None:
        self.assertEqual(proc.returncode, 0, f"{tool} reports problems:\n{proc.stdout}{proc.stderr}")

    def test_ruff(self) -> None:
        self.assert_clean(run_module("ruff", "check", "--no-fix", *RUFF_PATHS), "ruff")

    def test_mypy(self) -> None:
        self.assert_clean(run_module("mypy"), "mypy")

    # The checks above must be able to fail: each tool, with this configuration, on a small
    # file with one error of its kind.
    def write_sample(self, text: str) -> str:
        sample = REPO / "build" / "lint-sample" / f"{self.id().rsplit('.', 1)[-1]}.py"
        sample.parent.mkdir(parents=True, exist_ok=True)
        sample.write_text(text)
        self.addCleanup(sample.unlink)
        return str(sample.relative_to(REPO))

    def test_ruff_reports_a_violation(self) -> None:
        sample = self.write_sample("import os\n")
        proc = run_module("ruff", "check", "--no-fix", "--no-cache", sample)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("F401", proc.stdout)

    def test_mypy_reports_a_violation(self) -> None:
        sample = self.write_sample("def f(x: int) -> str:\n    return x\n")
        proc = run_module("mypy", sample)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("incompatible return value", proc.stdout.lower())

if __name__ == "__main__":
    unittest.main()
