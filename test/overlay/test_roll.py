"""`roll --onto VERSION` on synthetic bases: each patch's outcome, the stop at the first conflict
with the tree ready to resolve, the export of the rolled series, and no work lost."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import unittest
from pathlib import Path

from synthetic import SOURCES, VERSION, SyntheticProject, TemplateProjectTestCase

NEW = "2.10.0"
OLD_EXTRA = {
    "torch/arith.py": b"def double(x):\n    return x + x + 1\n",
    "torch/mod.py": b"VALUE = 1\n",
}
# The new release: a comment above `mul` (a patch to `mul` must merge), `double` fixed as the
# series fixes it (that patch is upstream), and mod.py's VALUE changed (a patch to it conflicts).
NEW_SOURCES = {
    **SOURCES,
    "torch/ops.py": b"def add(a, b):\n    return a + b\n\n# products\ndef mul(a, b):\n    return a * b\n",
    "torch/arith.py": b"def double(x):\n    return x + x\n",
    "torch/mod.py": b"VALUE = 3\n",
}


def write_series(p: SyntheticProject, with_conflicts: bool) -> None:
    """Six patches on the old base, one per outcome the roll tells apart."""
    p.tool("tree")
    p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")  # merged
    p.commit_files({"torch/sub.py": "def sub(a, b):\n    return a - b\n"}, "[ops] Add sub")  # clean
    p.commit_edit("torch/arith.py", "x + x + 1", "x + x", "[arith] Fix double")  # upstream
    if with_conflicts:
        p.commit_edit("torch/mod.py", "VALUE = 1", "VALUE = 2", "[mod] Set VALUE to 2")  # conflicts
        p.commit_edit("torch/mod.py", "VALUE = 2", "VALUE = 4", "[mod] Set VALUE to 4")  # blocked
    p.commit_files({"torch/other.py": "OTHER = 1\n"}, "[other] Add other")  # pending, or clean
    p.tool("export")


def two_bases(root: Path, with_conflicts: bool) -> SyntheticProject:
    p = SyntheticProject(root, extra=OLD_EXTRA)
    p.add_base(NEW, NEW_SOURCES)
    write_series(p, with_conflicts)
    return p


def new_tree(p: SyntheticProject) -> Path:
    return p.root / "build" / NEW / "tree"


def new_git(p: SyntheticProject, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=new_tree(p), text=True, check=True, capture_output=True,
                          env=dict(p.env(), GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
                                   GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com")).stdout


def new_series(p: SyntheticProject) -> list[str]:
    """The patches the new base's series lists (its comment lines left out)."""
    listing = (p.root / "patches" / NEW / "series").read_text().splitlines()
    return [line for line in listing if line and not line.startswith("#")]


def outcomes(stdout: str) -> list[str]:
    return [line.split()[1] for line in stdout.splitlines() if line[2:6].isdigit()]


class TestRollWithConflicts(TemplateProjectTestCase):
    @classmethod
    def build_template(cls, root: Path) -> SyntheticProject:
        return two_bases(root, with_conflicts=True)

    def roll(self) -> subprocess.CompletedProcess[str]:
        result = self.p.tool("roll", "--onto", NEW, check=False)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        return result

    def test_each_patch_is_reported(self) -> None:
        stdout = self.roll().stdout
        self.assertEqual(outcomes(stdout), ["merged", "clean", "upstream", "conflicts", "blocked", "pending"])
        self.assertIn("patches deleted, now upstream in 2.10.0: 0003-arith-Fix-double.patch", stdout)
        self.assertIn("0004  conflicts", stdout)
        self.assertIn("torch/mod.py", stdout)
        self.assertIn("conflicts only in files of 0004-mod-Set-VALUE-to-2.patch", stdout)

    def test_stops_in_git_am_on_the_conflict_with_the_rest_queued(self) -> None:
        self.roll()
        tree = new_tree(self.p)
        self.assertTrue((tree / ".git" / "rebase-apply").is_dir())
        self.assertIn("<<<<<<<", (tree / "torch/mod.py").read_text())
        subjects = new_git(self.p, "log", "--format=%s").splitlines()
        self.assertEqual(subjects[:2], ["[ops] Add sub", "[ops] Commute mul"])  # the upstream one dropped
        self.assertIn("return b * a", (tree / "torch/ops.py").read_text())
        self.assertIn("# products", (tree / "torch/ops.py").read_text())  # the new base's side of the merge

    def test_resolve_continue_and_export_write_the_new_series(self) -> None:
        self.roll()
        tree = new_tree(self.p)
        old_series = self.p.series()
        (tree / "torch/mod.py").write_text("VALUE = 2\n")
        new_git(self.p, "add", "-A")
        continued = subprocess.run(["git", "am", "--continue"], cwd=tree, capture_output=True, text=True,
                                   env=dict(self.p.env(), GIT_COMMITTER_NAME="Dev",
                                            GIT_COMMITTER_EMAIL="dev@example.com"))
        self.assertEqual(continued.returncode, 0, continued.stdout + continued.stderr)  # 0005 applies on 0004
        self.p.tool("--base", NEW, "export")
        series = new_series(self.p)
        self.assertEqual(len(series), 5)
        self.assertFalse(any("arith" in name for name in series))
        self.assertEqual(self.p.series(), old_series)  # the old base's series is untouched
        listing = (self.p.root / "patches" / NEW / "series").read_text()
        self.assertIn("# dropped: 0003-arith-Fix-double.patch (upstream in 2.10.0: ", listing)
        status = self.p.tool("--base", NEW, "tree")
        self.assertIn("5 patch(es)", status.stdout)

    def test_a_rerun_refuses_to_discard_unexported_work(self) -> None:
        self.roll()
        tree = new_tree(self.p)
        (tree / "torch/mod.py").write_text("VALUE = 2\n")
        new_git(self.p, "add", "-A")
        new_git(self.p, "am", "--continue")
        result = self.p.tool("roll", "--onto", NEW, check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("not in patches/", result.stderr)

    def test_a_base_without_a_series_is_not_built(self) -> None:
        result = self.p.tool("--base", NEW, "tree", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(f"torch {NEW} has no series yet", result.stderr)
        self.assertIn(f"roll --onto {NEW}", result.stderr)
        self.assertFalse(new_tree(self.p).exists())

    def test_onto_the_same_base_or_an_unpinned_one_is_refused(self) -> None:
        for onto, message in ((VERSION, "is the base the series is on"), ("9.9.9", "is not a base")):
            with self.subTest(onto=onto):
                result = self.p.tool("roll", "--onto", onto, check=False)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn(message, result.stderr)


class TestRollClean(TemplateProjectTestCase):
    @classmethod
    def build_template(cls, root: Path) -> SyntheticProject:
        return two_bases(root, with_conflicts=False)

    def test_complete_roll_exports_and_shows_the_range_diff(self) -> None:
        result = self.p.tool("roll", "--onto", NEW)
        self.assertEqual(outcomes(result.stdout), ["merged", "clean", "upstream", "clean"])
        series = new_series(self.p)
        self.assertEqual([name.split("-", 1)[1] for name in series],
                         ["ops-Commute-mul.patch", "ops-Add-sub.patch", "other-Add-other.patch"])
        self.assertIn("[arith] Fix double", result.stdout)  # range-diff: the dropped patch, old side only
        self.assertRegex(result.stdout, r"1:\s+\w+ ! 1:\s+\w+ \[ops\] Commute mul")  # changed: merged
        self.assertRegex(result.stdout, r"4:\s+\w+ = 3:\s+\w+ \[other\] Add other")
        self.assertIn("# dropped: 0003-arith-Fix-double.patch (upstream in 2.10.0: ",
                      (self.p.root / "patches" / NEW / "series").read_text())
        rerun = self.p.tool("--base", NEW, "tree")  # the exported series is the tree: nothing to do
        self.assertIn("3 patch(es)", rerun.stdout)

    def test_a_front_end_builds_the_base_it_names(self) -> None:
        """`--config-settings base=V` (and TORCH_OVERLAY_BASE) reach the build backend; the sdist carries
        that base's series and names it as its default, so it builds the same base anywhere."""
        self.p.tool("roll", "--onto", NEW)
        for name in ("pyproject.toml", "README.md"):
            (self.p.root / name).write_text("# a stand-in: the sdist only carries it\n")
        code = ("import sys; from torch_overlay.artifacts import build_backend as b; "
                "print(b.build_sdist(sys.argv[1], {'base': sys.argv[2]}))")
        built = subprocess.run([sys.executable, "-c", code, str(self.tmp / "sdist"), NEW], cwd=self.p.root,
                               env=self.p.env(), capture_output=True, text=True, check=True).stdout.strip()
        self.assertTrue(built.startswith(f"torch-{NEW}+ovl3."), built)
        with tarfile.open(self.tmp / "sdist" / built) as tar:
            prefix = built.removesuffix(".tar.gz")
            names = tar.getnames()
            pin = tar.extractfile(f"{prefix}/overlay.toml").read().decode()  # type: ignore[union-attr]
        self.assertIn(f"{prefix}/patches/{NEW}/series", names)
        self.assertFalse(any(f"/patches/{VERSION}/" in name for name in names))
        self.assertIn(f'default-base = "{NEW}"', pin)


if __name__ == "__main__":
    unittest.main()
