"""The fork tree on a synthetic base: materialise, export round trip, and every bad input."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPO, SyntheticProject, make_wheel, sha256, wait_for_line

sys.path.insert(0, str(REPO))
from torch_overlay.core.lock import build_lock  # noqa: E402


class TreeTestCase(unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.p = SyntheticProject(Path(self._tmp.name))

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def write_two_patches(self) -> None:
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul\n\nRoot cause: none.\n\nFixes #1")
        self.p.add_test_file("test/ops/test_mul.py", "print('ok')\n", "[ops] Add a test\n\nTest Plan: run it")
        self.p.tool("export")


class TestMaterialise(TreeTestCase):
    def test_base_commit_tracks_text_and_links_compiled_files(self) -> None:
        self.p.tool("tree")
        tracked = self.p.git("ls-files").split()
        self.assertIn("torch/ops.py", tracked)
        self.assertIn("torch/include/ATen/Tensor.h", tracked)
        self.assertNotIn("torch/lib/libtorch_cpu.so", tracked)
        self.assertNotIn("torch/version.py", tracked)  # generated, as upstream's is
        self.assertEqual(self.p.git("log", "--format=%s").splitlines(), ["torch 2.9.1 base: sources of the official wheel"])
        self.assertEqual(self.p.git("status", "--porcelain"), "")
        lib = self.p.tree / "torch/lib/libtorch_cpu.so"
        cached = next((self.p.cache / "base").glob("*/torch/lib/libtorch_cpu.so"))
        self.assertEqual(lib.stat().st_ino, cached.stat().st_ino)  # a hard link, not a copy
        version = (self.p.tree / "torch/version.py").read_text()
        self.assertIn("__version__ = '2.9.1+ovl0.", version)
        self.assertIn("git_version = '5811a8d7da873dd699ff6687092c225caffcf1bb'", version)

    def test_base_commit_is_reproducible(self) -> None:
        self.p.tool("tree")
        first = self.p.git("rev-parse", "HEAD")
        self.p.tool("tree", "--force")
        other = SyntheticProject(Path(self._tmp.name) / "other")
        other.tool("tree")
        self.assertEqual(first, other.git("rev-parse", "HEAD"))

    def test_unchanged_rerun_reextracts_nothing(self) -> None:
        self.p.tool("tree")
        extracted = next((self.p.cache / "base").glob("*/manifest.json")).parent
        stamp = (extracted / "manifest.json").stat().st_mtime_ns
        head = self.p.git("rev-parse", "HEAD")
        self.p.tool("tree")
        self.assertEqual(stamp, (extracted / "manifest.json").stat().st_mtime_ns)
        self.assertEqual(head, self.p.git("rev-parse", "HEAD"))

    def test_edit_in_tree_is_not_overwritten_by_noop_rerun(self) -> None:
        self.p.tool("tree")
        ops = self.p.tree / "torch/ops.py"
        ops.write_text(ops.read_text() + "# live edit\n")
        self.p.tool("tree")  # nothing to rebuild: the edit stays
        self.assertIn("# live edit", ops.read_text())


class TestExport(TreeTestCase):
    def test_export_writes_series_and_round_trip_is_byte_stable(self) -> None:
        self.write_two_patches()
        series = self.p.series()
        self.assertEqual(series, ["0001-ops-Commute-mul.patch", "0002-ops-Add-a-test.patch"])
        before = {n: (self.p.patches_dir / n).read_bytes() for n in series}
        self.assertTrue(before[series[0]].startswith(b"From 0000000000000000000000000000000000000000 "))
        self.assertIn(b"Subject: [PATCH] [ops] Commute mul", before[series[0]])
        # From scratch: tree then export must reproduce every byte.
        import shutil

        shutil.rmtree(self.p.tree)
        self.p.tool("tree")
        self.assertEqual(
            self.p.git("log", "--format=%an <%ae> %aI %s", "-2").splitlines(),
            [
                "Dev <dev@example.com> 2026-01-02T03:04:05+00:00 [ops] Add a test",
                "Dev <dev@example.com> 2026-01-02T03:04:05+00:00 [ops] Commute mul",
            ],
        )
        self.p.tool("export")
        self.assertEqual(self.p.series(), series)
        self.assertEqual({n: (self.p.patches_dir / n).read_bytes() for n in series}, before)

    def test_export_removes_patches_dropped_from_the_tree(self) -> None:
        self.write_two_patches()
        self.p.git("reset", "-q", "--hard", "HEAD~1")
        self.p.tool("export")
        self.assertEqual(self.p.series(), ["0001-ops-Commute-mul.patch"])
        self.assertFalse((self.p.patches_dir / "0002-ops-Add-a-test.patch").exists())

    def test_version_lists_applied_patches(self) -> None:
        self.write_two_patches()
        version = (self.p.tree / "torch/version.py").read_text()
        self.assertIn("('0001', '[ops] Commute mul')", version)
        self.assertIn("('0002', '[ops] Add a test')", version)
        self.assertIn("__version__ = '2.9.1+ovl2.", version)

    def test_status_json(self) -> None:
        import json

        self.write_two_patches()
        info = json.loads(self.p.tool("status", "--json").stdout)
        self.assertTrue(info["base"]["hash_verified"])
        self.assertEqual(info["tree"]["clean"], True)
        self.assertEqual(info["tree"]["stale"], False)
        self.assertEqual([p["applied"] for p in info["patches"]], [True, True])
        self.assertEqual(info["patches"][0]["files"], ["torch/ops.py"])
        self.assertEqual(info["patches"][0]["fixes"], [1])


class TestBadInput(TreeTestCase):
    def test_tampered_wheel_is_refused_before_anything_is_written(self) -> None:
        with self.p.wheel.open("ab") as f:
            f.write(b"tampered")
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 3)
        self.assertIn("does not match the pin", result.stderr)
        self.assertIn(self.p.wheel.name, result.stderr)
        self.assertFalse((self.p.cache / "base").exists())
        self.assertFalse(self.p.tree.exists())

    def test_no_pinned_wheel_for_this_interpreter_lists_supported_tags(self) -> None:
        (self.p.root / "overlay.toml").write_text(
            'default-base = "2.9.1"\n[bases."2.9.1"]\nrevision = "abc"\n\n[bases."2.9.1".wheels]\n'
            f'"cp39-cp39-manylinux_2_28_x86_64" = "{"0" * 64}"\n'
        )
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("supported wheel tags: cp39-cp39-manylinux_2_28_x86_64", result.stderr)

    def break_third_patch(self) -> Path:
        """A series of four whose third patch no longer applies (its context changed)."""
        self.write_two_patches()
        self.p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")
        self.p.add_test_file("torch/extra.py", "EXTRA = 1\n", "[ops] Add extra")
        self.p.tool("export")
        third = self.p.patches_dir / self.p.series()[2]
        third.write_text(third.read_text().replace("-    return a + b", "-    return a - b"))
        return third

    def test_patch_that_does_not_apply_names_patch_file_and_hunk_and_keeps_last_good_commit(self) -> None:
        third = self.break_third_patch()
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(third.name, result.stderr)
        self.assertIn("torch/ops.py (hunk at line 1)", result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(self.p.git("log", "-1", "--format=%s").strip(), "[ops] Add a test")  # last good
        self.assertEqual(self.p.git("status", "--porcelain"), "")  # nothing half-applied
        # `git am` waits on the failing patch with the rest of the series queued behind it.
        self.assertEqual((self.p.tree / ".git/rebase-apply/last").read_text().strip(), "2")
        # Fixed series, the stopped `git am` untouched: the next run ends it and completes the tree.
        third.write_text(third.read_text().replace("-    return a - b", "-    return a + b"))
        self.p.tool("tree")
        self.assertIn("return b + a", (self.p.tree / "torch/ops.py").read_text())
        self.assertTrue((self.p.tree / "torch/extra.py").exists())
        self.assertFalse((self.p.tree / ".git/rebase-apply").exists())

    def test_advice_after_a_failed_apply_works_end_to_end(self) -> None:
        third = self.break_third_patch()
        advice = self.p.tool("tree", check=False).stderr
        self.assertIn("git add -A && git am --continue", advice)
        self.assertIn("python -m torch_overlay export", advice)
        # The developer follows it: the change by hand (the patch's context is wrong, so
        # `git apply --3way` cannot help), then continue and export.
        ops = self.p.tree / "torch/ops.py"
        ops.write_text(ops.read_text().replace("return a + b", "return b + a"))
        self.p.git("add", "-A")
        self.p.git("am", "--continue")
        self.assertEqual(self.p.git("log", "-2", "--format=%s").splitlines(), ["[ops] Add extra", "[ops] Commute add"])
        refused = self.p.tool("tree", check=False)  # the fix is not exported yet: nothing may reset it
        self.assertEqual(refused.returncode, 2)
        self.assertIn("[ops] Commute add", refused.stderr)
        self.p.tool("export")
        self.assertEqual(len(self.p.series()), 4)
        self.assertIn("-    return a + b", third.read_text())
        head = self.p.git("rev-parse", "HEAD").strip()
        self.p.tool("tree")  # up to date: a no-op that keeps the fix
        self.assertEqual(self.p.git("rev-parse", "HEAD").strip(), head)
        self.p.tool("tree", "--force")  # and the exported series rebuilds to the same content
        self.assertEqual(self.p.git("rev-parse", "HEAD^{tree}"), self.p.git("rev-parse", f"{head}^{{tree}}"))

    def test_uncommitted_edits_block_a_rebuild_unless_forced(self) -> None:
        self.write_two_patches()
        (self.p.tree / "torch/ops.py").write_text("# scratch\n")
        (self.p.patches_dir / "series").write_text("0001-ops-Commute-mul.patch\n")
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("uncommitted changes", result.stderr)
        self.assertIn("torch/ops.py", result.stderr)
        self.assertEqual((self.p.tree / "torch/ops.py").read_text(), "# scratch\n")
        self.p.tool("tree", "--force")
        self.assertIn("return b * a", (self.p.tree / "torch/ops.py").read_text())

    def test_unexported_commits_block_a_rebuild(self) -> None:
        self.write_two_patches()
        self.p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Not exported")
        (self.p.patches_dir / "series").write_text("0001-ops-Commute-mul.patch\n")
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("not in patches/", result.stderr)
        self.assertIn("[ops] Not exported", result.stderr)

    def test_patch_touching_compiled_sources_needs_a_source_build(self) -> None:
        patch = self.p.patches_dir / "0001-aten-change.patch"
        patch.write_text(
            "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            "From: Dev <dev@example.com>\nDate: Fri, 2 Jan 2026 03:04:05 +0000\n"
            "Subject: [PATCH] [aten] Change a kernel\n\n---\n"
            "diff --git a/aten/src/ATen/native/Foo.cpp b/aten/src/ATen/native/Foo.cpp\n"
        )
        (self.p.patches_dir / "series").write_text(patch.name + "\n")
        result = self.p.tool("tree", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertIn("aten/src/ATen/native/Foo.cpp", result.stderr)
        self.assertIn("source build is needed", result.stderr)
        self.assertFalse(self.p.tree.exists())

    def test_second_build_waits_on_the_lock(self) -> None:
        with build_lock(self.p.build_dir):
            proc = subprocess.Popen([sys.executable, "-m", "torch_overlay", "tree"], cwd=self.p.root,
                                    env=self.p.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            seen = wait_for_line(proc, "waiting for")
            self.assertIsNone(proc.poll(), "the second build must wait")
        _, stderr = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, seen + stderr)
        self.assertIn("held by pid", seen)
        self.assertTrue((self.p.tree / "torch/version.py").exists())


class TestSyntheticWheelHelper(unittest.TestCase):
    def test_wheel_pin_matches(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            a = make_wheel(Path(tmp) / "a")
            b = make_wheel(Path(tmp) / "b")
            self.assertEqual(sha256(a), sha256(b))


if __name__ == "__main__":
    unittest.main()
