"""`verify patches`: the proof matrix on a synthetic base (stock tree vs overlay tree, same interpreter).

The synthetic `torch` package is importable from a tree directory, so the regression test
files below import it the way the real ones import torch; `verify patches` chooses which tree they
see with PYTHONPATH.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import SyntheticProject

BUGGY = {"torch/arith.py": b"def double(x):\n    return x + x + 1\n"}

# A regression test for the `double` bug; the second test checks that every run gets its own
# empty inductor cache (it leaves a file behind, which a shared cache would show next time) and
# no CI flag (torch.testing would then demand xmlrunner).
DOUBLE_TEST = '''\
import os
import unittest

import torch.arith


class TestDouble(unittest.TestCase):
    def test_double(self):
        self.assertEqual(torch.arith.double(2), 4)

    def test_own_inductor_cache(self):
        self.assertNotIn("CI", os.environ)
        cache = os.environ["TORCHINDUCTOR_CACHE_DIR"]
        self.assertEqual(os.listdir(cache), [])
        open(os.path.join(cache, "written"), "w").close()


if __name__ == "__main__":
    unittest.main()
'''

# Passes with or without any fix: it cannot catch a bug.
WEAK_TEST = '''\
import unittest

import torch.ops


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(torch.ops.add(1, 2), 3)


if __name__ == "__main__":
    unittest.main()
'''


class TestVerify(unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.p = SyntheticProject(Path(self._tmp.name), extra=BUGGY)
        self.p.tool("tree")

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def add_fix(self) -> None:
        fixed = (self.p.tree / "torch/arith.py").read_text().replace("x + x + 1", "x + x")
        self.p.commit_files({"torch/arith.py": fixed, "test/arith/test_double.py": DOUBLE_TEST}, "[arith] Fix double")

    def verify(self, *args: str):
        result = self.p.tool("verify", "patches", *args, check=False)
        return result

    def test_runs_under_a_ci_system(self) -> None:
        self.add_fix()
        self.p.tool("export")
        result = subprocess.run([sys.executable, "-m", "torch_overlay", "verify", "patches"], cwd=self.p.root,
                                env=dict(self.p.env(), CI="true"), capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_fix_with_catching_test_is_ok_and_stock_tree_is_removed(self) -> None:
        self.add_fix()
        self.p.tool("export")
        result = self.verify()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        row = next(line for line in result.stdout.splitlines() if line.startswith("0001"))
        self.assertEqual(row.split()[1:], ["fail", "1/2", "pass", "2/2", "ok"])
        self.assertFalse(any((self.p.build_dir / "verify").glob("stock-*")))

    def test_test_passing_on_stock_fails_verify_and_names_the_patch(self) -> None:
        self.add_fix()
        self.p.commit_files({"test/test_add.py": WEAK_TEST}, "[ops] Add a weak test")
        self.p.tool("export")
        result = self.verify()
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("0002-ops-Add-a-weak-test.patch: passes on stock: test does not catch the bug", result.stdout)
        self.assertRegex(result.stdout, r"(?m)^0001 .* ok$")

    def test_json_and_patch_selection(self) -> None:
        self.add_fix()
        self.p.commit_files({"test/test_add.py": WEAK_TEST}, "[ops] Add a weak test")
        self.p.tool("export")
        result = self.verify("--json", "-p", "0001", "--keep")
        self.assertEqual(result.returncode, 0, result.stderr)
        info = json.loads(result.stdout)
        self.assertTrue(info["ok"])
        [patch] = info["patches"]
        self.assertEqual((patch["id"], patch["verdict"]), ("0001", "ok"))
        self.assertEqual([r["outcome"] for r in patch["stock"]], ["fail"])
        self.assertEqual([r["outcome"] for r in patch["overlay"]], ["pass"])
        # --keep: the stock tree stays, made of hard links into the cache, without test files.
        stock = self.p.build_dir / "verify" / "stock-2.9.1"
        cached = next((self.p.cache / "base").glob("*/torch/arith.py"))
        self.assertEqual((stock / "torch/arith.py").stat().st_ino, cached.stat().st_ino)
        self.assertFalse((stock / "test").exists())
        self.assertIn("x + x + 1", cached.read_text())  # the cache is never patched

    def test_fix_that_does_not_make_its_test_pass_is_reported(self) -> None:
        self.p.commit_files({"test/arith/test_double.py": DOUBLE_TEST}, "[arith] Test without the fix")
        self.p.tool("export")
        result = self.verify()
        self.assertEqual(result.returncode, 1)
        self.assertIn("fails on overlay", result.stdout)

    def test_unknown_patch_id(self) -> None:
        result = self.verify("-p", "0042")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no patch 0042", result.stderr)


if __name__ == "__main__":
    unittest.main()
