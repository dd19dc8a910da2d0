"""No command loses work in `build/tree`, whatever state the tree is in, unless --force.

Each state below holds some of the developer's work (edits, untracked files, commits not
exported, a `git am` or rebase half-way); every command that could rewrite the tree is run on
it and must refuse (exit 2) naming what it would lose, leaving every byte of that work as it was.
"""

from __future__ import annotations

import hashlib
import unittest
from collections.abc import Callable
from pathlib import Path

from synthetic import SyntheticProject, TemplateProjectTestCase


def snapshot(p: SyntheticProject) -> tuple[str, str, str]:
    """The tree's HEAD, a hash of its working files and of git's in-progress state."""
    work, ops = hashlib.sha256(), hashlib.sha256()
    for path in sorted(p.tree.rglob("*")):
        rel = path.relative_to(p.tree)
        if not path.is_file() or "__pycache__" in rel.parts:
            continue
        if rel.parts[0] != ".git":
            work.update(f"{rel}\0".encode() + path.read_bytes())
        elif rel.parts[1] in ("rebase-apply", "rebase-merge"):
            ops.update(f"{rel}\0".encode() + path.read_bytes())
    return p.git("rev-parse", "HEAD").strip(), work.hexdigest(), ops.hexdigest()


class TestNoCommandLosesWork(TemplateProjectTestCase):
    @classmethod
    def build_template(cls, root: Path) -> SyntheticProject:
        p = SyntheticProject(root)
        p.tool("tree")
        p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")
        p.add_test_file("torch/extra.py", "EXTRA = 1\n", "[ops] Add extra")
        p.tool("export")
        return p

    def drop_last_patch(self) -> None:
        """Change the series, so that `tree` has a rebuild to do."""
        (self.p.patches_dir / "series").write_text("".join(f"{n}\n" for n in self.p.series()[:-1]))

    # -- the states ---------------------------------------------------------------------------

    def complete_with_edits_and_a_commit(self) -> list[str]:
        self.p.commit_edit("torch/ops.py", "def mul", "def times", "[ops] Rename mul")
        (self.p.tree / "torch/extra.py").write_text("EXTRA = 2\n")
        (self.p.tree / "torch/new_file.py").write_text("NEW = 1\n")
        self.drop_last_patch()
        return ["torch/extra.py", "torch/new_file.py"]

    def interrupted_with_a_new_file(self) -> list[str]:
        self.drop_last_patch()
        result = self.p.tool("tree", check=False, TORCH_OVERLAY_FAULT="apply:1")
        self.assertLess(result.returncode, 0, result.stderr)  # killed
        (self.p.tree / "torch/draft.py").write_text("DRAFT = 1\n")
        return ["torch/draft.py"]

    def failed_apply_being_fixed(self) -> list[str]:
        second = self.p.patches_dir / self.p.series()[1]
        second.write_text(second.read_text().replace("-    return a + b", "-    return a - b"))
        self.assertEqual(self.p.tool("tree", "--force", check=False).returncode, 2)
        ops = self.p.tree / "torch/ops.py"
        ops.write_text(ops.read_text().replace("return a + b", "return b + a"))  # the fix, half done
        return ["git am", second.name]

    def mid_git_am_continued(self) -> list[str]:
        second = self.p.patches_dir / self.p.series()[1]
        second.write_text(second.read_text().replace("-    return a + b", "-    return a - b"))
        self.assertEqual(self.p.tool("tree", "--force", check=False).returncode, 2)
        ops = self.p.tree / "torch/ops.py"
        ops.write_text(ops.read_text().replace("return a + b", "return b + a"))
        self.p.git("add", "-A")
        self.p.git("am", "--continue")  # the fix is a commit now, not exported yet
        return ["[ops] Commute add", "[ops] Add extra"]

    def mid_rebase(self) -> list[str]:
        self.p.git("-c", "sequence.editor=sed -i 1s/^pick/edit/", "rebase", "-q", "-i", "HEAD~2")
        (self.p.tree / "torch/ops.py").write_text("# rewritten during the rebase\n")
        self.drop_last_patch()
        return ["git rebase", "git rebase --continue"]

    # -- the commands -------------------------------------------------------------------------

    def check_state(self, make_state: Callable[[], list[str]], refused_by: tuple[str, ...]) -> None:
        named = make_state()
        before = snapshot(self.p)
        for command in refused_by:
            with self.subTest(command=command):
                args = ["wheel", "-o", str(self.tmp / "dist")] if command == "wheel" else [command]
                result = self.p.tool(*args, check=False)
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertNotIn("Traceback", result.stderr)
                if command == "tree":  # the rebuild's refusal names the work and the way out
                    for word in named:
                        self.assertIn(word, result.stderr)
                    self.assertIn("--force", result.stderr)
                self.assertEqual(snapshot(self.p), before)
        forced = self.p.tool("tree", "--force", check=False)  # --force does discard the work (a broken
        self.assertIn(forced.returncode, (0, 2), forced.stderr)  # series then stops again, with a clean tree)
        self.assertEqual(self.p.git("status", "--porcelain"), "")
        self.assertNotEqual(snapshot(self.p), before)

    def test_complete_tree_with_edits_new_files_and_unexported_commits(self) -> None:
        self.check_state(self.complete_with_edits_and_a_commit, ("tree", "wheel", "export"))

    def test_interrupted_build(self) -> None:
        self.check_state(self.interrupted_with_a_new_file, ("tree", "wheel", "export"))

    def test_failed_apply_stopped_in_git_am(self) -> None:
        self.check_state(self.failed_apply_being_fixed, ("tree", "wheel", "export"))

    def test_git_am_continued_but_not_exported(self) -> None:
        self.check_state(self.mid_git_am_continued, ("tree", "wheel"))

    def test_mid_rebase(self) -> None:
        self.check_state(self.mid_rebase, ("tree", "wheel", "export"))

    def test_unexported_commit_names_hash_and_subject(self) -> None:
        self.p.commit_edit("torch/ops.py", "def mul", "def times", "[ops] Rename mul")
        short = self.p.git("rev-parse", "--short", "HEAD").strip()
        self.drop_last_patch()
        result = self.p.tool("tree", check=False)
        self.assertIn(f"{short} [ops] Rename mul", result.stderr)


if __name__ == "__main__":
    unittest.main()
