"""The bench's measurement helpers on a synthetic base: tree and wheel parts, results schema.

Speed is never asserted here (a synthetic wheel takes milliseconds either way); what is checked
is that each part measures what it claims: both sides of every pair, sha256s, the merge of
results files and the summary table.
"""

from __future__ import annotations

import json
import sys
import unittest
import zipfile

from synthetic import REPO, TempDirMixin, project_with_a_patch

sys.path.insert(0, str(REPO))
from torch_overlay import bench  # noqa: E402
from torch_overlay.bench import compiletime  # noqa: E402
from torch_overlay.bench.chart import chart_panels  # noqa: E402
from torch_overlay.bench.parts import PARTS  # noqa: E402
from torch_overlay.bench.results import BenchRecord  # noqa: E402
from torch_overlay.bench.rezip import naive_rezip, same_members  # noqa: E402
from torch_overlay.bench.runner import PROGRAMS_DIR  # noqa: E402
from torch_overlay.bench.suite import parse_suite_output  # noqa: E402
from torch_overlay.bench.targets import (  # noqa: E402
    RECOMPILE_COMPILES,
    SUITE_WALL,
    TRAINING_EQUAL,
    WHEEL_SPEEDUP,
)
from torch_overlay.cli import bench_options, cmd_bench, parser  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.project import Cache, Project  # noqa: E402
from torch_overlay.pinning.pin import load_pin  # noqa: E402

SUITE_OUTPUT = """\
running 3 test file(s) against torch 2.9.1+ovl5.gabcdef12 (/x/torch)
PASSED  overlay/test_tree (61.2s)
FAILED  inductor/test_x (3.0s)
    reproduce: TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) python test/inductor/test_x.py
SKIPPED test_fake (0.4s)
2 passed, 1 failed
"""


class BenchTestCase(TempDirMixin, unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self.p = project_with_a_patch(self.tmp)
        self.project = Project.at(self.p.root, Cache(self.p.cache))
        self.pin = load_pin(self.project.pin_file, self.project.base)

    def measure(self, parts: list[str], repeat: int = 1) -> dict:
        """The measured parts, as `bench --json` prints them."""
        return bench.measure(self.project, self.pin, bench.BenchOptions(parts=tuple(parts), repeat=repeat)).to_json()


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
        # The ratio is the medians' (to one decimal, so a synthetic wheel's millisecond naive
        # re-deflate can show as 0.0): checked against the runs reported, not for speed.
        medians = part["naive"]["median_s"] / part["build_wheel"]["median_s"]
        self.assertAlmostEqual(part["naive_over_build_wheel"], medians, delta=0.1)
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
        out = self.tmp / "naive.whl"
        naive_rezip(self.p.wheel, out)
        self.assertTrue(same_members(self.p.wheel, out))
        with zipfile.ZipFile(out) as zf:
            self.assertIsNone(zf.testzip())


class TestResults(BenchTestCase):
    def test_schema_merge_table_and_cli(self) -> None:
        out = self.tmp / "benchmarks"
        args = parser().parse_args(["bench", "--only", "wheel", "--repeat", "1", "--output", str(out), "--no-chart"])
        self.assertEqual(bench.select_parts(args.only), ("wheel",))
        self.assertIn(cmd_bench(self.project, self.pin, args), (0, 1))  # 1: synthetic misses targets
        first = json.loads((out / bench.RESULTS_FILE).read_text())
        self.assertEqual(first["schema"], BenchRecord.SCHEMA)
        for key in ("cores", "usable_cores", "python", "load_average"):
            self.assertIn(key, first["machine"])
        self.assertIn("date", first)
        self.assertEqual(list(first["parts"]), ["wheel"])
        for t in first["parts"]["wheel"]["targets"]:
            self.assertEqual(set(t), {"name", "value", "op", "limit", "ok"})
        # A later run of another part keeps the wheel part measured before.
        args = parser().parse_args(["bench", "--only", "tree", "--repeat", "1", "--output", str(out), "--no-chart"])
        cmd_bench(self.project, self.pin, args)
        merged = json.loads((out / bench.RESULTS_FILE).read_text())
        self.assertEqual(list(merged["parts"]), ["tree", "wheel"])
        self.assertEqual(merged["parts"]["wheel"], first["parts"]["wheel"])
        table = bench.render_table(BenchRecord.from_json(merged))
        self.assertIn("| Measure | Result (median) | Target | Met |", table)
        self.assertIn("naive re-deflate", table)
        self.assertIn("cold extraction", table)
        self.assertEqual([title for title, _, _ in chart_panels(BenchRecord.from_json(merged))],
                         ["custom wheel", "patched tree"])

    def test_default_parts_leave_out_the_suite(self) -> None:
        self.assertNotIn("suite", bench.select_parts())
        self.assertIn("suite", bench.select_parts(every=True))
        self.assertNotIn("suite", bench.select_parts(parser().parse_args(["bench"]).only))

    def test_full_tier_is_every_part_and_every_optimizer_configuration(self) -> None:
        def options(*args: str) -> tuple[tuple[str, ...], bool]:
            chosen = bench_options(parser().parse_args(["bench", *args]))
            return chosen.parts, chosen.every_config

        self.assertEqual(options(), (bench.DEFAULT_PARTS, False))
        self.assertEqual(options("--tier", "full"), (bench.PART_NAMES, True))
        self.assertEqual(options("--tier", "full", "--only", "kernels"), (("kernels",), True))  # --only narrows

    def test_parse_suite_output(self) -> None:
        files = parse_suite_output(SUITE_OUTPUT)
        self.assertEqual([f["name"] for f in files], ["overlay/test_tree", "inductor/test_x", "test_fake"])
        self.assertEqual(files[0], {"name": "overlay/test_tree", "status": "PASSED", "seconds": 61.2})
        self.assertEqual(files[1]["status"], "FAILED")


class TestDefinitions(unittest.TestCase):
    """Torch-free: each claim, part and program is defined once, where the tables and runs find it."""

    def test_each_target_states_its_limit_as_it_checks_it(self) -> None:
        self.assertEqual(SUITE_WALL.shown, "<= 30 min")
        self.assertEqual(SUITE_WALL.check(320.4).to_json(), {"name": "suite wall time (s)", "value": 320.4,
                                                             "op": "<=", "limit": 1800, "ok": True})
        self.assertEqual(WHEEL_SPEEDUP.shown, ">= 10x")
        self.assertFalse(WHEEL_SPEEDUP.check(9.9).ok)
        self.assertEqual(TRAINING_EQUAL.shown, "equal to eager")
        self.assertEqual(RECOMPILE_COMPILES.at(form="alpha").check(2).name, "alpha: overlay compiles")
        self.assertEqual(RECOMPILE_COMPILES.shown, "<= 2 compiles")

    def test_every_part_name_has_one_implementation_in_order(self) -> None:
        self.assertEqual(tuple(PARTS), bench.PART_NAMES)

    def test_subprocess_programs_are_files(self) -> None:
        for name in ("compiled_step", "training_loop", "import_torch", "kernel_metrics", "first_step"):
            self.assertTrue((PROGRAMS_DIR / f"{name}.py").is_file(), name)

    def test_repeat_below_one_is_refused(self) -> None:
        with self.assertRaisesRegex(OverlayError, "--repeat must be at least 1"):
            bench.BenchOptions(repeat=0)

    def test_compiletime_row_states_both_sides_the_ratios_and_the_pair_spreads(self) -> None:
        def runs(*timings: tuple[int, float, float, float, float]) -> list[dict[str, object]]:
            keys = ("compiles", "first_step_s", "first_step_cpu_s", "steady_step_s", "steady_step_min_s")
            return [{"torch": "2.9.1", **dict(zip(keys, t, strict=True))} for t in timings]

        stock = runs((2, 100.0, 120.0, 0.20, 0.19), (2, 110.0, 130.0, 0.30, 0.21))
        overlay = runs((2, 101.0, 126.0, 0.21, 0.19), (2, 112.0, 130.0, 0.27, 0.22))
        entry = compiletime.compare({"stock": stock, "overlay": overlay})
        part = {"runs": {"resnet18 constant": entry}}
        [row] = compiletime.rows(part, compiletime.judge("resnet18 constant", "constant", entry))
        self.assertEqual(row.result, "first step 125.0 s vs 128.0 s CPU (1.024x, pairs 1.00-1.05x; wall 1.014x); "
                                     "fastest steady step 0.20 s vs 0.20 s (1.025x, pairs 1.00-1.05x; medians 0.960x); "
                                     "2 vs 2 compiles")
        # The fastest steady step decides the steady-state target (1.025x > 1.02x), not the medians' 0.960x.
        self.assertEqual((row.target, row.met), ("<= 1.05x, <= 1.02x, compiles <= stock", "**no**"))
        slow_medians = runs((2, 101.0, 126.0, 0.40, 0.19), (2, 112.0, 130.0, 0.40, 0.21))
        entry = compiletime.compare({"stock": stock, "overlay": slow_medians})
        [row] = compiletime.rows(part, compiletime.judge("resnet18 constant", "constant", entry))
        self.assertEqual(row.met, "yes")
        # One more compile than stock with a constant lr misses the row, whatever the timings.
        one_more_compile = runs((3, 100.0, 120.0, 0.20, 0.19), (2, 110.0, 130.0, 0.30, 0.21))
        entry = compiletime.compare({"stock": stock, "overlay": one_more_compile})
        judged = compiletime.judge("gpt2 constant", "constant", entry)
        [row] = compiletime.rows({"runs": {"gpt2 constant": entry}}, judged)
        self.assertEqual(row.met, "**no**")

    def test_compiletime_ratio_far_below_one_keeps_its_digits(self) -> None:
        # Under OneCycleLR stock's later steps recompile: the overlay's step is a tiny fraction of one.
        def runs(steady: float) -> list[dict[str, object]]:
            return [{"torch": "2.9.1", "compiles": 3, "first_step_s": 90.0, "first_step_cpu_s": 90.0,
                     "steady_step_s": steady, "steady_step_min_s": steady}]

        entry = compiletime.compare({"stock": runs(20.9), "overlay": runs(0.0088)})
        self.assertEqual(entry["steady_step_s_overlay_over_stock"], 0.0004211)
        judged = compiletime.judge("gpt2 onecycle", "onecycle", entry)
        [row] = compiletime.rows({"runs": {"gpt2 onecycle": entry}}, judged)
        self.assertIn("(0.00042x, pairs 0.00042-0.00042x; medians 0.00042x)", row.result)


if __name__ == "__main__":
    unittest.main()
