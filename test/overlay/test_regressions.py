"""The differential gate (`verify gate`): per-case verdicts, flakiness, tiers, the real corpus.

The mechanics run on a synthetic base whose corpus has one case of every kind (passing on both
sides, fixed by the series, broken by it, flaky on stock, full tier only); the last class runs
the real corpus (`test/differential`) on stock 2.9.1 and on the overlay: nothing that passes
on stock may fail on the overlay.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from synthetic import REPO, SyntheticProject

sys.path.insert(0, str(REPO))
from torch_overlay import readme  # noqa: E402
from torch_overlay.core import shards  # noqa: E402
from torch_overlay.core.outcomes import CaseOutcome, CaseVerdict  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.proofs import regressions  # noqa: E402
from torch_overlay.proofs.gate_record import GateRecord  # noqa: E402
from torch_overlay.proofs.regressions import case_verdict  # noqa: E402
from torch_overlay.proofs.testrun import Report, read_report  # noqa: E402

BUGGY = {"torch/arith.py": b"def double(x):\n    return x + x + 1\n\n\ndef triple(x):\n    return 3 * x\n"}

CORPUS = '''\
import os
import unittest
from pathlib import Path

import torch
import torch.arith

STOCK = "stock-" in torch.__file__


class TestArith(unittest.TestCase):
    def test_add(self):
        self.assertEqual(torch.ops.add(2, 2), 4)

    def test_double(self):  # wrong on the base, fixed by the series
        self.assertEqual(torch.arith.double(2), 4)

    def test_triple(self):  # right on the base, broken by the series
        self.assertEqual(torch.arith.triple(2), 6)

    def test_both_wrong(self):
        self.assertEqual(torch.ops.mul(2, 2), 5)

    def test_flaky_on_stock(self):  # fails the first time it runs on stock only
        marker = Path(os.environ["FLAKY_DIR"]) / "ran-on-stock"
        if STOCK and not marker.exists():
            marker.touch()
            self.fail("first run on stock")

    def test_flaky_like_a_regression(self):  # fails on the overlay; passes on stock the first time only
        marker = Path(os.environ["FLAKY_DIR"]) / "passed-on-stock"
        if STOCK and not marker.exists():
            marker.touch()
            return
        self.fail("every run but stock's first")

    @unittest.skipUnless(os.environ.get("PYTORCH_TEST_WITH_SLOW") == "1", "full tier only")
    def test_full_tier_only(self):
        self.assertEqual(torch.ops.add(1, 1), 2)
'''


MORE_CORPUS = """
import unittest


class TestMore(unittest.TestCase):
    def test_more(self):
        pass

    # extra


if __name__ == "__main__":
    unittest.main()
"""


# Cases run in name order: one before the crash, one that kills its process, one after it.
CRASHING_CORPUS = """
import ctypes
import unittest

import torch.arith


class TestCrash(unittest.TestCase):
    def test_a_before(self):
        pass

    def test_b_segfault(self):  # as a crash in compiled code does, on both sides
        ctypes.string_at(0)

    def test_c_after(self):  # wrong on the base, fixed by the series
        self.assertEqual(torch.arith.double(2), 4)
"""

# A case that never ends on either side (as a hung compile would): the timeout stops the run there.
HANGING_CORPUS = """
import threading
import unittest


class TestHang(unittest.TestCase):
    def test_a_before(self):
        pass

    def test_b_hangs(self):
        threading.Event().wait()

    def test_c_never_reached(self):
        pass
"""


# Failures that name their upstream issue (`[upstream #N]`, as the real corpus's known bugs do).
UPSTREAM_CORPUS = """
import unittest

import torch.arith


class TestKnown(unittest.TestCase):
    def test_known_on_both(self):
        raise AssertionError("[upstream #4242] wrong on both sides")

    def test_known_and_fixed(self):  # wrong on the base, fixed by the series
        if torch.arith.double(2) != 4:
            raise AssertionError("[upstream #4343] double is off by one")

    def test_unknown_on_both(self):
        self.fail("no issue named")
"""


# Where the gate's record lists each case, as its table names it.
RECORD_NAME = Path("benchmarks") / "regressions.json"


def render(data: dict[str, Any]) -> str:
    """The gate's table of a record `verify gate --json` printed."""
    return regressions.render(GateRecord.from_json(data), RECORD_NAME)


def render_gate(data: dict[str, Any]) -> str:
    """The README's gate section of a record `verify gate --json` printed."""
    return readme.render_gate(GateRecord.from_json(data), RECORD_NAME)


def recorded(p: SyntheticProject) -> dict[str, Any]:
    """The gate record `verify gate --record` wrote."""
    return json.loads(Project.at(p.root).gate_record_file.read_text())


def case(verdict_cases: list[dict[str, object]], name: str) -> dict[str, object]:
    return next(c for c in verdict_cases if c["case"] == f"TestArith::{name}")


class TestClassify(unittest.TestCase):
    """Verdicts from each side's outcomes (first run, then re-runs)."""

    def test_agreement_and_direction(self) -> None:
        self.assertEqual(case_verdict([CaseOutcome.PASSED], [CaseOutcome.PASSED]), CaseVerdict.AGREE_PASS)
        self.assertEqual(case_verdict([CaseOutcome.FAILED], [CaseOutcome.FAILED]), CaseVerdict.AGREE_FAIL)
        self.assertEqual(case_verdict([CaseOutcome.FAILED, CaseOutcome.FAILED, CaseOutcome.FAILED], [CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED]), CaseVerdict.FIXED)
        self.assertEqual(case_verdict([CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED], [CaseOutcome.FAILED, CaseOutcome.FAILED, CaseOutcome.FAILED]), CaseVerdict.REGRESSED)

    def test_a_case_the_overlay_skips_or_loses_is_a_regression(self) -> None:
        self.assertEqual(case_verdict([CaseOutcome.PASSED], [CaseOutcome.SKIPPED]), CaseVerdict.REGRESSED)
        self.assertEqual(case_verdict([CaseOutcome.PASSED], [CaseOutcome.MISSING]), CaseVerdict.REGRESSED)
        self.assertEqual(case_verdict([CaseOutcome.SKIPPED], [CaseOutcome.SKIPPED]), CaseVerdict.SKIPPED)
        self.assertEqual(case_verdict([CaseOutcome.MISSING], [CaseOutcome.PASSED]), CaseVerdict.ONE_SIDED)

    def test_flakiness_is_named_by_side(self) -> None:
        self.assertEqual(case_verdict([CaseOutcome.FAILED, CaseOutcome.PASSED, CaseOutcome.PASSED], [CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED]), CaseVerdict.FLAKY_STOCK)
        self.assertEqual(case_verdict([CaseOutcome.FAILED, CaseOutcome.FAILED, CaseOutcome.FAILED], [CaseOutcome.PASSED, CaseOutcome.FAILED, CaseOutcome.PASSED]), CaseVerdict.FLAKY_OVERLAY)

    def test_a_failure_only_some_overlay_runs_show_is_a_regression(self) -> None:
        self.assertEqual(case_verdict([CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED], [CaseOutcome.FAILED, CaseOutcome.PASSED, CaseOutcome.FAILED]), CaseVerdict.REGRESSED)
        self.assertEqual(case_verdict([CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED], [CaseOutcome.FAILED, CaseOutcome.PASSED, CaseOutcome.PASSED]), CaseVerdict.REGRESSED)
        self.assertEqual(case_verdict([CaseOutcome.PASSED, CaseOutcome.PASSED, CaseOutcome.PASSED], [CaseOutcome.PASSED, CaseOutcome.SKIPPED, CaseOutcome.PASSED]), CaseVerdict.REGRESSED)

    @staticmethod
    def junit_report(testcases: str) -> Report:
        """`read_report` of a pytest JUnit file holding these `<testcase>` elements."""
        with tempfile.TemporaryDirectory() as tmp:
            xml = Path(tmp) / "r.xml"
            xml.write_text(f'<testsuites><testsuite name="pytest">{testcases}</testsuite></testsuites>')
            report = read_report(xml)
        assert report is not None
        return report

    def test_junit_outcomes(self) -> None:
        report = self.junit_report(
            '<testcase classname="test_x.TestXCPU" name="test_a_cpu"/>'
            '<testcase classname="test_x.TestXCPU" name="test_b_cpu"><failure message="x"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_c_cpu"><error message="x"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_d_cpu"><skipped message="x"/></testcase>')
        self.assertEqual(report.cases, {"TestXCPU::test_a_cpu": CaseOutcome.PASSED, "TestXCPU::test_b_cpu": CaseOutcome.FAILED,
                                        "TestXCPU::test_c_cpu": CaseOutcome.FAILED, "TestXCPU::test_d_cpu": CaseOutcome.SKIPPED})

    def test_failure_messages_and_their_upstream_issue(self) -> None:
        messages = self.junit_report(
            '<testcase classname="test_x.TestXCPU" name="test_a_cpu"/>'
            '<testcase classname="test_x.TestXCPU" name="test_b_cpu">'
            '<failure message="AssertionError: [upstream #123] out0 differs"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_c_cpu"><error message="[upstream #7] x"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_d_cpu">'
            '<failure message="AssertionError: see [upstream #9]"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_e_cpu">'
            '<failure message="AssertionError: [upstream cpp-meta-kernel2] x"/></testcase>'
            '<testcase classname="test_x.TestXCPU" name="test_f_cpu">'
            '<failure message="AssertionError: [upstream Not A Reason] x"/></testcase>').messages
        self.assertEqual(set(messages), {f"TestXCPU::test_{c}_cpu" for c in "bcdef"})
        # only a message that starts with the tag (after the exception's type) names an issue, or a
        # reason in lower case, digits and dashes
        self.assertEqual(regressions.upstream_tags(messages),
                         {"TestXCPU::test_b_cpu": "#123", "TestXCPU::test_c_cpu": "#7",
                          "TestXCPU::test_e_cpu": "cpp-meta-kernel2"})


def gate_project(root: Path) -> SyntheticProject:
    """A synthetic base and series (double fixed, triple broken) with CORPUS as its one part."""
    p = SyntheticProject(root, extra=BUGGY)
    p.tool("tree")
    p.commit_edit("torch/arith.py", "x + x + 1", "x + x", "[arith] Fix double")
    p.commit_edit("torch/arith.py", "3 * x", "3 * x + 1", "[arith] Break triple")
    p.tool("export")
    corpus = p.root / "test" / "differential"
    corpus.mkdir(parents=True)
    (corpus / "test_arith.py").write_text(CORPUS)
    return p


def run_gate(p: SyntheticProject, *args: str) -> subprocess.CompletedProcess[str]:
    """`verify gate --json ARGS`, with the flaky case's marker fresh for this run."""
    with tempfile.TemporaryDirectory() as flaky:
        return p.tool("verify", "gate", "--json", *args, check=False, FLAKY_DIR=flaky)


class TestSyntheticGate(unittest.TestCase):
    """`verify gate` end to end on a synthetic base and series, real pytest runs."""

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        cls.p = gate_project(Path(cls._tmp.name))

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()

    def gate(self, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
        result = run_gate(self.p, *args)
        return result, json.loads(result.stdout) if result.stdout.strip() else {}

    def test_fast_tier_classifies_every_case_and_fails_on_the_regression(self) -> None:
        result, data = self.gate()
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("TestArith::test_triple", result.stderr)
        self.assertFalse(data["ok"])
        (part,) = data["parts"]
        self.assertEqual(part["part"], "differential/test_arith")
        cases = part["cases"]
        self.assertEqual(case(cases, "test_triple")["verdict"], CaseVerdict.REGRESSED)
        self.assertEqual(case(cases, "test_triple")["stock"], [CaseOutcome.PASSED] * 3)  # re-run, stable
        # a regression hinges on a re-run of stock: here it fails, so stock was flaky
        self.assertEqual(case(cases, "test_flaky_like_a_regression")["verdict"], CaseVerdict.FLAKY_STOCK)
        self.assertEqual(case(cases, "test_both_wrong")["verdict"], CaseVerdict.AGREE_FAIL)
        # a case the series seems to fix cannot fail the gate: a check does not re-run it (--record does)
        self.assertEqual(case(cases, "test_double")["verdict"], CaseVerdict.FIXED)
        self.assertEqual(case(cases, "test_double")["stock"], [CaseOutcome.FAILED])
        self.assertEqual(case(cases, "test_flaky_on_stock")["verdict"], CaseVerdict.FIXED)
        self.assertEqual(part["counts"][CaseVerdict.SKIPPED], 1)  # test_full_tier_only, counted but not listed
        self.assertEqual(part["counts"][CaseVerdict.AGREE_PASS], 1)  # test_add, the same
        self.assertEqual(len(cases), 5)
        self.assertEqual(data["totals"][CaseVerdict.REGRESSED], 1)
        self.assertFalse(list((self.p.build_dir / "regressions").glob("stock-*")))  # not kept

    def test_an_earlier_runs_rerun_logs_are_removed(self) -> None:
        logs = Project.at(self.p.root).gate_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        stale = logs / "test_arith-overlay-rerun9.log"
        other = logs / "test_arithmetic-overlay-rerun9.log"  # another part's
        stale.write_text("an earlier run")
        other.write_text("an earlier run")
        result, _ = self.gate()
        self.assertEqual(result.returncode, 1, result.stderr)  # test_triple regresses: re-runs, new logs
        self.assertFalse(stale.exists())
        self.assertTrue(other.exists())
        self.assertTrue((logs / "test_arith-overlay-rerun1.log").exists())

    def test_full_tier_runs_the_slow_cases_and_records_for_the_readme(self) -> None:
        result, data = self.gate("--tier", "full", "--record")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(data["tier"], "full")
        self.assertEqual(data["parts"][0]["counts"][CaseVerdict.AGREE_PASS], 2)  # test_add and test_full_tier_only
        # kept verdicts: a "fixed" case is confirmed by re-runs, which show the stock flake for what it is
        cases = data["parts"][0]["cases"]
        self.assertEqual(case(cases, "test_double")["stock"], [CaseOutcome.FAILED] * 3)
        self.assertEqual(case(cases, "test_flaky_on_stock")["verdict"], CaseVerdict.FLAKY_STOCK)
        self.assertEqual(recorded(self.p)["totals"], data["totals"])

    def test_table_names_every_case_that_does_not_agree(self) -> None:
        result, data = self.gate()
        table = render(data)
        self.assertIn("| differential/test_arith | 1 | 1 | 2 | 1 | 1 | 1 |", table)
        wall = data["parts"][0]["seconds"]
        self.assertGreater(wall, max(run["seconds"] for run in data["parts"][0]["runs"].values()))  # + re-runs
        self.assertRegex(table, rf"\| total \| 1 \| 1 \| 2 \| 1 \| 1 \| 1 \| +\| +\| {wall / 60:.0f} \|")
        self.assertIn("- regressed: `differential/test_arith::TestArith::test_triple` "
                      "(stock passed/passed/passed, overlay failed/failed/failed)", table)
        self.assertIn("- flaky-on-stock: `differential/test_arith::TestArith::test_flaky_like_a_regression`", table)

    def test_a_part_run_merges_into_the_record(self) -> None:
        # A full tier can be recorded part by part: a run of one part replaces that part only.
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            (p.root / "test" / "differential" / "test_more.py").write_text(MORE_CORPUS)
            with tempfile.TemporaryDirectory() as flaky:
                first = p.tool("verify", "gate", "--tier", "full", "--record", check=False, FLAKY_DIR=flaky)
            self.assertEqual(first.returncode, 1, first.stderr)  # test_triple regresses
            arith = next(part for part in recorded(p)["parts"] if part["part"] == "differential/test_arith")
            (p.root / "test" / "differential" / "test_more.py").write_text(MORE_CORPUS.replace("# extra", "def test_more_again(self):\n        pass"))
            p.commit_edit("torch/ops.py", "return a + b", "return b + a", "[ops] Commute add")  # a new series
            p.tool("export")
            with tempfile.TemporaryDirectory() as flaky:
                again = p.tool("verify", "gate", "--tier", "full", "--record", "--part", "test_more",
                               check=False, FLAKY_DIR=flaky)
            self.assertEqual(again.returncode, 0, again.stderr)  # only test_more ran: no regression in it
            merged = recorded(p)
        self.assertEqual([part["part"] for part in merged["parts"]], ["differential/test_arith", "differential/test_more"])
        self.assertEqual(merged["parts"][0], arith)  # kept as recorded, with its own date and series
        self.assertEqual(merged["parts"][1]["counts"][CaseVerdict.AGREE_PASS], 2)
        self.assertEqual(merged["totals"][CaseVerdict.AGREE_PASS], arith["counts"][CaseVerdict.AGREE_PASS] + 2)
        self.assertEqual(merged["totals"][CaseVerdict.REGRESSED], 1)
        self.assertFalse(merged["ok"])  # the kept part still regresses
        self.assertNotEqual(merged["series"], arith["series"])
        self.assertIn(f"- recorded on an earlier series: `differential/test_arith` (series `{arith['series']}`, "
                      f"{arith['date'][:10]})", render(merged))

    def test_a_fast_run_does_not_replace_a_full_record(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            with tempfile.TemporaryDirectory() as flaky:
                p.tool("verify", "gate", "--tier", "full", "--record", check=False, FLAKY_DIR=flaky)
            record_file = p.root / "benchmarks" / "regressions.json"
            full = record_file.read_bytes()
            logs = Project.at(p.root).gate_dir / "logs"
            shutil.rmtree(logs, ignore_errors=True)
            fast = p.tool("verify", "gate", "--record", check=False)
            self.assertEqual(fast.returncode, 2, fast.stderr)
            (line,) = fast.stderr.strip().splitlines()
            self.assertIn("benchmarks/regressions.json holds the full tier's record", line)
            self.assertEqual(record_file.read_bytes(), full)  # untouched
            self.assertFalse(logs.exists())  # refused before anything ran
            with tempfile.TemporaryDirectory() as flaky:
                checked = p.tool("verify", "gate", check=False, FLAKY_DIR=flaky)  # a fast check records nothing
            self.assertEqual(checked.returncode, 1, checked.stderr)  # test_triple regresses
            self.assertEqual(record_file.read_bytes(), full)

    def test_a_case_that_kills_its_process_is_crashed_and_the_rest_still_runs(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            (p.root / "test" / "differential" / "test_crash.py").write_text(CRASHING_CORPUS)
            result = p.tool("verify", "gate", "--json", "--part", "test_crash", check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        (part,) = json.loads(result.stdout)["parts"]
        cases = {c["case"]: c for c in part["cases"]}
        self.assertEqual(cases["TestCrash::test_b_segfault"],
                         {"case": "TestCrash::test_b_segfault", "verdict": CaseVerdict.AGREE_FAIL,
                          "stock": [CaseOutcome.CRASHED], "overlay": [CaseOutcome.CRASHED]})
        self.assertEqual(cases["TestCrash::test_c_after"]["verdict"], CaseVerdict.FIXED)
        self.assertEqual(part["counts"][CaseVerdict.AGREE_PASS], 1)  # test_a_before

    def test_a_known_upstream_failure_is_recorded_with_its_issue(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            (p.root / "test" / "differential" / "test_known.py").write_text(UPSTREAM_CORPUS)
            result = p.tool("verify", "gate", "--json", "--part", "test_known", check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        data = json.loads(result.stdout)
        cases = {c["case"]: c for c in data["parts"][0]["cases"]}
        self.assertEqual(cases["TestKnown::test_known_on_both"]["verdict"], CaseVerdict.AGREE_FAIL)
        self.assertEqual(cases["TestKnown::test_known_on_both"]["upstream"], "#4242")
        self.assertEqual(cases["TestKnown::test_known_and_fixed"]["verdict"], CaseVerdict.FIXED)
        self.assertEqual(cases["TestKnown::test_known_and_fixed"]["upstream"], "#4343")
        self.assertNotIn("upstream", cases["TestKnown::test_unknown_on_both"])
        table = render(data)
        # Fixed cases are counted, not listed one by one: the full tier fixes hundreds.
        self.assertNotIn("test_known_and_fixed", table)
        self.assertIn("- fixed, known upstream, `differential/test_known`: #4343 (1 case); "
                      "each case is listed in `benchmarks/regressions.json`", table)
        self.assertIn("- agree-fail, known upstream, `differential/test_known`: #4242 (1 case); "
                      "each case is listed in `benchmarks/regressions.json`", table)

    def test_a_side_that_times_out_fails_the_gate_and_is_named(self) -> None:
        # Cases a side did not reach are missing from both sides' outcomes: without this, a gate
        # cut short on both sides would report fewer cases and pass.
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            (p.root / "test" / "differential" / "test_hang.py").write_text(HANGING_CORPUS)
            result = p.tool("verify", "gate", "--json", "--part", "test_hang", "--timeout", "20",
                            check=False)
        self.assertEqual(result.returncode, 1, result.stderr)
        for side in ("stock", "overlay"):
            self.assertRegex(result.stderr, rf"differential/test_hang: {side} timed out after 20 s; "
                                            r"the cases it did not reach are missing; see .*test_hang-" + side)
        self.assertIn("error: the gate did not see every case: differential/test_hang (stock), "
                      "differential/test_hang (overlay) timed out; run it again with a larger --timeout",
                      result.stderr)
        data = json.loads(result.stdout)
        (part,) = data["parts"]
        self.assertEqual({side: run["returncode"] for side, run in part["runs"].items()},
                         {"stock": None, "overlay": None})
        self.assertEqual(part["counts"][CaseVerdict.AGREE_PASS], 1)  # test_a_before; the other two never ended
        self.assertEqual(sum(part["counts"].values()), 1)
        self.assertEqual(data["totals"][CaseVerdict.REGRESSED], 0)
        self.assertFalse(data["ok"])  # nothing regressed in what ran, but not everything ran
        self.assertRegex(render_gate(data), r": INCOMPLETE \(a side timed out\)\.")
        self.assertRegex(render(data),
                         r"- timed out: `differential/test_hang` on stock after 2\d s \(the cases it did not "
                         r"reach are not in this table\)")

    def test_an_unknown_part_is_named_before_anything_runs(self) -> None:
        result = self.p.tool("verify", "gate", "--part", "test_nothing", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertRegex(result.stderr.strip(), r"^error: no corpus part test_nothing in .*: choose from test_arith$")

    def test_without_a_corpus_it_says_where_it_looked(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            bare = SyntheticProject(Path(tmp))
            result = bare.tool("verify", "gate", check=False)
        self.assertEqual(result.returncode, 2)
        self.assertRegex(result.stderr.strip(), r"^error: no corpus: .*test/differential holds no test_\*\.py file$")


class TestPartition(unittest.TestCase):
    """`shards.partition`, the one partition of test files and corpus cases alike."""

    def test_every_name_in_exactly_one_shard_balanced_by_time(self) -> None:
        names = [f"case_{i}" for i in range(20)]
        times = {name: float(i) for i, name in enumerate(names)}
        for total in (1, 2, 3, 7, 25):
            split = shards.partition(names, total, times)
            self.assertEqual(len(split), total)
            self.assertEqual(sorted(name for shard in split for name in shard), sorted(names))
            self.assertEqual(split, shards.partition(list(reversed(names)), total, times))  # order-free
            loads = [sum(times[name] for name in shard) for shard in split]
            self.assertLessEqual(max(loads) - min(loads), max(times.values()))  # greedy's bound

    def test_unrecorded_names_cost_the_average(self) -> None:
        self.assertEqual(shards.partition(["a", "b", "new"], 2, {"a": 10.0, "b": 2.0}), [["a"], ["b", "new"]])
        self.assertEqual(shards.partition(["a", "b", "c", "d"], 2, {}), [["a", "c"], ["b", "d"]])


def merged_durations(files: list[Path]) -> dict[str, float]:
    """Every case's duration in the shard records `files`."""
    return dict(sorted(kv for path in files for kv in json.loads(path.read_text())["parts"][0]["durations"].items()))


class TestShardedGate(unittest.TestCase):
    """A part run as shards (`--part NAME --shard I N`) and merged (`verify merge`): the same record as
    one process, and a merge that names what is wrong with its shards."""

    SHARDS = 3

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        root = Path(cls._tmp.name)
        cls.p = gate_project(root)
        # kept verdicts, as a shard's are (its fixed cases are confirmed by re-runs)
        whole = run_gate(cls.p, "--part", "test_arith", "--record")
        assert whole.returncode == 1, whole.stderr  # test_triple regresses
        cls.whole = json.loads(whole.stdout)
        cls.files = []
        for index in range(1, cls.SHARDS + 1):
            result = run_gate(cls.p, "--part", "test_arith", "--shard", str(index), str(cls.SHARDS))
            assert result.returncode in (0, 1), result.stderr
            cls.files.append(root / f"shard-{index}.json")
            cls.files[-1].write_text(result.stdout)

    @classmethod
    def tearDownClass(cls) -> None:
        cls._tmp.cleanup()

    def shard_records(self) -> list[dict[str, Any]]:
        return [json.loads(path.read_text()) for path in self.files]

    def merge(self, *paths: Path) -> subprocess.CompletedProcess[str]:
        return self.p.tool("verify", "merge", "--json", *map(str, paths), check=False)

    def edited(self, index: int, edit: Callable[[dict[str, Any]], None]) -> Path:
        """A copy of shard `index`'s record (0-based) with `edit` applied."""
        data = json.loads(self.files[index].read_text())
        edit(data)
        path = self.files[index].with_name(f"edited-{index}-{len(list(self.files[index].parent.glob('edited-*')))}.json")
        path.write_text(json.dumps(data))
        return path

    def test_shards_partition_the_collected_cases(self) -> None:
        parts = [record["parts"][0]["shard"] for record in self.shard_records()]
        collected = parts[0]["collected"]
        self.assertEqual(len(collected), 7)  # CORPUS's cases, the full-tier one included (skipped here)
        self.assertTrue(all(part["collected"] == collected for part in parts))
        planned = [case for part in parts for case in part["cases"]]
        self.assertEqual(sorted(planned), collected)  # each case in exactly one shard
        self.assertEqual([part["index"] for part in parts], [1, 2, 3])
        self.assertTrue(all(part["missing"] == [] for part in parts))

    def test_merged_shards_are_the_one_process_record(self) -> None:
        result = self.merge(*self.files)
        self.assertEqual(result.returncode, 1, result.stderr)  # test_triple still regresses
        self.assertIn("TestArith::test_triple", result.stderr)
        merged = json.loads(result.stdout)
        (part,), (whole,) = merged["parts"], self.whole["parts"]
        self.assertEqual(part["counts"], whole["counts"])
        self.assertEqual(merged["totals"], self.whole["totals"])
        self.assertEqual({c["case"]: c["verdict"] for c in part["cases"]},
                         {c["case"]: c["verdict"] for c in whole["cases"]})
        self.assertEqual(sorted(part["durations"]), sorted(whole["durations"]))
        self.assertEqual(part["missing"], [])
        self.assertEqual({k: merged[k] for k in ("tier", "base", "series", "python", "ok")},
                         {k: self.whole[k] for k in ("tier", "base", "series", "python", "ok")})

    def test_merge_records_the_tier_and_the_case_durations(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            result = p.tool("verify", "merge", *map(str, self.files), "--record", check=False)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn("| differential/test_arith |", result.stdout)  # the table, for the run's summary
            record = recorded(p)
            times = json.loads(Project.at(p.root).case_times_file.read_text())
        self.assertEqual(record["totals"], self.whole["totals"])
        self.assertNotIn("durations", record["parts"][0])  # they live beside it, by part
        durations = merged_durations(self.files)
        self.assertEqual(times["tiers"]["fast"]["differential/test_arith"], durations)
        self.assertEqual(sorted(durations), sorted(self.whole["parts"][0]["durations"]))

    def test_recorded_durations_size_the_shards(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = self.p.copy(Path(tmp))
            collected = self.shard_records()[0]["parts"][0]["shard"]["collected"]
            slow = {case: 1000.0 if case == "TestArith::test_add" else 1.0 for case in collected}
            (p.root / "benchmarks").mkdir(exist_ok=True)
            (p.root / "benchmarks" / "regressions-times.json").write_text(
                json.dumps({"fast": {"differential/test_arith": slow}}))
            result = run_gate(p, "--part", "test_arith", "--shard", "1", "2")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["parts"][0]["shard"]["cases"], ["TestArith::test_add"])  # alone

    def test_a_dropped_or_duplicated_shard_is_named(self) -> None:
        dropped = self.merge(self.files[0], self.files[2])
        self.assertEqual(dropped.returncode, 2)
        self.assertEqual(dropped.stderr.strip(), "error: shard 2/3 of differential/test_arith is not given: "
                                                 "merge every shard's record")
        copy = self.edited(1, lambda data: None)
        for again in (copy, self.files[1]):  # another file, or the same one named twice
            twice = self.merge(*self.files, again)
            self.assertEqual(twice.returncode, 2)
            self.assertEqual(twice.stderr.strip(), f"error: shard 2/3 of differential/test_arith is given twice: "
                                                   f"{self.files[1]} and {again}")

    def test_a_case_in_no_shard_is_missing_and_fails_the_gate(self) -> None:
        lost = "TestArith::test_add"
        holder = next(i for i, r in enumerate(self.shard_records()) if lost in r["parts"][0]["shard"]["cases"])

        def drop(data: dict[str, Any]) -> None:
            data["parts"][0]["shard"]["cases"].remove(lost)

        files = [self.edited(holder, drop) if i == holder else path for i, path in enumerate(self.files)]
        result = self.merge(*files)
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"error: 1 case(s) reported by no shard: differential/test_arith::{lost}", result.stderr)
        merged = json.loads(result.stdout)
        self.assertEqual(merged["parts"][0]["missing"], [lost])
        self.assertFalse(merged["ok"])
        self.assertIn(f"- missing: `differential/test_arith::{lost}` (collected, reported by no shard)",
                      render(merged))
        self.assertRegex(render_gate(merged), r": REGRESSIONS FOUND\.")  # test_triple's
        # without the regression, the missing case alone makes the README's verdict incomplete
        record = GateRecord.from_json(merged)
        (part,) = record.parts
        no_regression = replace(record, parts=[replace(
            part, cases=[c for c in part.cases if c.verdict != CaseVerdict.REGRESSED],
            counts={**part.counts, CaseVerdict.REGRESSED: 0})])
        self.assertRegex(readme.render_gate(no_regression, RECORD_NAME), r": INCOMPLETE \(cases missing\)\.")

    def test_records_of_different_runs_do_not_merge(self) -> None:
        for key, value, what in (("series", "2.9.1+ovl9.gdeadbeef", "series"), ("python", "3.12.0", "Python versions"),
                                 ("base", {"version": "2.9.0", "revision": "0" * 40}, "bases")):
            other = self.edited(2, lambda data: data.update({key: value}))  # noqa: B023 (used at once)
            result = self.merge(*self.files[:2], other)
            self.assertEqual(result.returncode, 2, key)
            self.assertRegex(result.stderr.strip(), rf"^error: shard records of different {what} cannot merge: "
                                                    rf".*shard-1.json has .*, {other} has ")

    def test_a_record_that_is_no_shard_is_refused(self) -> None:
        whole = self.files[0].with_name("whole.json")
        whole.write_text(json.dumps(self.whole))
        result = self.merge(whole)
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip(), f"error: {whole} holds differential/test_arith unsharded: `verify "
                                                "merge` takes records of `verify gate --part NAME --shard I N`")

    def test_shard_usage_errors_are_one_line(self) -> None:
        for args, message in (
            (("--shard", "1", "2"), "--shard I N runs one shard of one corpus part: name it with --part NAME"),
            (("--part", "test_arith", "--shard", "3", "2"), "--shard 3 2: need 1 <= I <= N"),
        ):
            result = self.p.tool("verify", "gate", *args, check=False)
            self.assertEqual((result.returncode, result.stderr.strip()), (2, f"error: {message}"))

    def test_a_shard_is_not_recorded_and_a_merge_runs_nothing(self) -> None:
        # argparse's own usage error: a shard's record is combined by `verify merge`, which runs no part.
        for args, message in ((("gate", "--part", "test_arith", "--shard", "1", "2", "--record"),
                               "argument --record: not allowed with argument --shard"),
                              (("merge", "x.json", "--part", "test_arith"), "unrecognized arguments: --part")):
            result = self.p.tool("verify", *args, check=False)
            self.assertEqual(result.returncode, 2)
            self.assertIn(message, result.stderr)


class TestRealCorpus(unittest.TestCase):
    """The gate itself, fast tier, on the real base and series: no case regresses."""

    def test_nothing_that_passes_on_stock_fails_on_the_overlay(self) -> None:
        result = subprocess.run([sys.executable, "-m", "torch_overlay", "verify", "gate", "--json"],
                                cwd=REPO, capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr[-4000:])
        data = json.loads(result.stdout)
        parts = {p["part"]: p for p in data["parts"]}
        self.assertEqual(set(parts), {f"differential/{p.stem}" for p in (REPO / "test" / "differential").glob("test_*.py")})
        for name, part in parts.items():
            self.assertGreater(part["counts"][CaseVerdict.AGREE_PASS], 0, f"{name} passed nothing on either side")
        self.assertEqual(data["totals"][CaseVerdict.REGRESSED], 0)


if __name__ == "__main__":
    unittest.main()
