"""`python -m torch_overlay bench`: the overlay's speed-ups, measured side by side in one run.

The machines this runs on are small and shared, so absolute times drift by tens of percent from
one minute to the next. Every comparison is therefore measured as a pair inside the same
repetition (cold then warm, raw copy then naive, stock then overlay) and reported as the ratio
of the medians of N repetitions. Parts:

  tree       time to a patched, importable torch from the cached base wheel: cold extraction
             (a fresh cache holding only the hard-linked wheel), warm extraction, unchanged re-run
  wheel      `build_wheel` (raw member copy) vs a naive zipfile re-deflate of the same content;
             sha256 of every build (they must all be equal)
  recompile  a compiled optimizer-style step, 20 learning rates, on stock 2.9.1 and the overlay
  training   a compiled training loop (MLP, cross-entropy, optimizer + StepLR, 100 steps,
             foreach both ways) on stock and the overlay: compiles, time, parameters vs eager
  floats     the float-parameter catalog of inductor/test_float_param_specialization on stock
             and the overlay: per program, results equal to eager for 5 values, and compiles
  openreg    OpenReg cold build (fresh build dir) and unchanged rebuild
  suite      `python test/run_test.py` wall time and slowest files (slow: only with --all/--only)

Builds run in a temporary project root (a copy of overlay.toml and patches/) inside the cache
directory, so hard links into the extraction cache work and the repository's own build/ is
never touched. Tree and wheel builds run in worker subprocesses so that their peak RSS can be
read from `getrusage`. Standard library only; matplotlib is imported for the chart alone.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Base, link_or_copy, load, sha256_of, wheel_path
from .errors import OverlayError, ToolError
from .pin import Pin, load_pin
from .project import Project
from .series import local_tag, read_series

PARTS = ("tree", "wheel", "recompile", "training", "floats", "openreg", "suite")
# The suite and the float catalog take many minutes each.
DEFAULT_PARTS = ("tree", "wheel", "recompile", "training", "openreg")
PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"
TRAINING_OPTIMIZERS = ("SGD", "AdamW")
TRAINING_STEPS = 100
FLOAT_CATALOG = "test/inductor/test_float_param_specialization.py"
SCHEMA = 1
RESULTS_FILE = "results.json"
CHART_FILE = "bench.png"
PACKAGE_PARENT = Path(__file__).resolve().parent.parent
RECOMPILE_FORMS = ("mul_div", "alpha")
RECOMPILE_STEPS = 20

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

Json = dict[str, Any]


# -- small helpers ------------------------------------------------------------------------------

def summarize(runs: Sequence[float]) -> Json:
    """Median and the individual runs: the spread shows how noisy the machine was."""
    return {"median_s": round(statistics.median(runs), 3), "runs_s": [round(r, 3) for r in runs]}


def ratio(slow: float, fast: float) -> float:
    return round(slow / fast, 1) if fast > 0 else float("inf")


def target(name: str, value: float | bool, op: str, limit: float | bool) -> Json:
    checks: dict[str, Callable[[Any, Any], bool]] = {
        "<=": lambda v, l: v <= l, ">=": lambda v, l: v >= l, "==": lambda v, l: v == l,
    }
    return {"name": name, "value": value, "op": op, "limit": limit, "ok": bool(checks[op](value, limit))}


def peak_rss_mb() -> float:
    """Peak RSS of this process or of its largest waited-for child (git), whichever is larger.

    The process's own peak comes from /proc's VmHWM, which starts afresh at exec: ru_maxrss of
    RUSAGE_SELF would also count the parent's memory at the time of the (v)fork, and a test
    process that has imported torch would then report gigabytes for a tiny build.
    """
    self_kb = _vm_hwm_kb() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(max(self_kb, children_kb) / 1024, 1)  # Linux reports kilobytes


def _vm_hwm_kb() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def same_members(a: Path, b: Path) -> bool:
    """Whether two zips hold the same members with the same content (names, CRCs, sizes)."""
    def listing(path: Path) -> list[tuple[str, int, int]]:
        with zipfile.ZipFile(path) as zf:
            return sorted((i.filename, i.CRC, i.file_size) for i in zf.infolist())
    return listing(a) == listing(b)


# -- worker subprocesses ------------------------------------------------------------------------
# Each measured build runs in its own process: its peak RSS is then its own (ru_maxrss only
# ever grows), and a build that balloons cannot hide inside the bench's own footprint.

def run_worker(task: str, **kwargs: str) -> Json:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_PARENT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-m", "torch_overlay.bench", task, json.dumps(kwargs)],
        env=env, capture_output=True, text=True,
    )
    if proc.returncode != 0:
        raise OverlayError(f"bench worker {task} failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _project_and_base(root: str, cache: str) -> tuple[Project, Pin, Base]:
    project = Project.at(Path(root), Path(cache))
    pin = load_pin(project.pin_file)
    return project, pin, load(project.cache_dir, pin, pin.wheel_for_this_interpreter())


def _work_tree(args: Json) -> Json:
    from .tree import materialise

    def build() -> None:  # loading the base is part of it: a cold cache extracts here
        project, _, base = _project_and_base(args["root"], args["cache"])
        materialise(project, base)

    seconds, _ = _timed(build)
    return {"seconds": seconds, "peak_rss_mb": peak_rss_mb()}


def _work_wheel(args: Json) -> Json:
    from .wheel import build_wheel

    project, pin, base = _project_and_base(args["root"], args["cache"])
    patches = read_series(project.patches_dir)
    seconds, path = _timed(lambda: build_wheel(pin, base, project.cache_dir, project.tree_dir, patches,
                                               Path(args["out"])))
    return {"seconds": seconds, "path": str(path), "peak_rss_mb": peak_rss_mb()}


def _work_naive(args: Json) -> Json:
    seconds, _ = _timed(lambda: naive_rezip(Path(args["src"]), Path(args["dst"])))
    return {"seconds": seconds, "peak_rss_mb": peak_rss_mb()}


WORKERS: dict[str, Callable[[Json], Json]] = {"tree": _work_tree, "wheel": _work_wheel, "naive": _work_naive}


def worker_main(argv: Sequence[str]) -> int:
    task, args = argv[0], json.loads(argv[1])
    print(json.dumps(WORKERS[task](args)))
    return 0


def naive_rezip(src: Path, dst: Path) -> None:
    """What a builder without raw copy does: inflate every member and deflate it again.

    Streamed member by member (zipfile's default level, like the custom wheel's new members),
    so the comparison is about CPU, not memory.
    """
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            member = zipfile.ZipInfo(info.filename, info.date_time)
            member.external_attr = info.external_attr
            member.compress_type = zipfile.ZIP_DEFLATED
            member.file_size = info.file_size  # lets zipfile pick zip64 up front for huge members
            if info.is_dir():
                zout.writestr(member, b"")
                continue
            with zin.open(info) as reader, zout.open(member, "w") as writer:
                shutil.copyfileobj(reader, writer, 1 << 20)


# -- the workspace ------------------------------------------------------------------------------

@dataclass
class Workspace:
    """Temporary project roots and caches for one bench run, on the cache's filesystem."""

    project: Project
    pin: Pin
    root: Path
    _warm: Project | None = None
    _stock: Path | None = None

    @property
    def wheel_file(self) -> Path:
        return wheel_path(self.project.cache_dir, self.pin, self.pin.wheel_for_this_interpreter())

    def new_project(self, name: str, cache_dir: Path | None = None) -> Project:
        """A project root holding copies of the pin and the series, and nothing built yet."""
        root = self.root / name
        root.mkdir(parents=True)
        shutil.copy2(self.project.pin_file, root / "overlay.toml")
        shutil.copytree(self.project.patches_dir, root / "patches")
        return Project.at(root, cache_dir or self.project.cache_dir)

    def fresh_cache(self, name: str) -> Path:
        """A cache holding only the (hard-linked) base wheel: the next build extracts it."""
        cache = self.root / name
        (cache / "wheels").mkdir(parents=True)
        link_or_copy(self.wheel_file, cache / "wheels" / self.wheel_file.name)
        return cache

    def warm_project(self) -> Project:
        """One materialised overlay tree, shared by the wheel, recompile and openreg parts."""
        if self._warm is None:
            project = self.new_project("overlay")
            run_worker("tree", root=str(project.root), cache=str(project.cache_dir))
            self._warm = project
        return self._warm

    def stock_tree(self) -> Path:
        if self._stock is None:
            from .stock import ensure_stock_tree

            base = load(self.project.cache_dir, self.pin, self.pin.wheel_for_this_interpreter())
            self._stock = ensure_stock_tree(base, self.root / "stock")
        return self._stock


@contextmanager
def workspace(project: Project, pin: Pin, parent: Path | None) -> Iterator[Workspace]:
    # The base must be fetched and extracted once up front, so that "warm" means warm.
    load(project.cache_dir, pin, pin.wheel_for_this_interpreter())
    parent = parent or project.cache_dir
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-", dir=parent))
    try:
        yield Workspace(project, pin, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- part: tree ---------------------------------------------------------------------------------

def first_import(tree: Path) -> Json:
    """`import torch` from the fresh tree in a new interpreter (the first import also writes .pyc)."""
    code = ("import json, torch; print(json.dumps([torch.__version__, "
            "len(getattr(torch.version, 'overlay_patches', ()))]))")
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=tree.parent, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return {"ok": False, "seconds": round(seconds, 3), "error": proc.stderr.strip().splitlines()[-1:]}
    version, patches = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"ok": True, "seconds": round(seconds, 3), "version": version, "patches": patches}


def bench_tree(ws: Workspace, repeat: int) -> Json:
    cold: list[float] = []
    warm: list[float] = []
    unchanged: list[float] = []
    rss: list[float] = []
    imported: Json = {}
    for i in range(repeat):
        log(f"tree {i + 1}/{repeat}: cold extraction")
        cache = ws.fresh_cache(f"cold-cache-{i}")
        project = ws.new_project(f"cold-{i}", cache)
        result = run_worker("tree", root=str(project.root), cache=str(cache))
        cold.append(result["seconds"])
        rss.append(result["peak_rss_mb"])
        shutil.rmtree(project.root)
        shutil.rmtree(cache)
        log(f"tree {i + 1}/{repeat}: warm extraction, then unchanged re-run")
        project = ws.new_project(f"warm-{i}")
        result = run_worker("tree", root=str(project.root), cache=str(project.cache_dir))
        warm.append(result["seconds"])
        rss.append(result["peak_rss_mb"])
        unchanged.append(run_worker("tree", root=str(project.root), cache=str(project.cache_dir))["seconds"])
        if i == 0:
            imported = first_import(project.tree_dir)
        shutil.rmtree(project.root)
    part = {
        "cold": summarize(cold), "warm": summarize(warm), "unchanged": summarize(unchanged),
        "cold_over_warm": ratio(statistics.median(cold), statistics.median(warm)),
        "first_import": imported, "peak_rss_mb": max(rss),
        "source_build_reference": SOURCE_BUILD_REFERENCE,
    }
    part["targets"] = [
        target("cold extraction to patched tree (s)", part["cold"]["median_s"], "<=", 60),
        target("unchanged re-run (s)", part["unchanged"]["median_s"], "<=", 5),
        target("tree build peak RSS (MB)", part["peak_rss_mb"], "<=", 24 * 1024),
    ]
    return part


# -- part: wheel --------------------------------------------------------------------------------

def bench_wheel(ws: Workspace, repeat: int) -> Json:
    project = ws.warm_project()
    builds = max(repeat, 2)  # determinism needs at least two builds
    fast: list[float] = []
    naive: list[float] = []
    shas: list[str] = []
    naive_shas: list[str] = []
    rss: dict[str, float] = {"wheel": 0.0, "naive": 0.0}
    same_content = True
    for i in range(builds):
        log(f"wheel {i + 1}/{builds}: build_wheel, then naive re-deflate")
        out = ws.root / f"wheel-{i}"
        built = run_worker("wheel", root=str(project.root), cache=str(project.cache_dir), out=str(out))
        wheel = Path(built["path"])
        fast.append(built["seconds"])
        rss["wheel"] = max(rss["wheel"], built["peak_rss_mb"])
        shas.append(sha256_of(wheel))
        if i < repeat:  # the naive build is the slow one: no extra runs beyond --repeat
            rezipped = out / "naive.whl"
            result = run_worker("naive", src=str(wheel), dst=str(rezipped))
            naive.append(result["seconds"])
            rss["naive"] = max(rss["naive"], result["peak_rss_mb"])
            naive_shas.append(sha256_of(rezipped))
            same_content = same_content and same_members(wheel, rezipped)
        shutil.rmtree(out)  # ~1 GB per wheel: never keep more than one pair on disk
    part = {
        "wheel_name": wheel.name, "build_wheel": summarize(fast), "naive": summarize(naive),
        "naive_over_build_wheel": ratio(statistics.median(naive), statistics.median(fast)),
        "sha256": shas, "naive_sha256": naive_shas, "deterministic": len(set(shas)) == 1,
        "same_content": same_content, "peak_rss_mb": rss,
    }
    part["targets"] = [
        target("naive / build_wheel time", part["naive_over_build_wheel"], ">=", 10),
        target("identical sha256 across builds", part["deterministic"], "==", True),
        target("naive re-deflate holds the same members", same_content, "==", True),
        target("wheel build peak RSS (MB)", rss["wheel"], "<=", 24 * 1024),
    ]
    return part


# -- part: recompile ----------------------------------------------------------------------------

# Runs under the torch selected by PYTHONPATH. Inductor's imports and first-compile set-up are
# paid by a throw-away compile before the clock starts, so the timed loop holds compiles and
# steps only. The recompile limit is raised above the step count: with the default (8), stock
# stops compiling after 8 values and silently runs the step eagerly, which hides the cost.
RECOMPILE_SCRIPT = r"""
import json, sys, time
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend

form, steps = sys.argv[1], int(sys.argv[2])
BETA2 = 0.999

def mul_div(p, g, lr):
    p.mul_(1 - 0.01 * lr)                   # decoupled weight decay
    u = g.clone()
    u.div_((1 - BETA2) ** 0.5 / lr)         # bias-corrected step size
    p.sub_(u)

def alpha(p, g, lr):
    p.add_(g, alpha=-lr / (1 - BETA2) ** 0.5)

step = {"mul_div": mul_div, "alpha": alpha}[form]
torch._dynamo.config.recompile_limit = steps + 8
torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(4))
torch._dynamo.reset()
counter = CompileCounterWithBackend("inductor")
compiled = torch.compile(step, backend=counter)
torch.manual_seed(0)
p, g = torch.randn(1024), torch.randn(1024)
p_eager = p.clone()
seconds, max_diff = 0.0, 0.0
for i in range(steps):
    lr = 0.1 * 0.9 ** i                     # a scheduler: a new float every step
    start = time.perf_counter()
    compiled(p, g, lr)
    seconds += time.perf_counter() - start
    step(p_eager, g, lr)
    max_diff = max(max_diff, (p - p_eager).abs().max().item())
print(json.dumps({"torch": torch.__version__, "torch_file": torch.__file__,
                  "compiles": counter.frame_count, "seconds": seconds, "max_abs_diff": max_diff}))
"""


def run_under(tree: Path, args: Sequence[str], what: str) -> Json:
    """Run a program (`python ARGS`) under the torch in `tree`; its last stdout line is JSON."""
    with tempfile.TemporaryDirectory(prefix="bench-inductor-") as cache:
        # Inductor's caches are shared between processes by default: each run gets its own, so
        # neither side can answer the other's compiles.
        env = dict(os.environ, PYTHONPATH=str(tree), TORCHINDUCTOR_CACHE_DIR=cache,
                   TRITON_CACHE_DIR=str(Path(cache) / "triton"))
        proc = subprocess.run([sys.executable, *args], env=env, cwd=cache, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolError(f"{what} under {tree} failed:\n{proc.stderr.strip()[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "torch_file" in result and not Path(result["torch_file"]).resolve().is_relative_to(tree.resolve()):
        raise ToolError(f"PYTHONPATH={tree} imported torch from {result['torch_file']}")
    return result


def run_step(tree: Path, form: str, steps: int) -> Json:
    return run_under(tree, ["-c", RECOMPILE_SCRIPT, form, str(steps)], f"compiled step ({form})")


def bench_recompile(ws: Workspace, repeat: int, steps: int = RECOMPILE_STEPS) -> Json:
    trees = {"stock": ws.stock_tree(), "overlay": ws.warm_project().tree_dir}
    runs: dict[str, dict[str, list[Json]]] = {f: {side: [] for side in trees} for f in RECOMPILE_FORMS}
    for i in range(repeat):
        for form in RECOMPILE_FORMS:
            for side, tree in trees.items():
                log(f"recompile {i + 1}/{repeat}: {form} on {side}")
                runs[form][side].append(run_step(tree, form, steps))
    part: Json = {"steps": steps, "recompile_limit": steps + 8, "forms": {}}
    targets = []
    for form, sides in runs.items():
        entry: Json = {}
        for side, results in sides.items():
            entry[side] = {
                "torch": results[0]["torch"],
                "compiles": [r["compiles"] for r in results],
                **summarize([r["seconds"] for r in results]),
                "max_abs_diff": max(r["max_abs_diff"] for r in results),
            }
        entry["stock_over_overlay"] = ratio(entry["stock"]["median_s"], entry["overlay"]["median_s"])
        part["forms"][form] = entry
        targets += [
            target(f"{form}: overlay compiles", max(entry["overlay"]["compiles"]), "<=", 2),
            target(f"{form}: stock / overlay time", entry["stock_over_overlay"], ">=", 5),
        ]
    part["targets"] = targets
    return part


# -- part: training -----------------------------------------------------------------------------

def bench_training(ws: Workspace, repeat: int, steps: int = TRAINING_STEPS) -> Json:
    trees = {"stock": ws.stock_tree(), "overlay": ws.warm_project().tree_dir}
    program = str(PROGRAMS_DIR / "training_loop.py")
    part: Json = {"steps": steps, "scheduler": "StepLR(step_size=10, gamma=0.7)", "runs": {}}
    targets = []
    for optimizer in TRAINING_OPTIMIZERS:
        for foreach in (0, 1):
            name = f"{optimizer} foreach={bool(foreach)}"
            entry: Json = {}
            for side, tree in trees.items():
                results = []
                for i in range(repeat):
                    log(f"training {i + 1}/{repeat}: {name} on {side}")
                    args = [program, "--optimizer", optimizer, "--foreach", str(foreach), "--steps", str(steps)]
                    results.append(run_under(tree, args, f"training loop ({name})"))
                entry[side] = {
                    "torch": results[0]["torch"], "compiles": [r["compiles"] for r in results],
                    **summarize([r["seconds"] for r in results]),
                    "equal_to_eager": all(r["equal_to_eager"] for r in results),
                    "max_abs_diff": max(r["max_abs_diff"] for r in results),
                }
            entry["stock_over_overlay"] = ratio(entry["stock"]["median_s"], entry["overlay"]["median_s"])
            part["runs"][name] = entry
            targets += [
                target(f"training {name}: overlay equal to eager", entry["overlay"]["equal_to_eager"], "==", True),
                target(f"training {name}: overlay compiles <= stock",
                       max(entry["overlay"]["compiles"]) <= max(entry["stock"]["compiles"]), "==", True),
            ]
    part["targets"] = targets
    return part


# -- part: floats -------------------------------------------------------------------------------

def bench_floats(ws: Workspace, programs: Sequence[str] = ()) -> Json:
    """Programs of the float catalog (default: all), on both sides: is each of 5 values computed
    as eager computes it, and how many compiles did it take (the test file's own --worker mode).
    The two sides run at the same time: this part counts, it does not time."""
    overlay = ws.warm_project().tree_dir
    trees = {"stock": ws.stock_tree(), "overlay": overlay}
    catalog = str(overlay / FLOAT_CATALOG)
    values = "[0.5, 0.75, 1.25, 1.5, 0.3]"
    log(f"floats: {len(programs) or 'every'} catalog program(s) on stock and overlay (many minutes)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {side: pool.submit(run_under, tree, [catalog, "--worker", "cpu", values, *programs],
                                     f"float catalog on {side}") for side, tree in trees.items()}
        sides = {side: future.result() for side, future in futures.items()}
    results = {
        name: {side: {"eager_equal": not sides[side][name][0], "wrong_values": sides[side][name][0],
                      "compiles": sides[side][name][1]} for side in trees}
        for name in sides["overlay"]
    }
    regressed = [n for n, p in results.items() if p["stock"]["eager_equal"] and not p["overlay"]["eager_equal"]]
    part: Json = {
        "values": json.loads(values), "programs": results,
        "stale_on_stock": sorted(n for n, p in results.items() if not p["stock"]["eager_equal"]),
        "stale_on_overlay": sorted(n for n, p in results.items() if not p["overlay"]["eager_equal"]),
        "regressed": regressed,
    }
    part["targets"] = [target("float catalog: programs stale on the overlay", len(part["stale_on_overlay"]), "==", 0)]
    return part


# -- part: openreg ------------------------------------------------------------------------------

def bench_openreg(ws: Workspace, repeat: int) -> Json:
    from .openreg import build_openreg

    torch_dir = ws.warm_project().tree_dir / "torch"
    cold: list[float] = []
    unchanged: list[float] = []
    for i in range(repeat):
        log(f"openreg {i + 1}/{repeat}: cold build, then unchanged rebuild")
        build_dir = ws.root / f"openreg-{i}"
        cold.append(_timed(lambda: build_openreg(torch_dir, build_dir, quiet=True))[0])
        unchanged.append(_timed(lambda: build_openreg(torch_dir, build_dir, quiet=True))[0])
        shutil.rmtree(build_dir)
    part = {"cold": summarize(cold), "unchanged": summarize(unchanged)}
    part["targets"] = [target("unchanged rebuild (s)", part["unchanged"]["median_s"], "<=", 3)]
    return part


# -- part: suite --------------------------------------------------------------------------------

_SUITE_LINE = re.compile(r"^(PASSED|FAILED|SKIPPED)\s+(\S+) \((\d+(?:\.\d+)?)s\)\s*$", re.M)


def parse_suite_output(output: str) -> list[Json]:
    """Per-file results from run_test.py's `STATUS name (12.3s)` lines, slowest first."""
    files = [{"name": m[2], "status": m[1], "seconds": float(m[3])} for m in _SUITE_LINE.finditer(output)]
    return sorted(files, key=lambda f: (-f["seconds"], f["name"]))


def bench_suite(project: Project, slowest: int = 5) -> Json:
    log("suite: python test/run_test.py --keep-going (this takes a while)")
    cmd = [sys.executable, str(project.root / "test" / "run_test.py"), "--keep-going"]
    seconds, proc = _timed(lambda: subprocess.run(cmd, cwd=project.root, capture_output=True, text=True))
    files = parse_suite_output(proc.stdout)
    part = {
        "wall_s": round(seconds, 1), "returncode": proc.returncode, "files": len(files),
        "failed": [f["name"] for f in files if f["status"] == "FAILED"],
        "slowest": files[:slowest], "summary": (proc.stdout.strip().splitlines() or [""])[-1],
    }
    part["targets"] = [
        target("suite wall time (s)", part["wall_s"], "<=", 20 * 60),
        target("suite exit status", proc.returncode, "==", 0),
    ]
    return part


# -- results ------------------------------------------------------------------------------------

def machine_info() -> Json:
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def merge(previous: Json | None, new: Json) -> Json:
    """Parts measured now replace the old ones; parts not run this time are kept (the slow suite
    is measured separately). Each part carries its own date and load average."""
    if previous is None or previous.get("schema") != SCHEMA:
        return new
    parts = dict(previous.get("parts", {}), **new["parts"])
    return dict(new, parts={name: parts[name] for name in PARTS if name in parts},
                targets_ok=all(t["ok"] for p in parts.values() for t in p.get("targets", [])))


def _cell(value: float, unit: str = "s") -> str:
    return f"{value:.1f} {unit}" if value >= 1 else f"{value:.2f} {unit}"


def markdown_table(results: Json) -> str:
    """The summary table for the README: one row per measured claim."""
    rows: list[tuple[str, str, str, str]] = []
    parts = results["parts"]
    ok = {t["name"]: "yes" if t["ok"] else "**no**" for p in parts.values() for t in p.get("targets", [])}
    if "tree" in parts:
        t = parts["tree"]
        rows += [
            ("Patched torch from the cached wheel, cold extraction", _cell(t["cold"]["median_s"]), "<= 60 s",
             ok["cold extraction to patched tree (s)"]),
            ("... warm extraction", f"{_cell(t['warm']['median_s'])} ({t['cold_over_warm']}x faster than cold)",
             "", ""),
            ("... unchanged re-run", _cell(t["unchanged"]["median_s"]), "<= 5 s", ok["unchanged re-run (s)"]),
            ("Alternative: CPU-only source build (upstream CI, not measured here)",
             f"~{t['source_build_reference']['per_build_minutes']} min per x86 CPU wheel on "
             f"`linux.12xlarge` runners ([pytorch#183931]({t['source_build_reference']['source']}))", "", ""),
        ]
        if t["first_import"].get("ok"):
            rows.append(("First `import torch` from the new tree (writes .pyc)",
                         _cell(t["first_import"]["seconds"]), "", ""))
    if "wheel" in parts:
        w = parts["wheel"]
        rows += [
            ("Custom wheel (`build_wheel`, raw member copy) vs naive re-deflate",
             f"{_cell(w['build_wheel']['median_s'])} vs {_cell(w['naive']['median_s'])} "
             f"(**{w['naive_over_build_wheel']}x**)", ">= 10x", ok["naive / build_wheel time"]),
            ("Custom wheel sha256 across builds",
             f"identical over {len(w['sha256'])} builds" if w["deterministic"] else "differs",
             "identical", ok["identical sha256 across builds"]),
        ]
    if "recompile" in parts:
        r = parts["recompile"]
        labels = {"mul_div": "`mul_`/`div_` form", "alpha": "`add_(g, alpha=-lr / (1 - beta2) ** 0.5)`"}
        for form, entry in r["forms"].items():
            s, o = entry["stock"], entry["overlay"]
            rows.append((
                f"Compiled step, {r['steps']} learning rates, {labels.get(form, form)}: stock vs overlay",
                f"{max(s['compiles'])} vs {max(o['compiles'])} compiles; {_cell(s['median_s'])} vs "
                f"{_cell(o['median_s'])} (**{entry['stock_over_overlay']}x**)",
                "<= 2 compiles, >= 5x",
                "yes" if ok[f"{form}: overlay compiles"] == ok[f"{form}: stock / overlay time"] == "yes" else "**no**",
            ))
    if "training" in parts:
        t = parts["training"]
        for name, entry in t["runs"].items():
            s, o = entry["stock"], entry["overlay"]
            rows.append((
                f"Compiled training loop, {t['steps']} steps, {name} + {t['scheduler']}: stock vs overlay",
                f"{max(s['compiles'])} vs {max(o['compiles'])} compiles; {_cell(s['median_s'])} vs "
                f"{_cell(o['median_s'])}; equal to eager: {'yes' if s['equal_to_eager'] else 'no'} / "
                f"{'yes' if o['equal_to_eager'] else 'no'}",
                "equal to eager, compiles <= stock",
                "yes" if ok[f"training {name}: overlay equal to eager"] == "yes"
                and ok[f"training {name}: overlay compiles <= stock"] == "yes" else "**no**",
            ))
    if "floats" in parts:
        f = parts["floats"]
        rows.append((
            f"Float catalog ({len(f['programs'])} programs x {len(f['values'])} values): stale on stock / overlay",
            f"{len(f['stale_on_stock'])} / {len(f['stale_on_overlay'])}", "0 on the overlay",
            ok["float catalog: programs stale on the overlay"],
        ))
    if "openreg" in parts:
        g = parts["openreg"]
        rows += [
            ("OpenReg cold build (fresh build dir)", _cell(g["cold"]["median_s"]), "", ""),
            ("OpenReg unchanged rebuild", _cell(g["unchanged"]["median_s"]), "<= 3 s", ok["unchanged rebuild (s)"]),
        ]
    if "suite" in parts:
        s = parts["suite"]
        slow = ", ".join(f"`{f['name']}` {f['seconds']:.0f} s" for f in s["slowest"][:3])
        rows.append((f"`python test/run_test.py` ({s['files']} files; slowest: {slow})",
                     f"{s['wall_s'] / 60:.1f} min", "<= 20 min", ok["suite wall time (s)"]))
    if "tree" in parts and "wheel" in parts:
        rows.append(("Peak RSS: tree build / wheel build",
                     f"{parts['tree']['peak_rss_mb']:.0f} MB / {parts['wheel']['peak_rss_mb']['wheel']:.0f} MB",
                     "far below 24 GB", ok["wheel build peak RSS (MB)"]))
    lines = ["| Measure | Result (median) | Target | Met |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    machine = results["machine"]
    lines.append("")
    lines.append(f"Median of {results['settings']['repeat']} runs, {machine['usable_cores']} cores, "
                 f"Python {machine['python']}, {results['date'][:10]} (`python -m torch_overlay bench`).")
    return "\n".join(lines)


def write_chart(results: Json, path: Path) -> None:
    """A small bar chart of the paired timings, one panel per ratio (each its own linear scale,
    from zero, so bar heights compare honestly within a panel)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise OverlayError(
            f"the chart needs matplotlib ({e}); install it outside the project, e.g. "
            "`pip install --target /tmp/mpl matplotlib` and PYTHONPATH=/tmp/mpl, or pass --no-chart"
        ) from e
    panels = chart_panels(results)
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 3.2), squeeze=False)
    for ax, (title, labels, values) in zip(axes[0], panels):
        bars = ax.bar(labels, values, color=["#b0b0b0", "#2b7bba"])
        ax.set_ylim(0, max(values) * 1.15)
        ax.set_title(f"{title}\n{values[0] / values[1]:.1f}x", fontsize=9)
        ax.set_ylabel("seconds (median)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.bar_label(bars, labels=[f"{v:.1f}s" if v >= 1 else f"{v:.2f}s" for v in values], fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def chart_panels(results: Json) -> list[tuple[str, list[str], list[float]]]:
    """(title, [slow label, fast label], [slow s, fast s]) for every ratio that was measured."""
    parts = results["parts"]
    panels = []
    if "recompile" in parts:
        for form, entry in parts["recompile"]["forms"].items():
            panels.append((f"compiled step ({form})", ["stock", "overlay"],
                           [entry["stock"]["median_s"], entry["overlay"]["median_s"]]))
    if "wheel" in parts:
        w = parts["wheel"]
        panels.append(("custom wheel", ["naive", "raw copy"], [w["naive"]["median_s"], w["build_wheel"]["median_s"]]))
    if "tree" in parts:
        t = parts["tree"]
        panels.append(("patched tree", ["cold", "warm"], [t["cold"]["median_s"], t["warm"]["median_s"]]))
    return panels


# -- the command --------------------------------------------------------------------------------

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", nargs="+", choices=PARTS, metavar="PART",
                   help=f"only these parts ({', '.join(PARTS)}); default: all but suite")
    p.add_argument("--all", action="store_true", help="every part, including the full test suite (slow)")
    p.add_argument("--repeat", type=int, default=3, metavar="N", help="runs per measurement, median reported (default: 3)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--output", type=Path, metavar="DIR",
                   help=f"merge the results into DIR/{RESULTS_FILE} and draw DIR/{CHART_FILE} (e.g. benchmarks/)")
    p.add_argument("--no-chart", action="store_true", help="with --output: write the JSON only")
    p.add_argument("--float-programs", nargs="+", default=(), metavar="NAME",
                   help="floats part: only these catalog programs (e.g. clamp_max_mixed; default: all)")
    p.add_argument("--workdir", type=Path, help="where temporary trees go (default: the cache dir, for hard links)")


def selected_parts(args: argparse.Namespace) -> list[str]:
    if args.all:
        return list(PARTS)
    return [p for p in PARTS if p in (args.only or DEFAULT_PARTS)]


def measure(project: Project, pin: Pin, parts: Sequence[str], repeat: int, workdir: Path | None,
            float_programs: Sequence[str] = ()) -> Json:
    results: Json = {
        "schema": SCHEMA, "date": now(), "machine": machine_info(),
        "base": {"version": pin.version, "revision": pin.revision},
        "series": local_tag(read_series(project.patches_dir)),
        "settings": {"repeat": repeat}, "parts": {},
    }
    runners: dict[str, Callable[[Workspace], Json]] = {
        "tree": lambda ws: bench_tree(ws, repeat),
        "wheel": lambda ws: bench_wheel(ws, repeat),
        "recompile": lambda ws: bench_recompile(ws, repeat),
        "training": lambda ws: bench_training(ws, repeat),
        "floats": lambda ws: bench_floats(ws, float_programs),
        "openreg": lambda ws: bench_openreg(ws, repeat),
        "suite": lambda ws: bench_suite(project),
    }
    with workspace(project, pin, workdir) as ws:
        for name in parts:
            start = now()
            part = runners[name](ws)
            results["parts"][name] = dict(part, measured_at=start, load_average_after=machine_info()["load_average"])
    results["targets_ok"] = all(t["ok"] for p in results["parts"].values() for t in p["targets"])
    return results


def run_bench(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise OverlayError("--repeat must be at least 1")
    results = measure(project, pin, selected_parts(args), args.repeat, args.workdir, args.float_programs)
    if args.output is not None:
        args.output.mkdir(parents=True, exist_ok=True)
        results_path = args.output / RESULTS_FILE
        previous = json.loads(results_path.read_text()) if results_path.exists() else None
        results = merge(previous, results)
        results_path.write_text(json.dumps(results, indent=1) + "\n")
        if not args.no_chart:
            write_chart(results, args.output / CHART_FILE)
    print(json.dumps(results, indent=1) if args.json else markdown_table(results))
    return 0 if results["targets_ok"] else 1


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
