"""Upstream releases in PEP 440 order wherever the tool sorts them: a release candidate comes
before its final release, and 2.10 after 2.9 (as strings, "2.10.0" < "2.10.0rc1" < "2.9.1")."""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from torch_overlay import readme  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.outcomes import Drift  # noqa: E402
from torch_overlay.core.project import Cache, Project  # noqa: E402
from torch_overlay.fork.series import Patch  # noqa: E402
from torch_overlay.proofs import drift, upstream  # noqa: E402
from torch_overlay.proofs.drift_record import DriftRecord, PatchDriftRecord, ReleaseDrift, WheelRef  # noqa: E402

RELEASE_ORDER = ["2.9.1", "2.10.0rc1", "2.10.0", "2.11.0"]
SHUFFLED = ["2.10.0", "2.11.0", "2.9.1", "2.10.0rc1"]
PATCH_FILE = "0001-ops-Fix.patch"


def patch_drift(patch_id: str, verdict: Drift) -> PatchDriftRecord:
    return PatchDriftRecord(patch_id, PATCH_FILE, "[ops] Fix", [], False, [], [], [], False, False, "", verdict)


def drift_entry(version: str, verdict: Drift, wheel: str = "a", patch_id: str = "0001") -> ReleaseDrift:
    return ReleaseDrift(version, WheelRef("cp311-cp311-manylinux_2_28_x86_64", wheel), "2026-11-24T00:00:00+00:00",
                        {}, {}, [], [patch_drift(patch_id, verdict)])


class TestReleaseOrder(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def test_version_key(self) -> None:
        self.assertEqual(sorted(SHUFFLED, key=upstream.version_key), RELEASE_ORDER)

    def test_version_key_refuses_what_is_not_a_version(self) -> None:
        with self.assertRaisesRegex(OverlayError, "'latest' is not a release version"):
            upstream.version_key("latest")

    def test_unknown_release_lists_the_pinned_ones_in_order(self) -> None:
        pin_file = self.tmp / "overlay.toml"
        tables = "".join(f'[upstream.wheels."{v}"]\n"cp311-cp311-manylinux_2_28_x86_64" = "{"0" * 64}"\n'
                         for v in SHUFFLED)
        pin_file.write_text(tables)
        with self.assertRaises(OverlayError) as caught:
            upstream.release_pin(pin_file, "3.0.0")
        self.assertIn(f"(pinned: {', '.join(RELEASE_ORDER)})", str(caught.exception))

    def test_first_release_with_the_fix_is_the_candidate(self) -> None:
        records = {v: drift_entry(v, Drift.ALREADY_UPSTREAM) for v in ["2.10.0", "2.10.0rc1"]}
        records["2.9.1"] = drift_entry("2.9.1", Drift.STILL_NEEDED)
        self.assertEqual(readme.first_release_with_fix(DriftRecord(records), Patch(self.tmp / PATCH_FILE)), "2.10.0rc1")

    def test_drift_record_keeps_releases_in_order(self) -> None:
        project = Project.at(self.tmp, Cache(self.tmp / "cache"), base="2.9.1")
        for version in SHUFFLED:
            path = drift.record(project, drift_entry(version, Drift.STILL_NEEDED))
        self.assertEqual(list(json.loads(path.read_text())["releases"]), RELEASE_ORDER)

    def test_a_run_of_some_patches_updates_them_and_keeps_the_others(self) -> None:
        project = Project.at(self.tmp, Cache(self.tmp / "cache"), base="2.9.1")

        def entry(wheel: str, **verdicts: Drift) -> ReleaseDrift:
            return replace(drift_entry("2.10.0", Drift.STILL_NEEDED, wheel),
                           patches=[patch_drift(i, v) for i, v in verdicts.items()])

        drift.record(project, entry("a", p0001=Drift.STILL_NEEDED, p0002=Drift.STILL_NEEDED))
        path = drift.record(project, entry("a", p0002=Drift.ALREADY_UPSTREAM, p0003=Drift.STILL_NEEDED))
        patches = json.loads(path.read_text())["releases"]["2.10.0"]["patches"]
        self.assertEqual([(p["id"], p["verdict"]) for p in patches],
                         [("p0001", Drift.STILL_NEEDED), ("p0002", Drift.ALREADY_UPSTREAM), ("p0003", Drift.STILL_NEEDED)])
        path = drift.record(project, entry("b", p0003=Drift.STILL_NEEDED))  # another wheel: a new entry
        self.assertEqual([p["id"] for p in json.loads(path.read_text())["releases"]["2.10.0"]["patches"]], ["p0003"])


if __name__ == "__main__":
    unittest.main()
