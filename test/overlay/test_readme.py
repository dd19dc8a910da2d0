"""The READMEs' tables are rendered from the series and the records in benchmarks/: the patch
table from the drift record, the gate section from the regressions record, the benchmark table
(in README.md and benchmarks/README.md) from the bench's results."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import expecttest
from synthetic import REPO, SyntheticProject

sys.path.insert(0, str(REPO))
from torch_overlay.bench import BenchRecord  # noqa: E402
from torch_overlay.bench import render_table as render_bench_table  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.outcomes import CaseVerdict, Drift  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.fork.message import CHERRY_PICK, cited_prs, impact, parse, pr_body, upstream_status  # noqa: E402
from torch_overlay.fork.series import Patch, read_series  # noqa: E402
from torch_overlay.proofs.drift import load_record as load_drift  # noqa: E402
from torch_overlay.proofs.drift_record import DriftRecord, PatchDriftRecord, ReleaseDrift, WheelRef  # noqa: E402
from torch_overlay.proofs.gate_record import GateRecord  # noqa: E402
from torch_overlay.readme import (  # noqa: E402
    BENCH_END,
    BENCH_START,
    README,
    OtherBase,
    first_release_carrying,
    first_release_with_fix,
    render_gate,
    render_table,
    with_table,
)

BENCH_README = Path("benchmarks") / "README.md"
GATE_RECORD = Path("benchmarks") / "regressions.json"

MESSAGE = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Dev <dev@example.com>
Subject: [PATCH] [inductor] Fix a | thing

Root cause: ...

Upstream: pytorch/pytorch#111 and the second half of
pytorch/pytorch#222

Fixes #333

Test Plan:
python test/run_test.py -i inductor/test_thing

Origin: backport, https://github.com/pytorch/pytorch/pull/111, https://github.com/pytorch/pytorch/pull/222
Forwarded: not-needed
Applied-Upstream: 2.12.1
Impact: silent-correctness
---
diff --git a/torch/_inductor/ir.py b/torch/_inductor/ir.py
"""


def patch_drift(file: str, verdict: Drift, beyond_upstream: list[str] | None = None) -> PatchDriftRecord:
    """A patch's drift on a release, as recorded (its runs left out: the table reads the verdict)."""
    return PatchDriftRecord(file[:4], file, "title", [], False, [], [], beyond_upstream or [], False, False, "",
                            verdict)


def release_drift(version: str, *patches: PatchDriftRecord) -> ReleaseDrift:
    return ReleaseDrift(version, WheelRef("cp311-cp311-manylinux_2_28_x86_64", "0" * 64), "2026-11-24T00:00:00+00:00",
                        {}, {}, [], list(patches))


def drift(verdicts: dict[str, Drift]) -> DriftRecord:
    return DriftRecord({v: release_drift(v, patch_drift("0001-inductor-Fix.patch", verdict))
                        for v, verdict in verdicts.items()})


class TestPatchTable(expecttest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        self._tmp = tempfile.TemporaryDirectory()
        path = Path(self._tmp.name) / "0001-inductor-Fix.patch"
        path.write_text(MESSAGE)
        self.patch = Patch(path)

    def tearDown(self) -> None:
        self._tmp.cleanup()
        super().tearDown()

    def test_cited_prs_span_the_whole_paragraph(self) -> None:
        self.assertEqual(cited_prs(parse(self.patch)), (111, 222))

    def test_a_backport_s_pr_body_asks_for_upstream_s_prs_to_be_picked(self) -> None:
        body = pr_body(self.patch)
        self.assertIn("the request is a cherry-pick of #111, #222 onto the release branch", body)
        fork_fix = Path(self._tmp.name) / "0002-inductor-Fix.patch"
        fork_fix.write_text(MESSAGE.replace("Origin: backport, https://github.com/pytorch/pytorch/pull/111, "
                                            "https://github.com/pytorch/pytorch/pull/222", "Origin: other")
                            .replace("Forwarded: not-needed", "Forwarded: no"))
        self.assertNotIn("cherry-pick of", pr_body(Patch(fork_fix)))

    def test_first_release_is_the_lowest_version_measured_as_upstream(self) -> None:
        measured = drift({"2.13.0": Drift.ALREADY_UPSTREAM, "2.9.10": Drift.STILL_NEEDED,
                          "2.10.0": Drift.ALREADY_UPSTREAM})
        self.assertEqual(first_release_with_fix(measured, self.patch), "2.10.0")
        self.assertEqual(first_release_with_fix(drift({"2.10.0": Drift.CONFLICTS}), self.patch), "none of 2.10.0")
        self.assertEqual(first_release_with_fix(DriftRecord({}), self.patch), "not measured")

    def test_a_partly_upstream_fix_says_how_many_cases_go_beyond(self) -> None:
        measured = drift({"2.10.0": Drift.STILL_NEEDED})
        measured.releases["2.12.1"] = release_drift("2.12.1", patch_drift(
            "0001-inductor-Fix.patch", Drift.PARTLY_UPSTREAM, ["test/x.py::TestX::test_a", "test/x.py::TestX::test_b"]))
        self.assertEqual(first_release_with_fix(measured, self.patch),
                         "2.12.1: upstream fix present; 2 cases beyond upstream")

    def test_row(self) -> None:
        table = render_table([self.patch], drift({"2.12.1": Drift.ALREADY_UPSTREAM}))
        self.assertExpectedInline(
            table.splitlines()[2],
            """| 0001 | [inductor] Fix a \\| thing | silent-correctness | [#333](https://github.com/pytorch/pytorch/issues/333) | backport of [#111](https://github.com/pytorch/pytorch/pull/111), [#222](https://github.com/pytorch/pytorch/pull/222) | `torch/_inductor/ir.py` | 2.12.1 |""",  # noqa: B950
        )

    def test_table_replaces_only_the_marked_block(self) -> None:
        readme = "intro\n<!-- patch-table:start -->\nold\n<!-- patch-table:end -->\noutro\n"
        self.assertEqual(
            with_table(readme, "new"), "intro\n<!-- patch-table:start -->\nnew\n<!-- patch-table:end -->\noutro\n"
        )

    def test_gate_names_the_parts_its_record_lacks(self) -> None:
        counts = {v: 0 for v in CaseVerdict}
        series, date = "2.9.1+ovl1.gabc", "2026-11-24T00:00:00+00:00"
        part = {"part": "differential/test_a", "seconds": 2.5, "counts": dict(counts, **{"agree-pass": 3}),
                "cases": [], "series": series, "date": date,
                "runs": {side: {"returncode": 0, "seconds": 1.0, "cases": 3} for side in ("stock", "overlay")}}
        data = {"schema": 1, "tier": "full", "base": {"version": "2.9.1", "revision": "0" * 40}, "series": series,
                "python": "3.11.7", "date": date, "parts": [part]}
        record = GateRecord.from_json(data)
        text = render_gate(record, GATE_RECORD, ["differential/test_a", "differential/test_b"])
        self.assertIn("Full tier, series `2.9.1+ovl1.gabc`, Python 3.11.7, 2026-11-24: no regression.", text)
        self.assertTrue(text.endswith(
            "Not recorded in this tier yet: `differential/test_b` "
            "(`python -m torch_overlay verify gate --tier full --record --part NAME`)."), text)
        self.assertNotIn("Not recorded in this tier", render_gate(record, GATE_RECORD, ["differential/test_a"]))
        self.assertIn("| differential/test_a | 3 | 1 | 1 | 0 |\n| total | 3 |  |  | 0 |", text)
        del part["seconds"]  # recorded before parts measured their wall time
        self.assertIn("| differential/test_a | 3 | 1 | 1 | - |\n| total | 3 |  |  | - |",
                      render_gate(GateRecord.from_json(data), GATE_RECORD, ["differential/test_a"]))

    def test_a_column_per_other_base_says_whether_it_carries_the_patch(self) -> None:
        renumbered = self.patch.path.with_name("0007-inductor-Fix.patch")
        renumbered.write_text(MESSAGE)
        cells = {
            "carried": OtherBase("2.15.0", [self.patch], {}),
            "carried as 0007": OtherBase("2.15.0", [Patch(renumbered)], {}),
            "dropped: upstream in 2.15.0 (its tests pass there)": OtherBase(
                "2.15.0", [], {self.patch.path.name: "upstream in 2.15.0 (its tests pass there)"}),
            "not ported yet": OtherBase("2.15.0", [], {}),
            "no series yet": OtherBase("2.15.0", None, {}),
        }
        for cell, other in cells.items():
            with self.subTest(cell=cell):
                table = render_table([self.patch], DriftRecord({}), [other]).splitlines()
                self.assertTrue(table[0].endswith("| On 2.15.0 |"))
                self.assertTrue(table[2].endswith(f"| {cell} |"), table[2])

    def test_a_patch_only_another_base_carries_gets_its_own_row(self) -> None:
        table = render_table([], DriftRecord({}), [OtherBase("2.15.0", [self.patch], {})]).splitlines()
        self.assertEqual(len(table), 3)
        self.assertTrue(table[2].startswith("| 0001 |") and table[2].endswith("| carried |"))

    def test_every_patch_says_where_it_stands_upstream(self) -> None:
        """Each patch of every base's series carries valid trailers, and `Applied-Upstream:` names the
        first release the drift record measured carrying the fix (absent while none does)."""
        project = Project.discover(REPO)
        recorded = load_drift(project)
        for base in sorted(p for p in (REPO / "patches").iterdir() if p.is_dir()):
            for patch in read_series(base):
                with self.subTest(base=base.name, patch=patch.path.name):
                    status = upstream_status(patch)
                    self.assertIn(impact(patch), CHERRY_PICK)
                    if base.name == project.base:  # the drift record measures the default base's series
                        found = first_release_carrying(recorded, patch)
                        self.assertEqual(status.applied_upstream, found[0] if found else "")

    def test_a_patch_without_trailers_or_with_a_wrong_one_is_named(self) -> None:
        text = self.patch.path.read_text()
        for old, new, message in (
            ("Forwarded: not-needed\n", "", "needs exactly one `Forwarded:` trailer"),
            ("pytorch/pull/222", "pytorch/pull/999", "backports #999, which its `Upstream:` paragraph does not name"),
            ("Forwarded: not-needed", "Forwarded: maybe", "`Forwarded: maybe` is not"),
        ):
            with self.subTest(message=message):
                self.patch.path.write_text(text.replace(old, new, 1))
                with self.assertRaisesRegex(OverlayError, "0001-inductor-Fix.patch: .*" + re.escape(message)):
                    upstream_status(self.patch)
        self.patch.path.write_text(text.replace("Impact: silent-correctness", "Impact: cosmetic"))
        with self.assertRaisesRegex(OverlayError, "0001-inductor-Fix.patch: `Impact: cosmetic` is not one of "
                                                  "silent-correctness, crash, performance"):
            impact(self.patch)

    def test_repository_readme_is_up_to_date(self) -> None:
        result = subprocess.run([sys.executable, "-m", "torch_overlay", "readme", "--check"], cwd=REPO,
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)


def bench_block(text: str) -> str:
    return text.split(BENCH_START + "\n", 1)[1].split("\n" + BENCH_END, 1)[0]


class TestBenchTables(unittest.TestCase):
    def test_repository_bench_tables_are_the_results_record_rendered(self) -> None:
        results = BenchRecord.from_json(json.loads((REPO / "benchmarks" / "results.json").read_text()))
        for name in (README, BENCH_README):
            with self.subTest(file=str(name)):
                self.assertEqual(bench_block((REPO / name).read_text()), render_bench_table(results))

    def test_readme_renders_every_file_and_check_names_the_stale_one(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            p = SyntheticProject(Path(tmp))
            (p.root / "benchmarks").mkdir()
            shutil.copy2(REPO / "benchmarks" / "results.json", p.root / "benchmarks" / "results.json")
            (p.root / README).write_text("".join(f"{start}\n{end}\n" for start, end in (
                ("<!-- patch-table:start -->", "<!-- patch-table:end -->"),
                ("<!-- regressions-table:start -->", "<!-- regressions-table:end -->"), (BENCH_START, BENCH_END))))
            (p.root / BENCH_README).write_text(f"# Benchmarks\n\n{BENCH_START}\nold\n{BENCH_END}\n")
            stale = p.tool("readme", "--check", check=False)
            self.assertEqual(stale.returncode, 1, stale.stderr)
            self.assertIn("benchmarks/README.md's tables are out of date", stale.stderr)
            self.assertEqual(len(stale.stderr.strip().splitlines()), 1, stale.stderr)
            p.tool("readme")
            self.assertEqual(p.tool("readme", "--check", check=False).returncode, 0)
            results = BenchRecord.from_json(json.loads((p.root / "benchmarks" / "results.json").read_text()))
            self.assertEqual(bench_block((p.root / BENCH_README).read_text()), render_bench_table(results))
            (p.root / BENCH_README).write_text("# Benchmarks\n")
            lost = p.tool("readme", "--check", check=False)
            self.assertEqual(lost.returncode, 1, lost.stderr)
            self.assertIn(f"benchmarks/README.md lacks the {BENCH_START} ... {BENCH_END} markers", lost.stderr)


if __name__ == "__main__":
    unittest.main()
