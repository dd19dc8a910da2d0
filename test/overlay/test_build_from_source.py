"""scripts/build_from_source.py up to the build (`--no-build`), on a synthetic upstream checkout.

The checkout is a clone of a synthetic fork tree's base commit plus a `setup.py` commit; the
synthetic project's pin names that commit as the revision, as overlay.toml names v2.9.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from synthetic import REPO, SyntheticProject

from torch.testing._internal.common_utils import TestCase, run_tests

SCRIPT = REPO / "scripts" / "build_from_source.py"
GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
           "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_CONFIG_GLOBAL": os.devnull}


class TestBuildFromSourceChecks(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        tmp = Path(self._tmp.name)
        self.p = SyntheticProject(tmp)
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        self.p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")
        self.p.tool("export")
        self.checkout = tmp / "pytorch"
        self.git(tmp, "clone", "-q", str(self.p.tree), str(self.checkout))
        self.git(self.checkout, "reset", "-q", "--hard", "HEAD~2")  # the base commit: upstream's sources
        (self.checkout / "setup.py").write_text("raise SystemExit('the build must not start in these tests')\n")
        self.git(self.checkout, "add", "setup.py")
        self.git(self.checkout, "commit", "-q", "-m", "upstream setup.py")
        self.revision = self.git(self.checkout, "rev-parse", "HEAD")
        self.pin(self.revision)

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def git(self, cwd: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=dict(os.environ, **GIT_ENV), text=True, check=True,
                              capture_output=True).stdout.strip()

    def pin(self, revision: str) -> None:
        pin_file = self.p.root / "overlay.toml"
        text = pin_file.read_text()
        start = text.index('revision = "') + len('revision = "')
        pin_file.write_text(text[:start] + revision + text[text.index('"', start):])

    def script(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SCRIPT), str(self.checkout), "--project", str(self.p.root), *args],
                              env=dict(os.environ, **GIT_ENV), text=True, capture_output=True)

    def test_applies_the_series_at_the_pinned_revision(self) -> None:
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("stopping before the build", result.stdout)
        log = self.git(self.checkout, "log", "--format=%s", f"{self.revision}..HEAD").splitlines()
        self.assertEqual(log, ["[ops] Commute add", "[ops] Commute mul"])
        self.assertIn("return b * a", (self.checkout / "torch/ops.py").read_text())
        # A second run (e.g. after a failed build) accepts the applied series instead of refusing.
        again = self.script("--no-build")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("already applied", again.stderr)

    def test_wrong_revision_is_refused(self) -> None:
        self.pin("0" * 40)
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"is at {self.revision[:12]}, but the series is pinned to {'0' * 40}", result.stderr)
        self.assertEqual(self.git(self.checkout, "rev-parse", "HEAD"), self.revision)

    def test_dirty_checkout_is_refused(self) -> None:
        (self.checkout / "torch/ops.py").write_text("# local edit\n")
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 1)
        self.assertIn("uncommitted changes (torch/ops.py)", result.stderr)
        self.assertEqual((self.checkout / "torch/ops.py").read_text(), "# local edit\n")

    def test_not_a_checkout(self) -> None:
        self.checkout = self.checkout.parent / "empty"
        (self.checkout / "torch").mkdir(parents=True)
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 1)
        self.assertIn("not an upstream PyTorch checkout (missing: setup.py, .git)", result.stderr)

    def test_conflicting_patch_aborts_and_leaves_checkout_unchanged(self) -> None:
        ops = self.checkout / "torch/ops.py"
        ops.write_text(ops.read_text().replace("return a + b", "return a - b"))
        self.git(self.checkout, "commit", "-q", "-am", "diverge")
        self.revision = self.git(self.checkout, "rev-parse", "HEAD")
        self.pin(self.revision)
        before = ops.read_text()
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 1)
        self.assertIn("0002-ops-Commute-add.patch does not apply", result.stderr)
        self.assertIn("git am --abort", result.stderr)
        self.assertEqual(self.git(self.checkout, "rev-parse", "HEAD"), self.revision)
        self.assertEqual(self.git(self.checkout, "status", "--porcelain"), "")
        self.assertEqual(ops.read_text(), before)
        self.assertFalse((self.checkout / ".git" / "rebase-apply").exists())


if __name__ == "__main__":
    run_tests()
