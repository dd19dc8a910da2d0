"""`stage --onto` (and `verify against`) on synthetic upstream targets.

The upstream checkout is a clone of a synthetic fork tree's base commit; the later "release" is
a synthetic wheel served to pip from a local find-links directory, pinned by its sha256.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

from synthetic import (
    DEV_GIT_ENV,
    DOUBLE_TEST,
    SOURCES,
    VERSION,
    TAG,
    SyntheticProject,
    TempDirMixin,
    dev_git,
    make_wheel,
    sha256,
)

WRONG_TAIL = b"\n\ndef triple(x):\n    return 3 * x + 1\n\n\ndef quad(x):\n    return 4 * x + 1\n"
BUGGY = {"torch/arith.py": b"def double(x):\n    return x + x + 1\n" + WRONG_TAIL}
FIXED = b"def double(x):\n    return x + x\n" + WRONG_TAIL
RELEASE = "2.10.0"

# The regression tests of the synthetic patches: small unittest files, alike in shape to each other
# and to synthetic.DOUBLE_TEST (a pair `duplicates` lists), each testing its own function.
HALF_TEST = '''\
import unittest

import torch.ops


class TestHalf(unittest.TestCase):
    def test_half(self):
        self.assertEqual(torch.ops.half(4), 2)


if __name__ == "__main__":
    unittest.main()
'''

MULTIPLES_TEST = '''\
import unittest

import torch.arith


class TestMultiples(unittest.TestCase):
    def test_triple(self):
        self.assertEqual(torch.arith.triple(2), 6)

    def test_quad(self):
        self.assertEqual(torch.arith.quad(2), 8)


if __name__ == "__main__":
    unittest.main()
'''

def release_wheel(dest: Path, files: dict[str, bytes]) -> Path:
    """A synthetic torch wheel of version RELEASE (the base's shape, another version)."""
    return make_wheel(dest, version=RELEASE, sources=files)


class StageTestCase(TempDirMixin, unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.p = SyntheticProject(self.tmp, extra=BUGGY)
        self.p.tool("tree")
        self.checkout = self.tmp / "upstream"
        dev_git(self.tmp, "clone", "-q", str(self.p.tree), str(self.checkout))
        # Patch 0001 fixes `double`; 0002 adds `half`. Both carry a regression test.
        self.p.commit_files({"torch/arith.py": FIXED.decode(), "test/arith/test_double.py": DOUBLE_TEST}, "[arith] Fix double\n\n"
                    "Root cause: double added one.\nFix: do not.\n\nFixes #11\n\nTest Plan:\n"
                    "python test/run_test.py -i arith/test_double")
        ops = (self.p.tree / "torch/ops.py").read_text() + "\n\ndef half(a):\n    return a // 2\n"
        self.p.commit_files({"torch/ops.py": ops, "test/test_half.py": HALF_TEST}, "[ops] Add half\n\nFixes #12")
        self.p.tool("export")

    def stage(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = dict(self.p.env(), **DEV_GIT_ENV, **(env or {}))
        return subprocess.run([sys.executable, "-m", "torch_overlay", "stage", *args], cwd=self.p.root,
                              env=full, text=True, capture_output=True)

    def assert_untouched(self, head: str) -> None:
        self.assertEqual(dev_git(self.checkout, "rev-parse", "HEAD"), head)
        self.assertEqual(dev_git(self.checkout, "status", "--porcelain"), "")
        self.assertEqual(len(dev_git(self.checkout, "worktree", "list").splitlines()), 1)


class TestStageOntoCheckout(StageTestCase):
    def test_needed_patches_are_staged_and_upstream_ones_skipped(self) -> None:
        # Upstream already fixed `double` the same way.
        (self.checkout / "torch/arith.py").write_bytes(FIXED)
        dev_git(self.checkout, "commit", "-q", "-am", "Fix double upstream")
        head = dev_git(self.checkout, "rev-parse", "HEAD")
        out = self.tmp / "staged"
        result = self.stage("--onto", str(self.checkout), "-o", str(out))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("ghstack submit", result.stdout)
        self.assertEqual(sorted(p.name for p in out.iterdir()),
                         ["0002-ops-Add-half.md", "0002-ops-Add-half.patch", "README.md", "stage.json"])
        info = json.loads((out / "stage.json").read_text())
        self.assertEqual([p["verdict"] for p in info["patches"]], ["already upstream", "still needed"])
        self.assertIn("reverse-applies", info["patches"][0]["evidence"])
        self.assertEqual(info["patches"][1]["apply"], "applies cleanly")
        body = (out / "0002-ops-Add-half.md").read_text()
        self.assertIn("Fixes #12", body)
        self.assertIn("- `test/test_half.py`", body)
        readme = (out / "README.md").read_text()
        self.assertIn("## Skipped (already upstream)\n\n- 0001-arith-Fix-double.patch: patch already applied", readme)
        # The branch: one commit per needed patch on top of HEAD; the checkout itself unchanged.
        self.assertEqual(dev_git(self.checkout, "log", "--format=%s", f"{head}..overlay-stack"), "[ops] Add half")
        self.assertEqual(dev_git(self.checkout, "log", "-1", "--format=%an", "overlay-stack"), "Dev")
        self.assert_untouched(head)

    def test_everything_upstream_makes_no_branch(self) -> None:
        patches = sorted(str(p) for p in self.p.patches_dir.glob("*.patch"))
        dev_git(self.checkout, "am", "-q", *patches)
        out = self.tmp / "staged"
        result = self.stage("--onto", str(self.checkout), "-o", str(out))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["README.md", "stage.json"])
        self.assertIn("Nothing left to send", (out / "README.md").read_text())
        self.assertNotIn("overlay-stack", dev_git(self.checkout, "branch"))

    def test_pr_body_sections(self) -> None:
        out = self.tmp / "staged"
        self.assertEqual(self.stage("--onto", str(self.checkout), "-o", str(out)).returncode, 0)
        body = (out / "0001-arith-Fix-double.md").read_text()
        self.assertIn("# [arith] Fix double", body)
        self.assertIn("## Root cause\n\nDouble added one.", body)
        self.assertIn("## Fix\n\nDo not.", body)
        self.assertIn("python test/run_test.py -i arith/test_double", body)

    def test_dirty_checkout_is_refused(self) -> None:
        head = dev_git(self.checkout, "rev-parse", "HEAD")
        (self.checkout / "torch/ops.py").write_text("# local edit\n")
        result = self.stage("--onto", str(self.checkout), "-o", str(self.tmp / "staged"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("uncommitted changes (torch/ops.py)", result.stderr)
        self.assertFalse((self.tmp / "staged").exists())
        self.assertNotIn("overlay-stack", dev_git(self.checkout, "branch"))
        self.assertEqual(dev_git(self.checkout, "rev-parse", "HEAD"), head)

    def test_conflicting_patch_stops_everything(self) -> None:
        (self.checkout / "torch/arith.py").write_text("def double(x):\n    return 2 * x\n")
        dev_git(self.checkout, "commit", "-q", "-am", "Fixed differently")
        head = dev_git(self.checkout, "rev-parse", "HEAD")
        result = self.stage("--onto", str(self.checkout), "-o", str(self.tmp / "staged"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("0001-arith-Fix-double.patch", result.stderr)
        self.assertIn("nothing was staged", result.stderr)
        self.assertFalse((self.tmp / "staged").exists())
        self.assertEqual(list(self.tmp.glob(".staged-*")), [])
        self.assertNotIn("overlay-stack", dev_git(self.checkout, "branch"))
        self.assert_untouched(head)

    def test_not_a_checkout(self) -> None:
        plain = self.tmp / "plain"
        (plain / "torch").mkdir(parents=True)
        result = self.stage("--onto", str(plain), "-o", str(self.tmp / "staged"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("not an upstream PyTorch checkout", result.stderr)
        result = self.stage("--onto", "not-a-version", "-o", str(self.tmp / "staged"))
        self.assertIn("neither an upstream checkout directory nor a release version", result.stderr)

    def test_existing_branch_and_nonempty_output_are_refused(self) -> None:
        dev_git(self.checkout, "branch", "overlay-stack")
        result = self.stage("--onto", str(self.checkout), "-o", str(self.tmp / "staged"))
        self.assertIn("branch overlay-stack already exists", result.stderr)
        (self.tmp / "full").mkdir()
        (self.tmp / "full" / "x").write_text("")
        result = self.stage("--onto", str(self.checkout), "-o", str(self.tmp / "full"), "--branch", "other")
        self.assertIn("exists and is not empty", result.stderr)


class TestStageOntoBase(StageTestCase):
    """A second base, RELEASE, with its own series: `double` is fixed there (its patch dropped), and
    `half` is carried, forward-ported as the new series' 0001."""

    def setUp(self) -> None:
        super().setUp()
        self.p.add_base(RELEASE, {**SOURCES, **BUGGY, "torch/arith.py": FIXED})
        self.series_dir = self.p.root / "patches" / RELEASE
        self.series_dir.mkdir()
        shutil.copyfile(self.p.patches_dir / "0002-ops-Add-half.patch", self.series_dir / "0001-ops-Add-half.patch")
        self.write_series("0001-ops-Add-half.patch\n")

    def write_series(self, carried: str) -> None:
        (self.series_dir / "series").write_text(
            carried + "# dropped: 0001-arith-Fix-double.patch (upstream in 2.10.0: its tests pass there)\n")

    def test_its_own_series_is_proven_staged_and_applies_in_order(self) -> None:
        out = self.tmp / "staged"
        result = self.stage("--onto", RELEASE, "-o", str(out))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(p.name for p in out.iterdir()),
                         ["0001-ops-Add-half.md", "0001-ops-Add-half.patch", "README.md", "stage.json"])
        info = json.loads((out / "stage.json").read_text())
        self.assertEqual([(p["verdict"], p["staged"]) for p in info["patches"]], [("ok", True)])
        self.assertIn(f"on torch {RELEASE}: stock fail", info["patches"][0]["evidence"])
        self.assertEqual(info["dropped"], [{"file": "0001-arith-Fix-double.patch",
                                            "why": "upstream in 2.10.0: its tests pass there"}])
        self.assertIn("- 0001-arith-Fix-double.patch: dropped from the series: upstream in 2.10.0",
                      (out / "README.md").read_text())
        body = (out / "0001-ops-Add-half.md").read_text()
        self.assertIn("They fail without the fix and pass with it (on torch 2.10.0: stock fail", body)
        self.assertIn("## Release cherry-pick\n\nNot assessed (0001-ops-Add-half.patch: needs exactly one `Impact:`",
                      body)
        # What upstream gets applies with plain `git am` onto a repository of the release's sources.
        base_tree = self.p.root / "build" / RELEASE / "tree"
        first = dev_git(base_tree, "rev-list", "--max-parents=0", "HEAD")
        sources = self.tmp / "release-sources"
        dev_git(self.tmp, "clone", "-q", "--no-checkout", str(base_tree), str(sources))
        dev_git(sources, "checkout", "-q", "--detach", first)
        dev_git(sources, "am", "-q", str(out / "0001-ops-Add-half.patch"))
        self.assertIn("def half", (sources / "torch/ops.py").read_text())
        self.assertEqual(len(dev_git(base_tree, "worktree", "list").splitlines()), 1)  # the check's is gone

    def test_a_patch_whose_proof_fails_is_not_staged_and_the_others_are(self) -> None:
        # A test-only patch whose test the release already passes: it proves nothing there.
        scratch = self.tmp / "scratch"
        (scratch / "test" / "arith").mkdir(parents=True)
        (scratch / "test" / "arith" / "test_double.py").write_text(DOUBLE_TEST)
        dev_git(scratch, "init", "-q")
        dev_git(scratch, "add", "-A")
        dev_git(scratch, "commit", "-q", "-m", "[arith] Test double")
        made = dev_git(scratch, "format-patch", "-1", "-o", str(self.tmp / "made"))
        shutil.copyfile(made, self.series_dir / "0002-arith-Test-double.patch")
        self.write_series("0001-ops-Add-half.patch\n0002-arith-Test-double.patch\n")
        out = self.tmp / "staged"
        result = self.stage("--onto", RELEASE, "-o", str(out))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(sorted(p.name for p in out.glob("*.patch")), ["0001-ops-Add-half.patch"])
        self.assertIn("- 0002-arith-Test-double.patch: passes on stock", (out / "README.md").read_text())


class TestAgainstRelease(StageTestCase):
    """A later release that fixed `double` but has no `half`: fetched with pip from find-links."""

    def setUp(self) -> None:
        super().setUp()
        files = dict(SOURCES, **BUGGY)
        files["torch/arith.py"] = FIXED
        self.links = self.tmp / "links"
        self.wheel = release_wheel(self.links, files)
        self.pip_env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.links), "PIP_CONFIG_FILE": os.devnull}

    def pin_release(self, sha: str) -> None:
        with (self.p.root / "overlay.toml").open("a") as f:
            f.write(f'\n[upstream.wheels."{RELEASE}"]\n"{TAG}" = "{sha}"\n')

    def tool(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "torch_overlay", *args], cwd=self.p.root,
                              env=dict(self.p.env(), **DEV_GIT_ENV, **self.pip_env), text=True, capture_output=True)

    def test_drift_verdicts_are_recorded_and_the_release_is_deleted(self) -> None:
        self.pin_release(sha256(self.wheel))
        result = self.tool("verify", "against", RELEASE, "--record")
        self.assertEqual(result.returncode, 0, result.stderr)
        recorded = json.loads((self.p.root / "benchmarks" / "drift.json").read_text())["releases"][RELEASE]
        verdicts = {p["id"]: (p["tests_pass"], p["applies"], p["reverse_applies"], p["verdict"])
                    for p in recorded["patches"]}
        self.assertEqual(verdicts, {"0001": (True, False, True, "already upstream"),
                                    "0002": (False, True, False, "still needed")})
        self.assertEqual(recorded["wheel"]["sha256"], sha256(self.wheel))
        self.assertFalse((self.p.cache / "base" / sha256(self.wheel)[:16]).exists())
        self.assertFalse((self.p.cache / "wheels" / self.wheel.name).exists())
        self.assertFalse(any((self.p.build_dir / "verify").glob("stock-*")))

    def test_a_release_with_upstreams_part_of_a_fix_is_told_apart_case_by_case(self) -> None:
        """0003 fixes triple and quad; the release fixed triple only: one case is beyond upstream."""
        arith = (self.p.tree / "torch/arith.py").read_text()
        fixed_both = arith.replace("3 * x + 1", "3 * x").replace("4 * x + 1", "4 * x")
        self.p.commit_files({"torch/arith.py": fixed_both, "test/arith/test_multiples.py": MULTIPLES_TEST},
                            "[arith] Fix triple and quad")
        self.p.tool("export")
        release_files = dict(SOURCES, **{"torch/arith.py": FIXED.replace(b"3 * x + 1", b"3 * x")})
        self.wheel = release_wheel(self.links, release_files)
        self.pin_release(sha256(self.wheel))
        result = self.tool("verify", "against", RELEASE, "--record")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("0003: beyond upstream: test/arith/test_multiples.py::TestMultiples::test_quad", result.stdout)
        recorded = {p["id"]: p for p in json.loads((self.p.root / "benchmarks" / "drift.json").read_text())["releases"][RELEASE]["patches"]}
        self.assertEqual(recorded["0003"]["verdict"], "partly upstream")
        self.assertEqual(recorded["0003"]["fixed_upstream"], ["test/arith/test_multiples.py::TestMultiples::test_triple"])
        self.assertEqual(recorded["0003"]["beyond_upstream"], ["test/arith/test_multiples.py::TestMultiples::test_quad"])
        self.assertEqual(recorded["0001"]["beyond_upstream"], [])
        self.assertEqual(recorded["0002"]["beyond_upstream"], ["test/test_half.py::TestHalf::test_half"])

    def test_stage_onto_release(self) -> None:
        self.pin_release(sha256(self.wheel))
        out = self.tmp / "staged"
        result = self.tool("stage", "--onto", RELEASE, "-o", str(out))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(sorted(p.name for p in out.glob("*.patch")), ["0002-ops-Add-half.patch"])
        readme = (out / "README.md").read_text()
        self.assertIn("0001-arith-Fix-double.patch: tests pass 1/1; patch already applied", readme)

    def test_wheel_failing_its_hash_is_refused(self) -> None:
        self.pin_release("0" * 64)
        result = self.tool("stage", "--onto", RELEASE, "-o", str(self.tmp / "staged"))
        self.assertEqual(result.returncode, 3)
        self.assertIn("does not match the pin", result.stderr)
        self.assertFalse((self.tmp / "staged").exists())
        self.assertFalse((self.p.cache / "base" / sha256(self.wheel)[:16]).exists())

    def test_unknown_version_lists_the_pinned_ones(self) -> None:
        self.pin_release(sha256(self.wheel))
        result = self.tool("verify", "against", "9.9.9")
        self.assertEqual(result.returncode, 2)
        self.assertIn("torch 9.9.9 is not pinned", result.stderr)
        self.assertIn(f"(pinned: {VERSION}, {RELEASE})", result.stderr)  # the base and the release


if __name__ == "__main__":
    unittest.main()
