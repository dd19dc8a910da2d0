"""Every other base's series on that base: how CI proves the second base from a fresh clone.

The default base is proven by the rest of `python test/run_test.py`, through the overlay the
README's commands install. Each other base `overlay.toml` pins with a series of its own
(`patches/<version>/`) is checked here without installing it: its fork tree is materialised
(the wheel fetched and checked by sha256, its own dependencies cached and OpenReg built for it,
as `verify` does) and each patch's regression suite runs on that overlay (each file once), torch
taken from the tree by PYTHONPATH, a fresh inductor cache per file. The fast tier runs the overlay
side (every file must pass); the full tier (`run_test.py --tier full`) runs `--base VERSION verify
patches`, the stock side too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from synthetic import REPO

sys.path.insert(0, str(REPO))
from torch_overlay.core.outcomes import FileOutcome  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.fork import tree  # noqa: E402
from torch_overlay.fork.series import Patch, read_series, series_file  # noqa: E402
from torch_overlay.pinning.base import load as load_base  # noqa: E402
from torch_overlay.pinning.deps import runtime  # noqa: E402
from torch_overlay.pinning.pin import base_versions, load_pin  # noqa: E402
from torch_overlay.proofs.prove import existing_tests, with_privateuse1_backend  # noqa: E402
from torch_overlay.proofs.testrun import RunResult, run_test_file  # noqa: E402

PROJECT = Project.discover(REPO)
FULL_TIER = os.environ.get("TORCH_OVERLAY_TEST_TIER") == "full"
OTHER_BASES = [PROJECT.with_base(v) for v in base_versions(PROJECT.pin_file)
               if v != PROJECT.base and series_file(PROJECT.with_base(v).patches_dir).exists()]


def prepared(project: Project) -> tuple[list[Path], dict[str, str]]:
    """The base's overlay tree, materialised; the PYTHONPATH entries and environment its runs need."""
    pin = load_pin(project.pin_file, project.base)
    base = load_base(project.cache, pin, pin.wheel_for_this_interpreter())
    tree.materialise(project, base)
    extra = with_privateuse1_backend(project.tree_dir / "torch", project.openreg_build_dir,
                                     runtime(project.cache, base))
    return [project.tree_dir, *extra.pythonpath], extra.env


class OverlayRuns:
    """Each test file of a base's series, run once on its overlay tree: the tree holds the whole
    series, so a file several patches touch (e.g. one meta test extended by four) gives every one
    of them the same result."""

    def __init__(self, project: Project, pythonpath: list[Path], env: dict[str, str], logs: Path) -> None:
        self.project, self.pythonpath, self.env, self.logs = project, pythonpath, env, logs
        self.done: dict[str, RunResult] = {}

    def of(self, patch: Patch) -> list[RunResult]:
        return [self.run(name) for name in existing_tests(patch, self.project.tree_dir)]

    def run(self, name: str) -> RunResult:
        if name not in self.done:
            log = self.logs / f"{name.replace('/', '_')}.log"
            self.done[name] = run_test_file(self.project.tree_dir, name, self.pythonpath, log, extra_env=self.env)
        return self.done[name]


@unittest.skipUnless(OTHER_BASES, "no other base with a series is pinned")
class TestOtherBases(unittest.TestCase):
    def test_every_patch_suite_passes_on_its_base(self) -> None:
        for project in OTHER_BASES:
            pythonpath, env = prepared(project)
            with tempfile.TemporaryDirectory() as logs:
                overlay = OverlayRuns(project, pythonpath, env, Path(logs))
                for patch in read_series(project.patches_dir):
                    with self.subTest(base=project.base, patch=patch.path.name):
                        runs = overlay.of(patch)
                        self.assertTrue(runs, f"{patch.path.name} has no regression test")
                        for run in runs:
                            self.assertEqual(run.outcome, FileOutcome.PASS, f"{run.file}: {run.summary()}\n{run.tail}")

    @unittest.skipUnless(FULL_TIER, "full tier: `python test/run_test.py --tier full`")
    def test_every_patch_is_proven_on_its_base(self) -> None:
        for project in OTHER_BASES:
            with self.subTest(base=project.base):
                result = subprocess.run([sys.executable, "-m", "torch_overlay", "-q", "--base", project.base,
                                         "verify", "patches"], cwd=REPO, capture_output=True, text=True)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
