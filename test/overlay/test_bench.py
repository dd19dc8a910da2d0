"""The bench's measurement helpers on a synthetic base: tree and wheel parts, results schema.

Speed is never asserted here (a synthetic wheel takes milliseconds either way); what is checked
is that each part measures what it claims: both sides of every pair, sha256s, the merge of
results files and the summary table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zipfile
from pathlib import Path

from synthetic import REPO, SyntheticProject

from torch.testing._internal.common_utils import TestCase, run_tests

sys.path.insert(0, str(REPO))
from torch_overlay import bench  # noqa: E402
from torch_overlay.cli import parser  # noqa: E402
from torch_overlay.pin import load_pin  # noqa: E402
from torch_overlay.project import Project  # noqa: E402

SUITE_OUTPUT = """\
running 3 test file(s) against torch 2.9.1+ovl5.gabcdef12 (/x/torch)
PASSED  overlay/test_tree (61.2s)
FAILED  inductor/test_x (3.0s)
    reproduce: TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python test/inductor/test_x.py
SKIPPED test_fake (0.4s)
2 passed, 1 failed
"""


class BenchTestCase(TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        self.p = SyntheticProject(Path(self._tmp.name))
        self.p.tool("tree")
        self.p.commit_edit("torch/ops.py", "return a * b", "return b * a", "[ops] Commute mul")
        self.p.tool("export")
        self.project = Project.at(self.p.root, self.p.cache)
        self.pin = load_pin(self.project.pin_file)

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def measure(self, parts: list[str], repeat: int = 1) -> dict:
        return bench.measure(self.project, self.pin, parts, repeat, None)


class TestParts(BenchTestCase):
    def test_wheel_part_reports_both_builds_their_sha256s_and_a_ratio(self) -> None:
        results = self.measure(["wheel"], repeat=2)
        part = results["parts"]["wheel"]
        self.assertEqual(len(part["sha256"]), 2)
        self.assertEqual(len(part["naive_sha256"]), 2)
        for sha in part["sha256"] + part["naive_sha256"]:
            self.assertRegex(sha, r"^[0-9a-f]{64}$")
        self.assertTrue(part["deterministic"])
        self.assertTrue(part["same_content"])  # the naive build re-deflates the very same members
        self.assertEqual(len(part["build_wheel"]["runs_s"]), 2)
        self.assertGreater(part["naive_over_build_wheel"], 0)
        self.assertRegex(part["wheel_name"], r"^torch-2\.9\.1\+ovl1\.g[0-9a-f]{8}-")
        # The worker's own peak, not the test process's (which has torch imported).
        self.assertGreater(part["peak_rss_mb"]["wheel"], 0)
        self.assertLess(part["peak_rss_mb"]["wheel"], 300)

    def test_tree_part_measures_cold_warm_and_unchanged_and_imports(self) -> None:
        part = self.measure(["tree"])["parts"]["tree"]
        for key in ("cold", "warm", "unchanged"):
            self.assertEqual(len(part[key]["runs_s"]), 1, key)
        self.assertTrue(part["first_import"]["ok"], part["first_import"])
        self.assertEqual(part["first_import"]["patches"], 1)
        self.assertIn("pytorch/pull/", part["source_build_reference"]["source"])
        names = {t["name"] for t in part["targets"]}
        self.assertIn("unchanged re-run (s)", names)

    def test_workspace_is_removed_and_repository_build_untouched(self) -> None:
        before = sorted(p.name for p in self.project.build_dir.iterdir())
        self.measure(["tree"])
        self.assertEqual(sorted(p.name for p in self.project.build_dir.iterdir()), before)
        self.assertEqual([p for p in self.p.cache.iterdir() if p.name.startswith("bench-")], [])

    def test_naive_rezip_keeps_every_member(self) -> None:
        out = Path(self._tmp.name) / "naive.whl"
        bench.naive_rezip(self.p.wheel, out)
        self.assertTrue(bench.same_members(self.p.wheel, out))
        with zipfile.ZipFile(out) as zf:
            self.assertIsNone(zf.testzip())


class TestResults(BenchTestCase):
    def test_schema_merge_table_and_cli(self) -> None:
        out = Path(self._tmp.name) / "benchmarks"
        args = parser().parse_args(["bench", "--only", "wheel", "--repeat", "1", "--output", str(out), "--no-chart"])
        self.assertEqual(bench.selected_parts(args), ["wheel"])
        self.assertIn(bench.run_bench(self.project, self.pin, args), (0, 1))  # 1: synthetic misses targets
        first = json.loads((out / bench.RESULTS_FILE).read_text())
        self.assertEqual(first["schema"], bench.SCHEMA)
        for key in ("cores", "usable_cores", "python", "load_average"):
            self.assertIn(key, first["machine"])
        self.assertIn("date", first)
        self.assertEqual(list(first["parts"]), ["wheel"])
        for t in first["parts"]["wheel"]["targets"]:
            self.assertEqual(set(t), {"name", "value", "op", "limit", "ok"})
        # A later run of another part keeps the wheel part measured before.
        args = parser().parse_args(["bench", "--only", "tree", "--repeat", "1", "--output", str(out), "--no-chart"])
        bench.run_bench(self.project, self.pin, args)
        merged = json.loads((out / bench.RESULTS_FILE).read_text())
        self.assertEqual(list(merged["parts"]), ["tree", "wheel"])
        self.assertEqual(merged["parts"]["wheel"], first["parts"]["wheel"])
        table = bench.markdown_table(merged)
        self.assertIn("| Measure | Result (median) | Target | Met |", table)
        self.assertIn("naive re-deflate", table)
        self.assertIn("cold extraction", table)
        self.assertEqual([title for title, _, _ in bench.chart_panels(merged)], ["custom wheel", "patched tree"])

    def test_default_parts_leave_out_the_suite(self) -> None:
        args = argparse.Namespace(all=False, only=None)
        self.assertNotIn("suite", bench.selected_parts(args))
        self.assertIn("suite", bench.selected_parts(argparse.Namespace(all=True, only=None)))

    def test_parse_suite_output(self) -> None:
        files = bench.parse_suite_output(SUITE_OUTPUT)
        self.assertEqual([f["name"] for f in files], ["overlay/test_tree", "inductor/test_x", "test_fake"])
        self.assertEqual(files[0], {"name": "overlay/test_tree", "status": "PASSED", "seconds": 61.2})
        self.assertEqual(files[1]["status"], "FAILED")


if __name__ == "__main__":
    run_tests()
