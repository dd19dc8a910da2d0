"""Run a test file with pytest against a given torch directory, with its own inductor cache.

The torch under test is chosen by `PYTHONPATH` alone: it comes before the `.pth` of an editable
install, so the same interpreter runs the file against the overlay tree or against a stock
tree, without a second virtual environment. Inductor caches (FX graph, AOT autograd) are
shared between processes by default; a stale entry written by the other torch could answer
for this one, so every run gets a fresh `TORCHINDUCTOR_CACHE_DIR` that is deleted afterwards.
Each case's outcome comes from pytest's JUnit XML (the one parser of test results here):
`verify`, `verify --against` and `verify --regressions` all compare runs case by case.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PASS, FAIL, CRASH, EMPTY, TIMEOUT = "pass", "fail", "crash", "no-tests", "timeout"
# One case's outcome, as pytest reports it.
CASE_PASSED, CASE_FAILED, CASE_SKIPPED = "passed", "failed", "skipped"
LOG_TAIL_LINES = 25
DEFAULT_TIMEOUT = 1800.0


@dataclass(frozen=True)
class RunResult:
    """How one test file ended. `outcome` is one of PASS, FAIL, CRASH, EMPTY, TIMEOUT."""

    file: str
    outcome: str
    returncode: int | None
    tests_run: int | None  # None: pytest wrote no report (crash before or while collecting)
    failed: int  # failures + errors
    skipped: int
    seconds: float
    log: str  # path of the full output
    tail: str
    cases: dict[str, str] = field(default_factory=dict)  # `Class::test` -> CASE_* outcome

    @property
    def failing(self) -> bool:
        """Whether the file did not pass: what a regression test must do on an unfixed torch."""
        return self.outcome in (FAIL, CRASH, TIMEOUT)

    def summary(self) -> str:
        if self.outcome == FAIL and self.tests_run:
            return f"fail {self.failed}/{self.tests_run}"
        if self.outcome == PASS and self.tests_run:
            skipped = f", {self.skipped} skipped" if self.skipped else ""
            return f"pass {self.tests_run - self.skipped}/{self.tests_run}{skipped}"
        return self.outcome

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_junit(xml_path: Path) -> dict[str, str]:
    """`Class::test` -> CASE_PASSED/CASE_FAILED/CASE_SKIPPED, from pytest's JUnit XML."""
    outcomes: dict[str, str] = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        key = f"{cls}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcomes[key] = CASE_FAILED
        elif case.find("skipped") is not None:
            outcomes[key] = CASE_SKIPPED
        else:
            outcomes[key] = CASE_PASSED
    return outcomes


def classify(returncode: int | None, tests_run: int | None, skipped: int) -> str:
    if returncode is None:
        return TIMEOUT
    if returncode != 0:
        return FAIL if tests_run is not None else CRASH
    # A file that ran nothing (or skipped everything) proves nothing either way.
    if not tests_run or skipped >= tests_run:
        return EMPTY
    return PASS


def test_env(pythonpath: list[Path], cache_dir: Path) -> dict[str, str]:
    # Inherited inductor settings (cache switches, cache dirs) would apply to one side of a
    # comparison as much as the other, but could re-enable a shared cache: both sides start clean.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TRITON_CACHE"))}
    # torch.testing turns CI=true into an implicit `--save-xml`, which needs the optional
    # xmlrunner package: every test file would crash before running under a CI system.
    env.pop("CI", None)
    env.update(
        PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath),
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir),
        TRITON_CACHE_DIR=str(cache_dir / "triton"),
        PYTHONUNBUFFERED="1",
    )
    return env


def run_pytest(test_path: Path, pythonpath: list[Path], log: Path, timeout: float = DEFAULT_TIMEOUT,
               cases: list[str] | None = None, extra_env: dict[str, str] | None = None,
               ) -> tuple[int | None, dict[str, str] | None]:
    """pytest on `test_path` (or only its `cases`, `Class::test`), cwd its directory.

    Returns the exit status (None: timed out) and each case's outcome (None: no JUnit XML, the
    run crashed before pytest could write it). The full output goes to `log`.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="testrun-") as scratch:
        cache = Path(scratch) / "inductor"
        cache.mkdir()
        env = dict(test_env(pythonpath, cache), **(extra_env or {}))
        xml_path = Path(scratch) / "junit.xml"
        targets = [f"{test_path}::{case}" for case in cases] if cases else [str(test_path)]
        cmd = [sys.executable, "-m", "pytest", *targets, f"--rootdir={test_path.parent}", "-p", "no:cacheprovider",
               "-q", "-rfE", f"--junit-xml={xml_path}"]
        with log.open("w") as out:
            try:
                returncode: int | None = subprocess.run(cmd, cwd=test_path.parent, env=env, stdout=out,
                                                        stderr=subprocess.STDOUT, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                returncode = None
        return returncode, parse_junit(xml_path) if xml_path.exists() else None


def run_test_file(root: Path, test_file: str, pythonpath: list[Path], log: Path,
                  timeout: float = DEFAULT_TIMEOUT, extra_env: dict[str, str] | None = None) -> RunResult:
    """Run `root/test_file` under pytest with `sys.executable`, torch taken from `pythonpath`."""
    start = time.monotonic()
    returncode, cases = run_pytest(root / test_file, pythonpath, log, timeout, extra_env=extra_env)
    text = log.read_text(errors="replace")
    outcomes = list((cases or {}).values())
    tests_run = None if cases is None else len(outcomes)
    skipped = outcomes.count(CASE_SKIPPED)
    return RunResult(
        file=test_file,
        outcome=classify(returncode, tests_run, skipped),
        returncode=returncode,
        tests_run=tests_run,
        failed=outcomes.count(CASE_FAILED),
        skipped=skipped,
        seconds=round(time.monotonic() - start, 1),
        log=str(log),
        tail="\n".join(text.splitlines()[-LOG_TAIL_LINES:]),
        cases=cases or {},
    )


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
