"""Part `suite`: `python test/run_test.py` wall time and slowest files (slow: only with --tier full/--only)."""

from __future__ import annotations

import re
import subprocess
import sys

from .options import BenchOptions
from .stats import Json, log, timed
from .table import Row, row
from .targets import SUITE_EXIT, SUITE_WALL, Measured, TargetCheck
from .workspace import Workspace

SLOWEST = 5
FAILURE_LINES = 120  # of run_test.py's output, logged when it fails
_SUITE_LINE = re.compile(r"^(PASSED|FAILED|SKIPPED)\s+(\S+) \((\d+(?:\.\d+)?)s\)\s*$", re.M)


def parse_suite_output(output: str) -> list[Json]:
    """Per-file results from run_test.py's `STATUS name (12.3s)` lines, slowest first."""
    files = [{"name": m[2], "status": m[1], "seconds": float(m[3])} for m in _SUITE_LINE.finditer(output)]
    return sorted(files, key=lambda f: (-f["seconds"], f["name"]))


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    project = ws.project
    log("suite: python test/run_test.py --keep-going (this takes a while)")
    cmd = [sys.executable, str(project.test_dir / "run_test.py"), "--keep-going"]
    seconds, proc = timed(lambda: subprocess.run(cmd, cwd=project.root, capture_output=True, text=True))
    files = parse_suite_output(proc.stdout)
    if proc.returncode != 0:  # the record keeps the verdict; the log keeps why
        log("suite: run_test.py failed; its output ends:\n" + "\n".join(proc.stdout.splitlines()[-FAILURE_LINES:]))
    part: Json = {
        "wall_s": round(seconds, 1), "returncode": proc.returncode, "files": len(files),
        "failed": [f["name"] for f in files if f["status"] == "FAILED"],
        "slowest": files[:SLOWEST], "summary": (proc.stdout.strip().splitlines() or [""])[-1],
    }
    return part, [SUITE_WALL.check(part["wall_s"]), SUITE_EXIT.check(proc.returncode)]


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    slow = ", ".join(f"`{f['name']}` {f['seconds']:.0f} s" for f in part["slowest"][:3])
    return [row(f"`python test/run_test.py` ({part['files']} files; slowest: {slow})",
                f"{part['wall_s'] / 60:.1f} min", targets, SUITE_WALL)]


def repetitions(part: Json) -> int:
    return 1  # the whole suite runs once
