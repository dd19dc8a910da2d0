"""Run one regression test file against a given torch directory, with its own inductor cache.

The torch under test is chosen by `PYTHONPATH` alone: it comes before the `.pth` of an editable
install, so the same interpreter runs the file against the overlay tree or against a stock
tree, without a second virtual environment. Inductor caches (FX graph, AOT autograd) are
shared between processes by default; a stale entry written by the other torch could answer
for this one, so every run gets a fresh `TORCHINDUCTOR_CACHE_DIR` that is deleted afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PASS, FAIL, CRASH, EMPTY, TIMEOUT = "pass", "fail", "crash", "no-tests", "timeout"
LOG_TAIL_LINES = 25
DEFAULT_TIMEOUT = 1800.0


@dataclass(frozen=True)
class RunResult:
    """How one test file ended. `outcome` is one of PASS, FAIL, CRASH, EMPTY, TIMEOUT."""

    file: str
    outcome: str
    returncode: int | None
    tests_run: int | None  # None: unittest never printed "Ran N tests" (import error, crash)
    failed: int  # failures + errors (+ unexpected successes)
    skipped: int
    seconds: float
    log: str  # path of the full output
    tail: str

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


def parse_unittest(output: str) -> tuple[int | None, int, int]:
    """(tests run, failed, skipped) from unittest's closing lines; run is None without them."""
    runs = re.findall(r"^Ran (\d+) tests? in ", output, flags=re.M)
    if not runs:
        return None, 0, 0
    status = re.findall(r"^(?:OK|FAILED)(?: \((.*)\))?\s*$", output, flags=re.M)
    pairs = re.findall(r"([a-z ]+)=(\d+)", status[-1] if status else "")
    counts = {name.strip(): int(n) for name, n in pairs}
    failed = sum(counts.get(k, 0) for k in ("failures", "errors", "unexpected successes"))
    # Each failing subTest counts as a failure of its own; report failing tests instead.
    failing_tests = set(re.findall(r"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (\S+ \([^)\s]*\))", output, flags=re.M))
    if failing_tests:
        failed = min(failed, len(failing_tests))
    return int(runs[-1]), failed, counts.get("skipped", 0)


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


def run_test_file(root: Path, test_file: str, pythonpath: list[Path], log: Path,
                  timeout: float = DEFAULT_TIMEOUT) -> RunResult:
    """Run `root/test_file` with `sys.executable`, cwd `root`, torch taken from `pythonpath`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="inductor-cache-") as cache, log.open("w") as out:
        try:
            proc = subprocess.run([sys.executable, test_file], cwd=root, env=test_env(pythonpath, Path(cache)),
                                  stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
            returncode: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            returncode = None
    text = log.read_text(errors="replace")
    tests_run, failed, skipped = parse_unittest(text)
    return RunResult(
        file=test_file,
        outcome=classify(returncode, tests_run, skipped),
        returncode=returncode,
        tests_run=tests_run,
        failed=failed,
        skipped=skipped,
        seconds=round(time.monotonic() - start, 1),
        log=str(log),
        tail="\n".join(text.splitlines()[-LOG_TAIL_LINES:]),
    )


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
