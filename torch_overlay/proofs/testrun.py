"""Run a test file with pytest against a given torch directory, with its own inductor cache.

The torch under test is chosen by `PYTHONPATH` alone: it comes before the `.pth` of an editable
install, so the same interpreter runs the file against the overlay tree or against a stock
tree, without a second virtual environment. Inductor caches (FX graph, AOT autograd) are
shared between processes by default; a stale entry written by the other torch could answer
for this one, so every run gets a fresh `TORCHINDUCTOR_CACHE_DIR` that is deleted afterwards.
Each case's outcome comes from pytest's JUnit XML (the one parser of test results here, also
`test/run_test.py`'s): `verify patches`, `verify against` and `verify gate` all compare runs
case by case. `test_env` and `file_outcome` are likewise the runner's: a test file runs in the same
environment, and gets the same verdict, whichever of them runs it. That environment also names
the CUDA device-type test base of `test_hooks/` to torch: device-generic suites list their CUDA
cases on every machine, skipped with the reason where CUDA is absent.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.outcomes import CaseOutcome, FileOutcome

# What test processes load from the tool (and nothing else of it): the pytest plugin that logs
# each case as it ends, and the CUDA device-type test base (see test_hooks/*.py).
TEST_HOOKS_DIR = Path(__file__).resolve().parents[1] / "test_hooks"
CASE_LOG_PLUGIN = "overlay_case_log"
CUDA_TEST_BASE = TEST_HOOKS_DIR / "cuda_test_base.py"
CASE_LOG_ENV = "TORCH_OVERLAY_CASE_LOG"
LOG_TAIL_LINES = 25
DEFAULT_TIMEOUT = 1800.0
# The test tiers, one spelling everywhere (`verify gate --tier`, `run_test.py --tier`, `bench --tier`):
# `full` adds what is too slow for every run.
TIERS = ("fast", "full")


@dataclass(frozen=True)
class RunResult:
    """How one test file ended."""

    file: str
    outcome: FileOutcome
    returncode: int | None
    tests_run: int | None  # None: pytest wrote no report (crash before or while collecting)
    failed: int  # failures + errors
    skipped: int
    seconds: float
    log: str  # path of the full output
    tail: str
    cases: dict[str, CaseOutcome] = field(default_factory=dict)  # keyed `Class::test`

    @property
    def failing(self) -> bool:
        return self.outcome.failing

    def summary(self) -> str:
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        if self.outcome == FileOutcome.FAIL and self.tests_run:
            return f"fail {self.failed}/{self.tests_run}{skipped}"
        if self.outcome == FileOutcome.PASS and self.tests_run:
            return f"pass {self.tests_run - self.skipped}/{self.tests_run}{skipped}"
        return str(self.outcome)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Counts:
    """The totals a JUnit report states."""

    tests: int
    failed: int  # failures + errors
    skipped: int


@dataclass(frozen=True)
class Report:
    """pytest's JUnit XML: each case's outcome, and the totals."""

    cases: dict[str, CaseOutcome]  # keyed `Class::test`: passed, failed or skipped
    counts: Counts
    messages: dict[str, str] = field(default_factory=dict)  # failed case -> its failure's message
    durations: dict[str, float] = field(default_factory=dict)  # case -> seconds pytest measured


def read_report(xml_path: Path) -> Report | None:
    """The report; None when pytest wrote none, or not all of it (it crashed first)."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError):
        return None
    return Report(_case_outcomes(root), _totals(root), _failure_messages(root), _case_durations(root))


def read_counts(xml_path: Path) -> Counts | None:
    report = read_report(xml_path)
    return None if report is None else report.counts


def _case_name(case: ET.Element) -> str:
    """`Class::test`, the name a JUnit `<testcase>` has in every report and record."""
    cls = case.get("classname", "").rsplit(".", 1)[-1]
    return f"{cls}::{case.get('name')}"


def _case_outcomes(root: ET.Element) -> dict[str, CaseOutcome]:
    outcomes: dict[str, CaseOutcome] = {}
    for case in root.iter("testcase"):
        key = _case_name(case)
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes[key] = CaseOutcome.FAILED
        elif case.find("skipped") is not None:
            outcomes[key] = CaseOutcome.SKIPPED
        else:
            outcomes[key] = CaseOutcome.PASSED
    return outcomes


def _failure_messages(root: ET.Element) -> dict[str, str]:
    """The `message` pytest gives each failed case's failure or error (e.g. `AssertionError: ...`)."""
    messages: dict[str, str] = {}
    for case in root.iter("testcase"):
        failure = case.find("failure")
        failure = failure if failure is not None else case.find("error")
        if failure is not None:
            messages[_case_name(case)] = failure.get("message", "")
    return messages


def _case_durations(root: ET.Element) -> dict[str, float]:
    return {_case_name(case): float(case.get("time", "0")) for case in root.iter("testcase")}


def _totals(root: ET.Element) -> Counts:
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))

    def total(attribute: str) -> int:
        return sum(int(suite.get(attribute, "0")) for suite in suites)

    return Counts(total("tests"), total("failures") + total("errors"), total("skipped"))


# pytest's exit statuses (pytest.ExitCode) that are not the tests' doing; 1 (tests failed) and
# 2 (interrupted, e.g. by a collection error) are failures of the file.
PYTEST_INTERNAL, PYTEST_USAGE, PYTEST_NO_TESTS = 3, 4, 5


def file_outcome(returncode: int | None, counts: Counts | None) -> FileOutcome:
    """How a file ended, from pytest's exit status (None: timed out) and its report's totals."""
    if returncode is None:
        return FileOutcome.TIMEOUT
    if returncode in (PYTEST_INTERNAL, PYTEST_USAGE):
        return FileOutcome.BROKEN
    if returncode == PYTEST_NO_TESTS:
        return FileOutcome.EMPTY  # nothing collected or selected
    if counts is None:
        return FileOutcome.CRASH  # no (whole) report: it died before or while running, whatever its status
    if returncode != 0 or counts.failed:
        return FileOutcome.FAIL
    return FileOutcome.EMPTY if counts.tests == counts.skipped else FileOutcome.PASS


def test_env(pythonpath: Sequence[Path], cache_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a test subprocess: this one's, with `pythonpath` as PYTHONPATH (in
    that order, nothing inherited), a fresh inductor cache, and `extra` on top."""
    # Inherited inductor settings (cache switches, cache dirs) could re-enable a cache shared
    # with other runs, where an entry written by another file or another torch would answer.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TRITON_CACHE"))}
    # torch.testing turns CI=true into an implicit `--save-xml` (needing the optional xmlrunner
    # package) among other changes: a file must run the same on a laptop and under CI.
    env.pop("CI", None)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env.update(
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir),
        TRITON_CACHE_DIR=str(cache_dir / "triton"),
        PYTHONUNBUFFERED="1",
        TORCH_TEST_DEVICES=test_devices(env.get("TORCH_TEST_DEVICES", "")),
    )
    env.update(extra or {})
    return env


# Inductor asks, in every process that compiles for the CPU, whether each vector ISA the CPU
# reports can be built and loaded: it compiles a probe per ISA and imports torch in a new
# process to load it, about 10 s of every test process. The answer is the machine's and the
# compiler's, not the test's: it is asked once per torch here, and where every ISA passes the
# test processes are told so with inductor's own switch; they then pick the ISA they would have
# picked, without asking. Where one fails (or the torch has no such check) nothing is set.
VEC_ISA_OK = "TORCHINDUCTOR_VEC_ISA_OK"
VEC_ISA_PROBE = """
import json
from torch._inductor import config
from torch._inductor.cpu_vec_isa import valid_vec_isa_list
checked = [str(isa) for isa in valid_vec_isa_list()]
valid_vec_isa_list.cache_clear()
with config.patch({"cpp.vec_isa_ok": True}):
    assumed = [str(isa) for isa in valid_vec_isa_list()]
print(json.dumps(checked == assumed))
"""


_VEC_ISA_LOCK = threading.Lock()  # test files start on several threads at once: one probe each torch


def vec_isa_env(pythonpath: tuple[Path, ...]) -> dict[str, str]:
    """`{VEC_ISA_OK: "1"}` where the torch `pythonpath` selects builds and loads every vector ISA
    the CPU reports (so its test processes need not check again), else nothing."""
    with _VEC_ISA_LOCK:
        return _probe_vec_isa(pythonpath)


@functools.cache
def _probe_vec_isa(pythonpath: tuple[Path, ...]) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="vec-isa-") as scratch:
        try:
            done = subprocess.run([sys.executable, "-c", VEC_ISA_PROBE], env=test_env(pythonpath, Path(scratch)),
                                  capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return {}
    lines = done.stdout.split()
    return {VEC_ISA_OK: "1"} if done.returncode == 0 and lines[-1:] == ["true"] else {}


def test_devices(inherited: str) -> str:
    """torch's `TORCH_TEST_DEVICES` for a test process: device-generic suites report their CUDA
    variants, run or skipped with the reason, on every machine. torch splits the list on ":"
    (not os.pathsep); a user's own bases stay, and a process started by a test (the tool's
    tests run the tool) does not name the CUDA base twice."""
    own = [path for path in inherited.split(":") if path and path != str(CUDA_TEST_BASE)]
    return ":".join([str(CUDA_TEST_BASE), *own])


def pytest_command(targets: Sequence[str], rootdir: Path, xml_path: Path, options: Sequence[str] = ()) -> list[str]:
    """The one pytest command line of the tool and of `test/run_test.py`: `targets` with this
    interpreter, each case's outcome in the JUnit XML at `xml_path`, then `options`.

    No cache provider: a `.pytest_cache` in the fork tree would count as an uncommitted change.
    """
    return [sys.executable, "-m", "pytest", *targets, f"--rootdir={rootdir}", "-p", "no:cacheprovider",
            f"--junit-xml={xml_path}", *options]


def run_pytest(test_path: Path, pythonpath: list[Path], log: Path, timeout: float = DEFAULT_TIMEOUT,
               cases: list[str] | None = None, extra_env: dict[str, str] | None = None,
               case_log: Path | None = None, options: Sequence[str] = ()) -> tuple[int | None, Report | None]:
    """pytest on `test_path` (or only its `cases`, `Class::test`), cwd its directory.

    Returns the exit status (None: timed out) and the JUnit report (None: the run crashed before
    pytest could write it). The full output goes to `log` (appended to, with `case_log`, where
    each case is also logged as it ends: see `run_cases`). `options` go to pytest as they are.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="testrun-") as scratch:
        cache = Path(scratch) / "inductor"
        cache.mkdir()
        plugin: list[str] = []
        if case_log is not None:
            pythonpath = [*pythonpath, TEST_HOOKS_DIR]
            extra_env = {**(extra_env or {}), CASE_LOG_ENV: str(case_log)}
            plugin = ["-p", CASE_LOG_PLUGIN]
        env = test_env(pythonpath, cache, {**vec_isa_env(tuple(pythonpath)), **(extra_env or {})})
        xml_path = Path(scratch) / "junit.xml"
        targets = [f"{test_path}::{case}" for case in cases] if cases else [str(test_path)]
        # -rfEs: the log says why each case failed or skipped
        cmd = pytest_command(targets, test_path.parent, xml_path, [*plugin, *options, "-q", "-rfEs"])
        with log.open("a" if case_log is not None else "w") as out:
            try:
                returncode: int | None = subprocess.run(cmd, cwd=test_path.parent, env=env, stdout=out,
                                                        stderr=subprocess.STDOUT, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                returncode = None
        return returncode, read_report(xml_path)


@dataclass(frozen=True)
class CaseLog:
    """What a run's case log says (keys `Class::test`, as in a Report)."""

    collected: list[str]
    ended: dict[str, CaseOutcome]
    running: str | None  # started and never ended: the case the process died in

    @property
    def not_reached(self) -> list[str]:
        return [c for c in self.collected if c not in self.ended and c != self.running]


def read_case_log(path: Path) -> CaseLog:
    def key(nodeid: str) -> str:
        return "::".join(nodeid.split("::")[-2:])

    collected: list[str] = []
    ended: dict[str, CaseOutcome] = {}
    running = None
    lines = path.read_text().splitlines() if path.exists() else []
    for record in map(json.loads, lines):
        if "collected" in record:
            collected = [key(n) for n in record["collected"]]
        elif "started" in record:
            running = key(record["started"])
        else:
            ended[key(record["ended"])] = CaseOutcome(record["outcome"])
            running = None
    return CaseLog(collected, ended, running)


@dataclass(frozen=True)
class CaseRun:
    """What `run_cases` saw: the last exit status (None: timed out), each case's outcome, and what
    only a run that wrote its report knows: the failed cases' messages and the cases' durations."""

    returncode: int | None
    outcomes: dict[str, CaseOutcome]
    messages: dict[str, str] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)


def run_cases(test_path: Path, pythonpath: list[Path], log: Path, timeout: float = DEFAULT_TIMEOUT,
              cases: list[str] | None = None, extra_env: dict[str, str] | None = None) -> CaseRun:
    """Each case's outcome, like `run_pytest`, also when the process dies inside a case: that case
    is crashed and the cases it did not reach run in a new process, until none is left.

    `timeout` bounds all the runs together; a run that dies outside any case (collecting,
    exiting) ends the loop.
    """
    deadline = time.monotonic() + timeout
    outcomes: dict[str, CaseOutcome] = {}
    log.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cases-") as scratch:
        case_log = Path(scratch) / "cases.jsonl"
        while True:
            case_log.unlink(missing_ok=True)
            returncode, report = run_pytest(test_path, pythonpath, log, max(deadline - time.monotonic(), 1.0),
                                            cases, extra_env, case_log)
            if report is not None:
                return CaseRun(returncode, {**outcomes, **report.cases}, report.messages, report.durations)
            progress = read_case_log(case_log)
            outcomes.update(progress.ended)
            if returncode is None or progress.running is None:
                return CaseRun(returncode, outcomes)
            outcomes[progress.running] = CaseOutcome.CRASHED
            with log.open("a") as out:
                out.write(f"\n[{progress.running} crashed the run (exit {returncode}); "
                          f"running the {len(progress.not_reached)} case(s) it did not reach]\n")
            cases = progress.not_reached
            if not cases:
                return CaseRun(returncode, outcomes)


def collect_cases(test_path: Path, pythonpath: list[Path], log: Path, timeout: float = DEFAULT_TIMEOUT,
                  extra_env: dict[str, str] | None = None) -> list[str]:
    """The cases (`Class::test`) pytest collects from `test_path`, none run: the case log's list."""
    with tempfile.TemporaryDirectory(prefix="collect-") as scratch:
        case_log = Path(scratch) / "cases.jsonl"
        run_pytest(test_path, pythonpath, log, timeout, extra_env=extra_env, case_log=case_log,
                   options=["--collect-only"])
        return read_case_log(case_log).collected


def run_test_file(root: Path, test_file: str, pythonpath: list[Path], log: Path,
                  timeout: float = DEFAULT_TIMEOUT, extra_env: dict[str, str] | None = None) -> RunResult:
    """Run `root/test_file` under pytest with `sys.executable`, torch taken from `pythonpath`."""
    start = time.monotonic()
    returncode, report = run_pytest(root / test_file, pythonpath, log, timeout, extra_env=extra_env)
    text = log.read_text(errors="replace")
    counts = None if report is None else report.counts
    return RunResult(
        file=test_file,
        outcome=file_outcome(returncode, counts),
        returncode=returncode,
        tests_run=None if counts is None else counts.tests,
        failed=0 if counts is None else counts.failed,
        skipped=0 if counts is None else counts.skipped,
        seconds=round(time.monotonic() - start, 1),
        log=str(log),
        tail="\n".join(text.splitlines()[-LOG_TAIL_LINES:]),
        cases={} if report is None else report.cases,
    )
