"""The committed records (the gate's, the case durations, the drift's, the bench's) as typed
dataclasses: each reads back what it writes, the committed files load, and a record this tool
cannot read is one line naming the file and the fix."""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

from synthetic import REPO, SyntheticProject

sys.path.insert(0, str(REPO))
from torch_overlay.bench import BenchRecord, load_results  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.outcomes import CaseOutcome, CaseVerdict, Drift, FileOutcome  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.core.records import BaseRef  # noqa: E402
from torch_overlay.proofs import drift, regressions  # noqa: E402
from torch_overlay.proofs.drift_record import (  # noqa: E402
    DriftRecord,
    FileRun,
    PatchDriftRecord,
    ReleaseDrift,
    WheelRef,
)
from torch_overlay.proofs.gate_record import (  # noqa: E402
    CaseRecord,
    CaseTimes,
    GateRecord,
    PartRecord,
    ShardRecord,
    SideRecord,
    verdict_counts,
)

COMMITTED = Project.at(REPO)
DATE = "2026-11-24T00:00:00+00:00"


def gate_record() -> GateRecord:
    """A record with every optional field: a shard's part (durations, missing cases) and a merged one."""
    counts = verdict_counts({CaseVerdict.AGREE_PASS: 3, CaseVerdict.FIXED: 1, CaseVerdict.REGRESSED: 1})
    cases = [CaseRecord("T::test_fixed", CaseVerdict.FIXED, [CaseOutcome.FAILED], [CaseOutcome.PASSED], "#4242"),
             CaseRecord("T::test_lost", CaseVerdict.REGRESSED, [CaseOutcome.PASSED] * 3,
                        [CaseOutcome.FAILED, CaseOutcome.PASSED, CaseOutcome.FAILED])]
    runs = {"stock": SideRecord(1, 2.5, 5), "overlay": SideRecord(None, 3.0, 4)}
    sharded = PartRecord("differential/test_a", 6.1, counts, runs, cases, "2.9.1+ovl1.gabc", DATE,
                         durations={"T::test_fixed": 0.25, "T::test_lost": 1.0},
                         shard=ShardRecord(1, 2, ["T::a", "T::b"], ["T::a"], []))
    merged = PartRecord("differential/test_b", None, verdict_counts({}), runs, [], "2.9.1+ovl0.gdef", DATE,
                        missing=["T::b"])
    return GateRecord(DATE, "full", BaseRef("2.9.1", "5" * 40), "2.9.1+ovl1.gabc", "3.11.7", [sharded, merged])


def release_drift(version: str = "2.10.0") -> ReleaseDrift:
    run = FileRun("test/test_x.py", FileOutcome.FAIL, 1, 2, 1, 0, 1.5,
                  {"T::test_a": CaseOutcome.FAILED, "T::test_b": CaseOutcome.PASSED}, "/tmp/x.log", "tail")
    patch = PatchDriftRecord("0001", "0001-ops-Fix.patch", "[ops] Fix", [run], False, [run], [],
                             ["test/test_x.py::T::test_a"], True, False, "", Drift.PARTLY_UPSTREAM)
    return ReleaseDrift(version, WheelRef("cp311-cp311-manylinux_2_28_x86_64", "0" * 64), DATE,
                        {"checks": 1.5}, {"wheel": 10}, ["triton==3.6.0"], [patch])


def committed(path: Path) -> Any:
    return json.loads(path.read_text())


class TestRoundTrip(unittest.TestCase):
    """from_json(to_json(x)) == x, for every record; the committed files are written back as they are."""

    def assert_round_trip(self, record: Any) -> None:
        again = type(record).from_json(json.loads(json.dumps(record.to_json())))
        self.assertEqual(again, record)

    def test_gate_record(self) -> None:
        record = gate_record()
        self.assert_round_trip(record)
        self.assertFalse(record.ok)  # a regression, a timed-out side and a missing case
        self.assertEqual(record.timed_out(), [("differential/test_a", "overlay"), ("differential/test_b", "overlay")])
        self.assertEqual(record.missing_cases(), ["differential/test_b::T::b"])
        self.assertEqual(record.regressed_cases(), ["differential/test_a::T::test_lost"])

    def test_case_times(self) -> None:
        times = CaseTimes({"fast": {"differential/test_a": {"T::a": 0.5, "T::b": 2}}})
        self.assert_round_trip(times)
        updated = times.updated("full", {"differential/test_b": {"T::c": 1.0}})
        self.assertEqual(updated.of("full", "differential/test_b"), {"T::c": 1.0})
        self.assertEqual(updated.of("fast", "differential/test_a"), {"T::a": 0.5, "T::b": 2})

    def test_drift_record(self) -> None:
        self.assert_round_trip(DriftRecord({"2.10.0": release_drift()}))
        self.assert_round_trip(DriftRecord({"2.10.0": release_drift().portable()}))

    def test_committed_files_are_written_back_unchanged(self) -> None:
        for path, record_type in ((COMMITTED.gate_record_file, GateRecord), (COMMITTED.case_times_file, CaseTimes),
                                  (COMMITTED.drift_record_file, DriftRecord),
                                  (COMMITTED.records_dir / "results.json", BenchRecord)):
            with self.subTest(path=path.name):
                record = record_type.from_json(committed(path))
                self.assert_round_trip(record)
                self.assertEqual(json.dumps(record.to_json(), indent=1) + "\n", path.read_text())

    def test_case_times_schema_1_the_bare_mapping_still_loads(self) -> None:
        times = CaseTimes({"fast": {"differential/test_a": {"T::a": 0.5}}})
        self.assertEqual(CaseTimes.from_json(times.to_json()["tiers"]), times)

    def test_drift_schema_1_the_bare_mapping_still_loads(self) -> None:
        record = DriftRecord({"2.10.0": release_drift()})
        self.assertEqual(DriftRecord.from_json(record.to_json()["releases"]), record)

    def test_a_drift_entry_from_before_cases_were_compared_loads(self) -> None:
        old = release_drift().portable().to_json()
        for patch in old["patches"]:
            del patch["fixed_upstream"], patch["beyond_upstream"]
            for run in patch["tests"]:
                del run["cases"]
        (patch,) = ReleaseDrift.from_json(old).patches
        self.assertEqual((patch.fixed_upstream, patch.beyond_upstream, patch.tests[0].cases), ([], [], {}))

    def test_bench_record_from_schema_1(self) -> None:
        record = BenchRecord.from_json(committed(COMMITTED.records_dir / "results.json"))
        self.assertEqual(record.SCHEMA, 1)
        self.assertEqual(record.targets_ok, all(t.ok for part in record.parts.values() for t in part.targets))


class TestUnreadableRecords(unittest.TestCase):
    """A record this tool cannot read fails with one line: the file, what is wrong, the fix."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.project = Project.at(Path(self._tmp.name), Path(self._tmp.name) / "cache", base="2.9.1")
        self.project.records_dir.mkdir()

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def fails(self, path: Path, data: Any, read: Any) -> str:
        path.write_text(json.dumps(data))
        with self.assertRaises(OverlayError) as caught:
            read(self.project)
        message = str(caught.exception)
        self.assertEqual(len(message.splitlines()), 1, message)
        self.assertTrue(message.startswith(f"{path}: "), message)
        return message[len(f"{path}: "):]

    def readers(self) -> list[tuple[Path, dict[str, Any], int, Any]]:
        """Each record: its file, a readable content, the schema it is in, how the tool reads it."""
        return [
            (self.project.gate_record_file, gate_record().to_json(), 1, regressions.load_record),
            (self.project.drift_record_file, DriftRecord({"2.10.0": release_drift()}).to_json(), 2, drift.load_record),
            (self.project.records_dir / "results.json", committed(COMMITTED.records_dir / "results.json"), 1,
             lambda project: load_results(project.records_dir)),
        ]

    def test_a_newer_schema_says_to_update_the_tool(self) -> None:
        for path, data, schema, read in self.readers():
            with self.subTest(path=path.name):
                self.assertEqual(self.fails(path, dict(data, schema=schema + 1), read),
                                 f"schema {schema + 1} is newer than this tool reads ({schema}): update torch_overlay")

    def test_a_record_missing_a_field_names_it(self) -> None:
        for (path, data, _, read), kind, key in zip(self.readers(), ("gate", "drift", "bench"),
                                                    ("parts", "releases", "parts"), strict=True):
            with self.subTest(path=path.name):
                damaged = {k: v for k, v in data.items() if k != key}
                self.assertRegex(self.fails(path, damaged, read), rf"^not a {kind} record: missing '{key}' \(.+\)$")

    def test_a_value_that_is_no_verdict_is_named(self) -> None:
        data = gate_record().to_json()
        data["parts"][0]["cases"][0]["verdict"] = "maybe"
        self.assertRegex(self.fails(self.project.gate_record_file, data, regressions.load_record),
                         r"^not a gate record: 'maybe' is not a CaseVerdict: one of agree-pass, .*")
        data = DriftRecord({"2.10.0": release_drift()}).to_json()
        data["releases"]["2.10.0"]["patches"][0]["tests"][0]["outcome"] = "great"
        self.assertRegex(self.fails(self.project.drift_record_file, data, drift.load_record),
                         r"^not a drift record: 'great' is not a FileOutcome: one of pass, fail, .*")

    def test_a_file_that_is_not_json_is_named(self) -> None:
        path = self.project.case_times_file
        path.write_text("{")
        with self.assertRaisesRegex(OverlayError, rf"^{path}: not a record of case durations: "):
            regressions.load_case_times(self.project)

    def test_the_command_line_prints_the_line_relative_to_the_project(self) -> None:
        p = SyntheticProject(Path(self._tmp.name) / "project")
        path = Project.at(p.root).gate_record_file
        path.parent.mkdir()
        path.write_text(json.dumps(dict(gate_record().to_json(), schema=3)))
        result = p.tool("readme", "--check", check=False)
        self.assertEqual((result.returncode, result.stderr.strip()),
                         (2, "error: benchmarks/regressions.json: schema 3 is newer than this tool reads (1): "
                             "update torch_overlay"))


if __name__ == "__main__":
    unittest.main()
