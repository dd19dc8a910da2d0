"""Running one of the standalone programs in programs/ under a chosen torch tree."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import ToolError
from ..proofs.testrun import test_env
from .stats import Json, summarize

PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"


def program(name: str) -> str:
    """The path of programs/NAME.py, as a command-line argument."""
    return str(PROGRAMS_DIR / f"{name}.py")


def program_env(tree: Path, inductor_cache: Path) -> dict[str, str]:
    """A measured program runs in the environment of a test of `tree`'s torch (testrun.test_env)."""
    return test_env([tree], inductor_cache)


def run_under(tree: Path, args: Sequence[str], what: str) -> Json:
    """Run a program (`python ARGS`) under the torch in `tree`; its last stdout line is JSON."""
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache:
        # Inductor's caches are shared between processes by default: each run gets its own, so
        # neither side can answer the other's compiles.
        proc = subprocess.run([sys.executable, *args], env=program_env(tree, Path(cache)), cwd=cache,
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolError(f"{what} under {tree} failed:\n{proc.stderr.strip()[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "torch_file" in result and not Path(result["torch_file"]).resolve().is_relative_to(tree.resolve()):
        raise ToolError(f"PYTHONPATH={tree} imported torch from {result['torch_file']}")
    return result


def summarize_runs(results: list[Json]) -> Json:
    """One side's repeated runs of a compiled program: torch, compiles per run, time, max diff."""
    return {
        "torch": results[0]["torch"],
        "compiles": [r["compiles"] for r in results],
        **summarize([r["seconds"] for r in results]),
        "max_abs_diff": max(r["max_abs_diff"] for r in results),
    }
