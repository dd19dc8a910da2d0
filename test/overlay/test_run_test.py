"""Tests of test/run_test.py, the suite driver.

Most tests run the real runner (and so pytest) in a subprocess over a tiny synthetic `test/` tree
(plain unittest files, so no child imports torch and the whole file stays fast). The runner's hidden
`--test-root`/`--tree-root`/`--allow-stock-torch` options point it there; the torch checks are
exercised with fake `torch/version.py` packages on PYTHONPATH, which the runner reads without
importing torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from unittest import mock

RUNNER = Path(__file__).resolve().parents[1] / "run_test.py"
OPENREG = "cpp_extensions/open_registration_extension/torch_openreg/tests"


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_run_test_under_test", RUNNER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


runner = load_runner()

# Each synthetic file records what it saw (its inductor cache dir, whether that existed) in
# $RECORD_DIR/<name>.json, so the tests can check the per-file environment after the run.
RECORDING = """\
import json, os, sys, unittest
def record(**extra):
    name = os.path.splitext(os.path.basename(__file__))[0]
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")
    data = {"cache": cache, "cache_exists": os.path.isdir(cache), "ci": os.environ.get("CI"),
            "tier": os.environ.get("TORCH_OVERLAY_TEST_TIER"), **extra}
    with open(os.path.join(os.environ["RECORD_DIR"], name + ".json"), "w") as f:
        json.dump(data, f)
"""

PASSING = RECORDING + """
class TestPass(unittest.TestCase):
    def test_alpha(self):
        record()
        print("ran alpha \\x1b[31mcoloured\\x1b[0m")
    def test_beta(self):
        '''A docstring line.'''
        print("ran beta")
if __name__ == "__main__":
    unittest.main()
"""

FAILING = RECORDING + """
class TestFail(unittest.TestCase):
    def test_good(self):
        record()
    def test_bad(self):
        self.assertEqual(1, 2, "the deliberate failure")
if __name__ == "__main__":
    unittest.main()
"""

SKIPPING = """\
import unittest
class TestSkip(unittest.TestCase):
    @unittest.skip("nothing to do here")
    def test_one(self):
        pass
    @unittest.skip("nor here")
    def test_two(self):
        pass
if __name__ == "__main__":
    unittest.main()
"""

# Two files that each wait for the other to have started: they only pass when run in parallel.
RENDEZVOUS = """\
import os, time, unittest
class TestMeet(unittest.TestCase):
    def test_meet(self):
        me, other = {me!r}, {other!r}
        open(os.path.join(os.environ["RECORD_DIR"], me), "w").close()
        deadline = time.monotonic() + 15
        while not os.path.exists(os.path.join(os.environ["RECORD_DIR"], other)):
            self.assertLess(time.monotonic(), deadline, "the other file never started")
            time.sleep(0.05)
if __name__ == "__main__":
    unittest.main()
"""

OPENREG_SUITE = """\
import unittest
import fake_openreg_backend
class TestOpenReg(unittest.TestCase):
    def test_backend(self):
        self.assertEqual(fake_openreg_backend.NAME, "openreg")
if __name__ == "__main__":
    unittest.main()
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class RunnerTestBase(unittest.TestCase):
    def setUp(self) -> None:
        super().setUp()
        scratch = tempfile.TemporaryDirectory(prefix="test_run_test-")
        self.addCleanup(scratch.cleanup)
        self.root = Path(scratch.name)
        self.tests = self.root / "test"
        self.tree = self.root / "tree"
        self.records = self.root / "records"
        self.records.mkdir()
        write(self.tests / "overlay" / "test_pass.py", PASSING)
        write(self.tests / "overlay" / "test_fail.py", FAILING)
        write(self.tree / "test" / "inductor" / "test_skip.py", SKIPPING)
        (self.tree / ".git").mkdir()

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, RECORD_DIR=str(self.records), **extra)
        env.pop("CI", None)
        return env

    def run_runner(self, *args: str, synthetic: bool = True, python_flags: tuple[str, ...] = (),
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        hidden = ["--test-root", str(self.tests)]
        if synthetic:
            hidden += ["--tree-root", str(self.tree), "--allow-stock-torch"]
        return subprocess.run(
            [sys.executable, *python_flags, str(RUNNER), *hidden, *args],
            capture_output=True, text=True, env=env or self.env(), timeout=120,
        )

    def last_line(self, proc: subprocess.CompletedProcess[str]) -> str:
        return proc.stdout.rstrip("\n").splitlines()[-1]

    def listed(self, proc: subprocess.CompletedProcess[str]) -> list[str]:
        """Test names from --dry-run output."""
        return [line.split()[0] for line in proc.stdout.splitlines() if line.endswith(")") and "/" in line]


class TestRunAndReport(RunnerTestBase):
    def test_summary_counts_files_and_exit_status(self) -> None:
        proc = self.run_runner("--keep-going")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(self.last_line(proc), "1 passed, 1 failed, 1 skipped")
        lines = proc.stdout.splitlines()
        self.assertTrue(any(line.startswith("PASSED") and "overlay/test_pass" in line for line in lines))
        self.assertTrue(any(line.startswith("FAILED") and "overlay/test_fail" in line for line in lines))
        self.assertTrue(any(line.startswith("SKIPPED") and "inductor/test_skip" in line for line in lines))
        # The failing file's log tail is shown; the passing file's output is not.
        self.assertIn("the deliberate failure", proc.stdout)
        self.assertNotIn("ran beta", proc.stdout)

    def test_all_green_exits_zero_without_skipped_count(self) -> None:
        proc = self.run_runner("-i", "overlay/test_pass")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(self.last_line(proc), "1 passed, 0 failed")

    def test_stops_after_first_failure_without_keep_going(self) -> None:
        # One job: files run in name order: inductor/test_skip, overlay/test_fail, overlay/test_pass.
        proc = self.run_runner("-j", "1")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(self.last_line(proc), "0 passed, 1 failed, 1 skipped")
        self.assertIn("1 test file(s) not run", proc.stdout)
        self.assertFalse((self.records / "test_pass.json").exists())

    def test_continue_through_error_is_an_alias(self) -> None:
        proc = self.run_runner("--continue-through-error")
        self.assertEqual(self.last_line(proc), "1 passed, 1 failed, 1 skipped")

    def test_include_exclude_and_directory_names(self) -> None:
        proc = self.run_runner("--dry-run", "-i", "overlay", "inductor/test_skip", "-x", "overlay/test_fail")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.listed(proc), ["inductor/test_skip", "overlay/test_pass"])
        proc = self.run_runner("--dry-run", "-i", "test/overlay/test_pass.py")
        self.assertEqual(self.listed(proc), ["overlay/test_pass"])

    def test_unknown_name_suggests_close_matches(self) -> None:
        proc = self.run_runner("-i", "overlay/test_pas")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("unknown test 'overlay/test_pas'", proc.stderr)
        self.assertIn("did you mean overlay/test_pass", proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(self.run_runner("-x", "inductor/test_skp").returncode, 2)

    def test_dry_run_runs_nothing(self) -> None:
        proc = self.run_runner("--dry-run")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.listed(proc), ["inductor/test_skip", "overlay/test_fail", "overlay/test_pass"])
        self.assertEqual(list(self.records.iterdir()), [])

    def test_k_is_passed_to_the_tests(self) -> None:
        proc = self.run_runner("-v", "-i", "overlay/test_pass", "-k", "alpha")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("ran alpha", proc.stdout)
        self.assertNotIn("ran beta", proc.stdout)
        # Everything deselected counts as skipped, not as passed.
        proc = self.run_runner("-i", "overlay/test_pass", "-k", "no_such_test")
        self.assertEqual(self.last_line(proc), "0 passed, 0 failed, 1 skipped")

    def test_save_xml(self) -> None:
        reports = self.root / "reports"
        proc = self.run_runner("--keep-going", "--save-xml", str(reports))
        self.assertEqual(proc.returncode, 1)
        files = sorted(p.name for p in reports.iterdir())
        self.assertEqual(files, ["inductor.test_skip.xml", "overlay.test_fail.xml", "overlay.test_pass.xml"])
        suites = {name: ET.parse(reports / name).getroot().find("testsuite") for name in files}
        failing = suites["overlay.test_fail.xml"]
        assert failing is not None
        self.assertEqual((failing.get("tests"), failing.get("failures"), failing.get("errors")), ("2", "1", "0"))
        cases = {case.get("name"): case for case in failing.iter("testcase")}
        self.assertEqual(set(cases), {"test_good", "test_bad"})
        failure = cases["test_bad"].find("failure")
        assert failure is not None
        self.assertIn("the deliberate failure", failure.text or "")
        self.assertIsNone(cases["test_good"].find("failure"))
        self.assertEqual(cases["test_bad"].get("classname"), "overlay.test_fail.TestFail")
        passing = suites["overlay.test_pass.xml"]
        assert passing is not None
        self.assertEqual((passing.get("tests"), passing.get("failures")), ("2", "0"))
        # The test's output is in the report; its ANSI escape did not break the XML.
        self.assertIn("coloured", "".join(out.text or "" for out in passing.iter("system-out")))
        skipping = suites["inductor.test_skip.xml"]
        assert skipping is not None
        self.assertEqual(skipping.get("skipped"), "2")

    def test_default_xml_dir(self) -> None:
        proc = subprocess.run(
            [sys.executable, str(RUNNER), "--test-root", str(self.tests), "--tree-root", str(self.tree),
             "--allow-stock-torch", "-i", "overlay/test_pass", "--save-xml"],
            capture_output=True, text=True, env=self.env(), cwd=self.root, timeout=120,
        )
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        ET.parse(self.root / "test-reports" / "overlay.test_pass.xml")

    def test_a_file_that_does_not_import_is_a_failure(self) -> None:
        write(self.tests / "overlay" / "test_broken.py", "import no_such_module_here\n")
        proc = self.run_runner("-i", "overlay/test_broken")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertEqual(self.last_line(proc), "0 passed, 1 failed")
        self.assertIn("no_such_module_here", proc.stdout)

    def test_a_k_expression_pytest_rejects_is_a_usage_error(self) -> None:
        proc = self.run_runner("-i", "overlay/test_pass", "-k", "alpha and")
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("BROKEN", proc.stdout)

    def test_repeated_k_selects_any(self) -> None:
        proc = self.run_runner("-v", "-i", "overlay/test_pass", "-k", "alpha", "-k", "beta")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("ran alpha", proc.stdout)
        self.assertIn("ran beta", proc.stdout)

    def test_missing_pytest_is_a_broken_environment(self) -> None:
        # -S: no site-packages, so no pytest (and no torch, which --allow-stock-torch permits).
        proc = self.run_runner("-i", "overlay/test_pass", python_flags=("-S",))
        self.assertEqual(proc.returncode, 3, proc.stdout + proc.stderr)
        self.assertIn("pytest is not installed", proc.stderr)
        self.assertIn("-r test/requirements.txt", proc.stderr)
        self.assertEqual(list(self.records.iterdir()), [])

    def test_parallel_jobs(self) -> None:
        write(self.tests / "overlay" / "test_meet_a.py", RENDEZVOUS.format(me="a", other="b"))
        write(self.tests / "overlay" / "test_meet_b.py", RENDEZVOUS.format(me="b", other="a"))
        proc = self.run_runner("-j", "2", "-i", "overlay/test_meet_a", "overlay/test_meet_b")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertEqual(self.last_line(proc), "2 passed, 0 failed")

    def test_each_file_gets_its_own_inductor_cache(self) -> None:
        proc = self.run_runner("--keep-going", "-j", "2", env=self.env(TORCHINDUCTOR_CACHE_DIR="/shared", CI="true"))
        self.assertEqual(proc.returncode, 1)
        seen = [json.loads((self.records / f"{name}.json").read_text()) for name in ("test_pass", "test_fail")]
        caches = [entry["cache"] for entry in seen]
        self.assertNotEqual(caches[0], caches[1])
        self.assertNotIn("/shared", caches)
        self.assertTrue(all(entry["cache_exists"] for entry in seen))
        self.assertFalse(any(os.path.exists(cache) for cache in caches), "cache dirs must be deleted")
        self.assertEqual([entry["ci"] for entry in seen], [None, None])

    def test_the_full_tier_is_named_to_the_test_files(self) -> None:
        tiers = []
        for args in ((), ("--tier", "full")):
            proc = self.run_runner("-i", "overlay/test_pass", *args)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            tiers.append(json.loads((self.records / "test_pass.json").read_text())["tier"])
        self.assertEqual(tiers, [None, "full"])
        self.assertEqual(self.run_runner("--tier", "slow").returncode, 2)


class TestShardsAndTimes(RunnerTestBase):
    def test_shards_balance_by_recorded_time(self) -> None:
        for name in ("big", "s1", "s2", "s3", "s4"):
            write(self.tests / "overlay" / f"test_{name}.py", PASSING)
        (self.tests / "overlay" / "test_fail.py").unlink()
        (self.tests / "overlay" / "test_pass.py").unlink()
        times = {"overlay/test_big": 100.0, "overlay/test_s1": 10.0, "overlay/test_s2": 10.0,
                 "overlay/test_s3": 10.0, "overlay/test_s4": 10.0, "inductor/test_skip": 10.0}
        write(self.tests / ".test-times.json", json.dumps(times))
        first = self.listed(self.run_runner("--dry-run", "--shard", "1", "2"))
        second = self.listed(self.run_runner("--dry-run", "--shard", "2", "2"))
        self.assertEqual(first, ["overlay/test_big"])  # 100s alone vs 5 x 10s: by time, not by count
        self.assertEqual(sorted(first + second), sorted(times))
        self.assertEqual(self.listed(self.run_runner("--dry-run", "--shard", "1", "2")), first)

    def test_shard_function_default_is_the_average(self) -> None:
        suites = [runner.Suite(n, Path(n), "overlay", Path()) for n in ("a", "b", "c", "new")]
        times = {"a": 100.0, "b": 10.0, "c": 10.0}
        self.assertEqual(runner.estimates(["new"], times), {"new": 40.0})
        split = [[s.name for s in runner.shard(suites, i, 2, times)] for i in (1, 2)]
        self.assertEqual(split, [["a"], ["b", "c", "new"]])
        self.assertEqual(runner.estimates(["x"], {}), {"x": runner.shards.DEFAULT_DURATION})

    def test_parallel_runs_start_longest_first(self) -> None:
        suites = [runner.Suite(n, Path(n), "overlay", Path()) for n in ("a", "b", "c", "new")]
        times = {"a": 10.0, "b": 100.0, "c": 10.0}  # unknown "new": the average, 40
        self.assertEqual([s.name for s in runner.longest_first(suites, times)], ["b", "new", "a", "c"])
        self.assertGreaterEqual(runner.DEFAULT_JOBS, 1)
        self.assertLessEqual(runner.DEFAULT_JOBS, 2)

    def test_bad_shard_arguments(self) -> None:
        self.assertEqual(self.run_runner("--shard", "3", "2").returncode, 2)
        self.assertEqual(self.run_runner("--shard", "0", "2").returncode, 2)

    def test_update_times(self) -> None:
        write(self.tests / ".test-times.json", json.dumps({"overlay/test_fail": 5.0, "gone/test_old": 9.0}))
        proc = self.run_runner("--keep-going", "--update-times")
        self.assertEqual(proc.returncode, 1)
        times = json.loads((self.tests / ".test-times.json").read_text())
        # Failed files and files not found keep their old time; the rest are measured.
        self.assertEqual(sorted(times), ["gone/test_old", "inductor/test_skip", "overlay/test_fail", "overlay/test_pass"])
        self.assertEqual((times["overlay/test_fail"], times["gone/test_old"]), (5.0, 9.0))
        self.assertLess(times["overlay/test_pass"], 60.0)


class TestTorchChecks(RunnerTestBase):
    def fake_torch(self, overlay: bool, with_tree: bool) -> Path:
        site = self.root / "fake"
        write(site / "torch" / "__init__.py", "raise ImportError('the runner must not import torch')\n")
        version = "__version__ = '2.9.1'\n" + ("overlay_patches = ((1, 'fix'),)\n" if overlay else "")
        write(site / "torch" / "version.py", version)
        if with_tree:
            (site / ".git").mkdir()
            write(site / "test" / "dynamo" / "test_regression.py", SKIPPING)
        return site

    def test_stock_torch_is_refused(self) -> None:
        site = self.fake_torch(overlay=False, with_tree=False)
        proc = self.run_runner("--dry-run", synthetic=False, env=self.env(PYTHONPATH=str(site)))
        self.assertEqual(proc.returncode, 3)
        self.assertIn("not the overlay", proc.stderr)
        self.assertIn("pip install -e .", proc.stderr)

    def test_overlay_tree_is_found_next_to_torch(self) -> None:
        site = self.fake_torch(overlay=True, with_tree=True)
        proc = self.run_runner("--dry-run", synthetic=False, env=self.env(PYTHONPATH=str(site)))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.listed(proc), ["dynamo/test_regression", "overlay/test_fail", "overlay/test_pass"])

    def test_overlay_without_tree_is_refused(self) -> None:
        site = self.fake_torch(overlay=True, with_tree=False)
        proc = self.run_runner("--dry-run", synthetic=False, env=self.env(PYTHONPATH=str(site)))
        self.assertEqual(proc.returncode, 3)
        self.assertIn("pip install -e .", proc.stderr)

    def test_tree_without_regression_suites(self) -> None:
        site = self.fake_torch(overlay=True, with_tree=False)
        (site / ".git").mkdir()
        proc = self.run_runner("--dry-run", synthetic=False, env=self.env(PYTHONPATH=str(site)))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.listed(proc), ["overlay/test_fail", "overlay/test_pass"])

    def test_missing_torch(self) -> None:
        env = self.env()
        env.pop("PYTHONPATH", None)
        # -S: no site-packages (nor .pth files), so no torch at all.
        proc = self.run_runner("--dry-run", synthetic=False, python_flags=("-S",), env=env)
        self.assertEqual(proc.returncode, 3)
        self.assertIn("torch is not installed", proc.stderr)
        self.assertIn("pip install -e .", proc.stderr)


class TestOpenReg(RunnerTestBase):
    """In-process, with a stand-in for torch_overlay.artifacts.openreg.build_openreg."""

    def setUp(self) -> None:
        super().setUp()
        write(self.tests / OPENREG / "test_one.py", OPENREG_SUITE)
        write(self.tests / OPENREG / "test_two.py", OPENREG_SUITE)
        self.built = self.root / "openreg-python"
        write(self.built / "fake_openreg_backend.py", "NAME = 'openreg'\n")
        self.calls: list[tuple[Path, Path, bool]] = []

    def builder(self, torch_dir: Path, build_dir: Path, quiet: bool) -> Path:
        self.calls.append((torch_dir, build_dir, quiet))
        return self.built

    def main(self, *args: str, builder: Callable[[Path, Path, bool], Path] | None = None) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        argv = ["--test-root", str(self.tests), "--tree-root", str(self.tree), "--allow-stock-torch", *args]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch.dict(os.environ, RECORD_DIR=str(self.records)):
            status = runner.main(argv, openreg_builder=builder or self.builder)
        return status, out.getvalue(), err.getvalue()

    def test_built_once_and_put_on_pythonpath(self) -> None:
        status, out, _ = self.main("-i", "cpp_extensions")
        self.assertEqual(status, 0, out)
        self.assertEqual(out.splitlines()[-1], "2 passed, 0 failed")
        self.assertEqual(len(self.calls), 1)
        torch_dir, build_dir, _ = self.calls[0]
        self.assertTrue((torch_dir / "version.py").is_file())
        self.assertEqual(build_dir, runner.PROJECT.openreg_build_dir)

    def test_not_built_when_no_openreg_suite_is_selected(self) -> None:
        status, _, _ = self.main("-i", "overlay/test_pass")
        self.assertEqual(status, 0)
        self.assertEqual(self.calls, [])
        self.main("--dry-run")
        self.assertEqual(self.calls, [])

    def test_build_failure_is_a_clear_error(self) -> None:
        def failing(torch_dir: Path, build_dir: Path, quiet: bool) -> Path:
            raise RuntimeError("OpenRegKernels.cpp:12:5: error: 'foo' was not declared in this scope")

        status, out, err = self.main("-i", f"{OPENREG}/test_one", builder=failing)
        self.assertEqual(status, 3)
        self.assertIn("OpenReg build failed", err)
        self.assertIn("error: 'foo' was not declared", err)
        self.assertNotIn("passed", out)


class TestClassify(unittest.TestCase):
    def test_status_from_pytest_exit_and_counts(self) -> None:
        counts = runner.Counts
        self.assertEqual(runner.run_status(0, counts(tests=2, failed=0, skipped=0)), runner.RunStatus.PASSED)
        self.assertEqual(runner.run_status(0, counts(tests=3, failed=0, skipped=2)), runner.RunStatus.PASSED)
        self.assertEqual(runner.run_status(0, counts(tests=2, failed=0, skipped=2)), runner.RunStatus.SKIPPED)
        self.assertEqual(runner.run_status(5, None), runner.RunStatus.SKIPPED)  # nothing collected or selected
        self.assertEqual(runner.run_status(1, counts(tests=2, failed=1, skipped=0)), runner.RunStatus.FAILED)
        self.assertEqual(runner.run_status(2, None), runner.RunStatus.FAILED)  # a collection error
        self.assertEqual(runner.run_status(-11, None), runner.RunStatus.FAILED)  # killed by a signal
        self.assertEqual(runner.run_status(0, None), runner.RunStatus.FAILED)  # exit 0 but no report
        self.assertEqual(runner.run_status(3, None), runner.RunStatus.BROKEN)
        self.assertEqual(runner.run_status(4, None), runner.RunStatus.BROKEN)

    def test_counts_from_junit_xml(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.xml"
            path.write_text('<testsuites><testsuite name="a" tests="4" failures="1" errors="1" skipped="1">'
                            "</testsuite></testsuites>")
            self.assertEqual(runner.read_counts(path), runner.Counts(tests=4, failed=2, skipped=1))
            path.write_text("<testsuites><testsuite")
            self.assertIsNone(runner.read_counts(path))
            self.assertIsNone(runner.read_counts(Path(tmp) / "missing.xml"))



# The vector ISAs a child process's inductor would use, with the environment it is given.
PICKED_ISAS = "from torch._inductor.cpu_vec_isa import valid_vec_isa_list; print([str(i) for i in valid_vec_isa_list()])"


class TestVecIsaCheck(unittest.TestCase):
    """The CPU's vector ISAs are checked once per torch for a run's files (`testrun.vec_isa_env`)."""

    def picked(self, env: dict[str, str]) -> str:
        with tempfile.TemporaryDirectory() as cache:
            done = subprocess.run([sys.executable, "-c", PICKED_ISAS],
                                  env=runner.test_env([], Path(cache), env), capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        return done.stdout.strip().splitlines()[-1]

    def test_a_child_told_picks_what_it_would_have_checked(self) -> None:
        told = runner.vec_isa_env(())
        self.assertIn(told, ({}, {"TORCHINDUCTOR_VEC_ISA_OK": "1"}))
        if not told:
            self.skipTest("an ISA the CPU reports does not build or load here: children check for themselves")
        self.assertEqual(self.picked(told), self.picked({}))

    def test_a_torch_without_the_check_sets_nothing(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "torch").mkdir()
            (Path(tmp) / "torch" / "__init__.py").write_text("")
            self.assertEqual(runner.vec_isa_env((Path(tmp),)), {})


if __name__ == "__main__":
    unittest.main()
