"""Part `tree`: time to a patched, importable torch from the cached base wheel.

Cold extraction (a fresh cache holding only the hard-linked wheel), warm extraction and an
unchanged re-run, each in a worker process; then the first `import torch` from the new tree.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core.project import Project
from .options import BenchOptions
from .runner import program, program_env
from .stats import Json, log, ratio, summarize
from .table import Panel, Row, row, seconds
from .targets import TREE_COLD, TREE_RSS, TREE_UNCHANGED, Measured, TargetCheck
from .worker import run_worker
from .workspace import Workspace

# The alternative to the overlay, as documented upstream. Quoted, not measured here: a source
# build needs an upstream checkout with submodules and hours of both cores.
SOURCE_BUILD_REFERENCE = {
    "figure": "294 build runner-minutes for 6 x86 CPU manywheel builds (6 x ~49 min) on "
              "`linux.12xlarge.memory.ephemeral` runners",
    "per_build_minutes": 49,
    "source": "https://github.com/pytorch/pytorch/pull/183931",
    "note": "upstream CI's per-Python CPU wheel builds before that PR (its 'Before vs after' table); "
            "not measured on this machine, where 2 cores would take several times longer",
}


def first_import(tree: Path) -> Json:
    """`import torch` from the fresh tree in a new interpreter (the first import also writes .pyc)."""
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, program("import_torch")], env=program_env(tree, Path(cache)),
                              cwd=tree.parent, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return {"ok": False, "seconds": round(seconds, 3), "error": proc.stderr.strip().splitlines()[-1:]}
    version, patches = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"ok": True, "seconds": round(seconds, 3), "version": version, "patches": patches}


def build(project: Project) -> Json:
    return run_worker("tree", root=str(project.root), cache=str(project.cache.root))


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    repeat = options.repeat
    cold: list[float] = []
    warm: list[float] = []
    unchanged: list[float] = []
    rss: list[float] = []
    imported: Json = {}
    for i in range(repeat):
        log(f"tree {i + 1}/{repeat}: cold extraction")
        cache = ws.fresh_cache(f"cold-cache-{i}")
        project = ws.new_project(f"cold-{i}", cache)
        result = build(project)
        cold.append(result["seconds"])
        rss.append(result["peak_rss_mb"])
        shutil.rmtree(project.root)
        shutil.rmtree(cache.root)
        log(f"tree {i + 1}/{repeat}: warm extraction, then unchanged re-run")
        project = ws.new_project(f"warm-{i}")
        result = build(project)
        warm.append(result["seconds"])
        rss.append(result["peak_rss_mb"])
        unchanged.append(build(project)["seconds"])
        if i == 0:
            imported = first_import(project.tree_dir)
        shutil.rmtree(project.root)
    part: Json = {
        "cold": summarize(cold), "warm": summarize(warm), "unchanged": summarize(unchanged),
        "cold_over_warm": ratio(statistics.median(cold), statistics.median(warm)),
        "first_import": imported, "peak_rss_mb": max(rss),
        "source_build_reference": SOURCE_BUILD_REFERENCE,
    }
    return part, [
        TREE_COLD.check(part["cold"]["median_s"]),
        TREE_UNCHANGED.check(part["unchanged"]["median_s"]),
        TREE_RSS.check(part["peak_rss_mb"]),
    ]


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    reference = part["source_build_reference"]
    found = [
        row("Patched torch from the cached wheel, cold extraction", seconds(part["cold"]["median_s"]),
            targets, TREE_COLD),
        row("... warm extraction", f"{seconds(part['warm']['median_s'])} ({part['cold_over_warm']}x faster than cold)"),
        row("... unchanged re-run", seconds(part["unchanged"]["median_s"]), targets, TREE_UNCHANGED),
        row("Alternative: CPU-only source build (upstream CI, not measured here)",
            f"~{reference['per_build_minutes']} min per x86 CPU wheel on upstream's 48-vCPU `linux.12xlarge` "
            f"runners ([pytorch#183931]({reference['source']})); hours on 2 cores"),
    ]
    if part["first_import"].get("ok"):
        found.append(row("First `import torch` from the new tree (writes .pyc)",
                         seconds(part["first_import"]["seconds"])))
    return found


def repetitions(part: Json) -> int:
    return len(part["cold"]["runs_s"])



def panels(part: Json) -> list[Panel]:
    return [("patched tree", ["cold", "warm"], [part["cold"]["median_s"], part["warm"]["median_s"]])]
