"""scripts/build_from_source.py up to the build (`--no-build`), on a synthetic upstream checkout.

The checkout is a clone of a synthetic fork tree's base commit plus a `setup.py` commit; the
synthetic project's pin names that commit as the revision, as overlay.toml names v2.9.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

from synthetic import DEV_GIT_ENV, REPO, SyntheticProject, TempDirMixin, dev_git

SCRIPT = REPO / "scripts" / "build_from_source.py"


class TestBuildFromSourceChecks(TempDirMixin, unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        tmp = self.tmp
        self.p = SyntheticProject(tmp)
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        self.p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")
        self.p.tool("export")
        self.checkout = tmp / "pytorch"
        dev_git(tmp, "clone", "-q", str(self.p.tree), str(self.checkout))
        dev_git(self.checkout, "reset", "-q", "--hard", "HEAD~2")  # the base commit: upstream's sources
        (self.checkout / "setup.py").write_text("raise SystemExit('the build must not start in these tests')\n")
        dev_git(self.checkout, "add", "setup.py")
        dev_git(self.checkout, "commit", "-q", "-m", "upstream setup.py")
        self.revision = dev_git(self.checkout, "rev-parse", "HEAD")
        self.pin(self.revision)

    def pin(self, revision: str) -> None:
        pin_file = self.p.root / "overlay.toml"
        text = pin_file.read_text()
        start = text.index('revision = "') + len('revision = "')
        pin_file.write_text(text[:start] + revision + text[text.index('"', start):])

    def script(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SCRIPT), str(self.checkout), "--project", str(self.p.root), *args],
                              env=dict(os.environ, **DEV_GIT_ENV), text=True, capture_output=True)

    def test_applies_the_series_at_the_pinned_revision(self) -> None:
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("stopping before the build", result.stdout)
        log = dev_git(self.checkout, "log", "--format=%s", f"{self.revision}..HEAD").splitlines()
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
        self.assertEqual(dev_git(self.checkout, "rev-parse", "HEAD"), self.revision)

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

    @unittest.skipIf(sys.version_info < (3, 11), "Python 3.10 reads overlay.toml with tomli, from site-packages")
    def test_runs_on_a_bare_python(self) -> None:
        # The source-build workflow runs the script on a fresh interpreter, before anything is
        # installed: the tool's modules it imports must need nothing outside the standard library.
        result = subprocess.run([sys.executable, "-S", str(SCRIPT), str(self.checkout), "--project", str(self.p.root),
                                 "--no-build"], env=dict(os.environ, **DEV_GIT_ENV), text=True, capture_output=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("stopping before the build", result.stdout)

    def test_conflicting_patch_aborts_and_leaves_checkout_unchanged(self) -> None:
        ops = self.checkout / "torch/ops.py"
        ops.write_text(ops.read_text().replace("return a + b", "return a - b"))
        dev_git(self.checkout, "commit", "-q", "-am", "diverge")
        self.revision = dev_git(self.checkout, "rev-parse", "HEAD")
        self.pin(self.revision)
        before = ops.read_text()
        result = self.script("--no-build")
        self.assertEqual(result.returncode, 1)
        self.assertIn("0002-ops-Commute-add.patch does not apply", result.stderr)
        self.assertIn("git am --abort", result.stderr)
        self.assertEqual(dev_git(self.checkout, "rev-parse", "HEAD"), self.revision)
        self.assertEqual(dev_git(self.checkout, "status", "--porcelain"), "")
        self.assertEqual(ops.read_text(), before)
        self.assertFalse((self.checkout / ".git" / "rebase-apply").exists())


if __name__ == "__main__":
    unittest.main()
