#!/usr/bin/env python3
"""Run the overlay's test suites, one pytest process per test file, like upstream's test/run_test.py.

Usage (in the venv where `pip install -e . -r test/requirements.txt` ran):

    python test/run_test.py                       # everything
    python test/run_test.py -i inductor/test_scatter_meta_overlap -v
    python test/run_test.py --shard 1 2 --keep-going --save-xml

Test names are paths relative to a `test/` directory without `.py`, as upstream spells them.
Three kinds of suites are discovered:

* the tool's own tests, `test/overlay/test_*.py` in this repository;
* the regression suites the patches add to the fork tree, `<tree>/test/**/test_*.py`, where
  `<tree>` is the directory holding the imported `torch` package (a git repo with `test/`);
* the OpenReg suites, `test/cpp_extensions/open_registration_extension/torch_openreg/tests/`;
  OpenReg is (re)built once per run, before any of them runs, and put on PYTHONPATH.

Every file gets a fresh TORCHINDUCTOR_CACHE_DIR: inductor caches are shared between processes
by default, and a cache entry written by one file must never answer for another. pytest writes
each file's JUnit XML (`--junit-xml`); the file's status is read from it and from pytest's exit
status, and `--save-xml DIR` keeps it. The environment of a file's process, the reading of its
report and its verdict are the tool's own (`torch_overlay.proofs.testrun`, imported from this
checkout), so `verify` and this runner agree on every file.

Exit status: 0 all passed (or skipped), 1 a test failed, 2 a usage or input error (unknown test
name, bad option, unreadable times file), 3 the tool or the environment broke (no torch, not the
overlay, no pytest, OpenReg does not build, pytest itself crashed).

Hidden options, for the runner's own tests only (test/overlay/test_run_test.py):
`--test-root DIR` replaces this repository's `test/`, `--tree-root DIR` names the fork tree
instead of locating it from torch, and `--allow-stock-torch` skips the "is this the overlay"
check so synthetic suites can run under a stock torch. A synthetic `test/` compiles nothing, so
its runs do not check the CPU's vector ISAs for their files (`testrun.vec_isa_env`).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# Run as a file (`python test/run_test.py`): the tool's modules come from this checkout.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from torch_overlay.core import shards  # noqa: E402
from torch_overlay.core.outcomes import RunStatus  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.core.shards import estimates  # noqa: E402
from torch_overlay.fork.series import TEST_DIR  # noqa: E402
from torch_overlay.proofs import testrun  # noqa: E402
from torch_overlay.proofs.testrun import (  # noqa: E402
    PYTEST_USAGE,
    TIERS,
    Counts,
    pytest_command,
    read_counts,
    test_env,
    vec_isa_env,
)

PROJECT = Project.discover(REPO_ROOT)
DEFAULT_TEST_ROOT = PROJECT.test_dir
TIMES_FILE = ".test-times.json"
OPENREG_TESTS = Path("cpp_extensions/open_registration_extension/torch_openreg/tests")
LOG_TAIL_LINES = 40
DEFAULT_XML_DIR = "test-reports"
# Tests too slow for every run (e.g. a fresh venv of another Python) skip unless this is "full".
TIER_ENV = "TORCH_OVERLAY_TEST_TIER"
INSTALL_HINT = "run `pip install -e . -r test/requirements.txt` in this venv"
# Files at once by default: one per core, at most two. Each file compiles with inductor, whose
# C++ and worker processes already use every core; more files at once only add memory.
DEFAULT_JOBS = min(2, os.cpu_count() or 1)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3

# (torch package dir, build dir, quiet) -> directory to put on PYTHONPATH
OpenRegBuilder = Callable[[Path, Path, bool], Path]


class UsageError(Exception):
    """A bad command line or input file; reported on stderr, exit status 2."""


class EnvironmentBroken(Exception):
    """The environment cannot run the tests (no torch, no pytest, OpenReg does not build): exit 3."""


@dataclass(frozen=True)
class Suite:
    name: str  # e.g. "inductor/test_foo": relative to its test root, no ".py"
    path: Path
    kind: str  # "overlay", "tree" or "openreg"
    test_root: Path  # the `test/` directory it lives in; the subprocess runs there


@dataclass
class Result:
    suite: Suite
    status: RunStatus
    duration: float
    returncode: int
    output: str
    command: list[str]


# --------------------------------------------------------------------------------------------
# Which torch, which tree


@dataclass(frozen=True)
class TorchInfo:
    package_dir: Path
    version: str
    is_overlay: bool


def locate_torch() -> TorchInfo:
    """Find the torch this interpreter imports, without importing it (that takes seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        raise EnvironmentBroken(f"torch is not installed for {sys.executable}: {INSTALL_HINT}")
    package_dir = Path(spec.origin).resolve().parent
    version, is_overlay = _read_torch_version(package_dir)
    return TorchInfo(package_dir=package_dir, version=version, is_overlay=is_overlay)


def _read_torch_version(package_dir: Path) -> tuple[str, bool]:
    """(__version__, has overlay_patches) from torch/version.py.

    The module is executed on its own, which is instant; if it ever needs the rest of torch,
    fall back to importing torch in a subprocess (the answer that counts is the real import's).
    """
    try:
        spec = importlib.util.spec_from_file_location("_run_test_torch_version", package_dir / "version.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return str(module.__version__), hasattr(module, "overlay_patches")
    except Exception:
        code = "import json, torch.version as v; print(json.dumps([v.__version__, hasattr(v, 'overlay_patches')]))"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise EnvironmentBroken(f"cannot import torch from {package_dir}:\n{tail}\n{INSTALL_HINT}") from None
        version, is_overlay = json.loads(proc.stdout.strip().splitlines()[-1])
        return str(version), bool(is_overlay)


def installed_project(info: TorchInfo) -> Project:
    """The project seen through the installed torch's base (`2.15.0` of `2.15.0+ovl22.g...`): OpenReg
    is built for that torch in that base's build directory, never over another base's build."""
    return PROJECT.with_base(info.version.split("+", 1)[0])


def check_overlay(info: TorchInfo) -> None:
    if not info.is_overlay:
        raise EnvironmentBroken(
            f"torch {info.version} at {info.package_dir} is not the overlay "
            f"(its torch.version has no overlay_patches): {INSTALL_HINT}"
        )


def find_tree(info: TorchInfo) -> Path:
    """The fork tree: the git repo whose `torch/` is the imported package.

    Its `test/` holds the regression suites the patches add; a series that adds none leaves no
    `test/`, which is not an error (discover() then finds no tree suites).
    """
    tree = info.package_dir.parent
    if not (tree / ".git").exists():
        raise EnvironmentBroken(
            f"the overlay torch at {info.package_dir} is not inside a fork tree (expected {tree} to "
            f"be the git repo that `pip install -e .` sets up, with test/ beside torch/): {INSTALL_HINT}"
        )
    return tree


# --------------------------------------------------------------------------------------------
# Discovery and selection


def discover(test_root: Path, tree_root: Path | None) -> dict[str, Suite]:
    """All suites by name. A name defined twice is an error: `-i NAME` must mean one file."""
    found: list[Suite] = []
    for path in sorted((test_root / "overlay").glob("test_*.py")):
        found.append(_suite(path, test_root, "overlay"))
    for path in sorted((test_root / OPENREG_TESTS).glob("test_*.py")):
        found.append(_suite(path, test_root, "openreg"))
    if tree_root is not None:
        tree_tests = tree_root / TEST_DIR
        for path in sorted(tree_tests.rglob("test_*.py")):
            if "__pycache__" not in path.parts:
                found.append(_suite(path, tree_tests, "tree"))
    suites: dict[str, Suite] = {}
    for suite in found:
        if suite.name in suites:
            raise UsageError(f"test {suite.name} exists twice: {suites[suite.name].path} and {suite.path}")
        suites[suite.name] = suite
    return suites


def _suite(path: Path, test_root: Path, kind: str) -> Suite:
    name = path.relative_to(test_root).with_suffix("").as_posix()
    return Suite(name=name, path=path, kind=kind, test_root=test_root)


def resolve(requested: str, names: Sequence[str]) -> list[str]:
    """The names one -i/-x argument means: an exact name or a directory prefix (`inductor`).

    `test/overlay/test_tree.py` is accepted too, as it is what a shell completes.
    """
    candidates = [requested.rstrip("/")]
    stripped = candidates[0].removesuffix(".py")
    if stripped.startswith("test/"):
        stripped = stripped[len("test/"):]
    candidates.append(stripped)
    for candidate in candidates:
        if candidate in names:
            return [candidate]
        under = [name for name in names if name.startswith(candidate + "/")]
        if under:
            return under
    close = difflib.get_close_matches(stripped, names, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(close)}?" if close else "; --dry-run lists them all"
    raise UsageError(f"unknown test {requested!r}{hint}")


def select(suites: dict[str, Suite], include: Sequence[str], exclude: Sequence[str]) -> list[Suite]:
    names = sorted(suites)
    chosen = names
    if include:
        wanted = {name for requested in include for name in resolve(requested, names)}
        chosen = [name for name in names if name in wanted]
    unwanted = {name for requested in exclude for name in resolve(requested, names)}
    return [suites[name] for name in chosen if name not in unwanted]


# --------------------------------------------------------------------------------------------
# Durations and shards


def load_times(path: Path) -> dict[str, float]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); fix or delete it") from exc
    return {str(name): float(seconds) for name, seconds in data.items()}


def shard(suites: Sequence[Suite], which: int, total: int, times: dict[str, float]) -> list[Suite]:
    """The files of shard `which`: the tool's partition (`torch_overlay.core.shards`), which the
    differential gate's shards share."""
    by_name = {suite.name: suite for suite in suites}
    return [by_name[name] for name in shards.shard(list(by_name), which, total, times)]


def updated_times(old: dict[str, float], results: Sequence[Result]) -> dict[str, float]:
    """Old times for files not run, this run's for files that did not fail (a crash is not a
    duration). Entries of files not found are kept: a partial run (a shard, a tree whose series
    does not add a suite yet) must not erase what another run measured."""
    new = dict(old)
    for result in results:
        if result.status not in (RunStatus.FAILED, RunStatus.BROKEN):
            new[result.suite.name] = round(result.duration, 1)
    return dict(sorted(new.items()))


def write_times(path: Path, times: dict[str, float]) -> None:
    path.write_text(json.dumps(times, indent=2) + "\n")


# --------------------------------------------------------------------------------------------
# Running one file


@dataclass(frozen=True)
class RunOptions:
    child_verbose: bool
    keywords: tuple[str, ...]
    echo: bool  # stream the child's output as it comes (-v with one job)
    openreg_path: Path | None
    xml_dir: Path | None  # --save-xml: keep each file's JUnit XML there
    full: bool  # --tier full: the slow tier too
    share_vec_isa_check: bool  # several files: the CPU's vector ISAs are checked once for all (testrun.vec_isa_env)


def xml_name(suite: Suite) -> str:
    return suite.name.replace("/", ".") + ".xml"


def command(suite: Suite, options: RunOptions, xml_path: Path) -> list[str]:
    """pytest on one file; its JUnit XML says how the file went (and is the report, if kept)."""
    cmd = pytest_command([str(suite.path)], suite.test_root, xml_path, [
        "-o", f"junit_suite_name={suite.name}", "-o", "junit_logging=all",
        # verbose: every test's name, and the output of passing tests too (-rA)
        *(("-v", "-rA") if options.child_verbose else ("-q", "-rfE")),
    ])
    if options.keywords:  # repeated -k means any of them, as with unittest
        cmd += ["-k", " or ".join(f"({keyword})" for keyword in options.keywords)]
    return cmd


def child_env(suite: Suite, cache_dir: Path, options: RunOptions) -> dict[str, str]:
    tier = {TIER_ENV: "full", "PYTORCH_TEST_WITH_SLOW": "1"} if options.full else {}  # torch's @slowTest switch
    extra: list[Path] = []
    if suite.kind == "overlay":
        extra.append(PROJECT.root)  # the tool's tests import torch_overlay from the checkout
    if suite.kind == "openreg" and options.openreg_path is not None:
        extra.append(options.openreg_path)
    # The installed torch is the one under test: whatever PYTHONPATH holds stays, after these.
    inherited = [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    isa = vec_isa_env(tuple(inherited)) if options.share_vec_isa_check else {}
    return test_env([*extra, *inherited], cache_dir, {**isa, **tier})


def run_suite(suite: Suite, options: RunOptions) -> Result:
    if options.echo:
        print(f"--- {suite.name}", flush=True)  # the output that follows is this file's
    scratch = Path(tempfile.mkdtemp(prefix="run_test-"))
    xml_path = (options.xml_dir or scratch) / xml_name(suite)
    cmd = command(suite, options, xml_path)
    start = time.monotonic()
    try:
        cache_dir = scratch / "inductor"
        cache_dir.mkdir()
        returncode, output = _run_process(cmd, child_env(suite, cache_dir, options), suite.test_root, options.echo)
        counts = read_counts(xml_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    duration = time.monotonic() - start
    return Result(suite, run_status(returncode, counts), duration, returncode, output, cmd)


def _run_process(cmd: list[str], env: dict[str, str], cwd: Path, echo: bool) -> tuple[int, str]:
    """Run, merging stderr into stdout; optionally echo each line as it arrives."""
    with subprocess.Popen(
        cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as proc:
        assert proc.stdout is not None
        chunks: list[str] = []
        for raw in proc.stdout:
            line = raw.decode("utf-8", errors="replace")
            chunks.append(line)
            if echo:
                sys.stdout.write(line)
                sys.stdout.flush()
        returncode = proc.wait()
    return returncode, "".join(chunks)


def run_status(returncode: int, counts: Counts | None) -> RunStatus:
    """The file's status as this runner prints it: a file that ran no test (or skipped all) is
    SKIPPED, not a pass, but no failure either."""
    return RunStatus.of(testrun.file_outcome(returncode, counts))


# --------------------------------------------------------------------------------------------
# The run


def run_all(suites: Sequence[Suite], options: RunOptions, jobs: int, keep_going: bool,
            on_result: Callable[[Result], None]) -> tuple[list[Result], int]:
    """Run files, `jobs` at a time; without keep_going, start nothing new after a failure
    (files already running finish). Returns the results and how many files were not started."""
    queue = list(suites)
    results: list[Result] = []
    stop = False
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        running: set[concurrent.futures.Future[Result]] = set()
        while queue or running:
            while queue and not stop and len(running) < jobs:
                running.add(pool.submit(run_suite, queue.pop(0), options))
            if not running:
                break
            done, running = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: f.result().suite.name):
                result = future.result()
                results.append(result)
                on_result(result)
                stop = stop or (result.status in (RunStatus.FAILED, RunStatus.BROKEN) and not keep_going)
    return results, len(queue)


def longest_first(suites: Sequence[Suite], times: dict[str, float]) -> list[Suite]:
    """Longest recorded file first: with several jobs, the run then does not end waiting for a
    long file that started last."""
    cost = estimates([suite.name for suite in suites], times)
    return sorted(suites, key=lambda suite: (-cost[suite.name], suite.name))


def report(result: Result, verbose: bool, echoed: bool) -> None:
    print(f"{result.status:<7} {result.suite.name} ({result.duration:.1f}s)", flush=True)
    if verbose and not echoed:
        sys.stdout.write(result.output)
    elif result.status in (RunStatus.FAILED, RunStatus.BROKEN) and not echoed:
        for line in result.output.splitlines()[-LOG_TAIL_LINES:]:
            print(f"    {line}")
    if result.status in (RunStatus.FAILED, RunStatus.BROKEN):
        print(f"    reproduce: TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) {shlex.join(result.command)}")
    sys.stdout.flush()


def summary(results: Sequence[Result]) -> str:
    """`N passed, N failed[, N skipped]`: a file pytest could not run counts as failed."""
    passed, skipped = (sum(r.status == status for r in results) for status in (RunStatus.PASSED, RunStatus.SKIPPED))
    failed = sum(r.status in (RunStatus.FAILED, RunStatus.BROKEN) for r in results)
    return f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")


def exit_status(results: Sequence[Result]) -> int:
    broken = [r for r in results if r.status == RunStatus.BROKEN]
    if broken:
        # pytest's usage error can only come from what was passed through (-k): the user's input.
        return EXIT_USAGE if all(r.returncode == PYTEST_USAGE for r in broken) else EXIT_BROKEN
    return EXIT_FAILED if any(r.status == RunStatus.FAILED for r in results) else EXIT_OK


def default_openreg_builder(torch_dir: Path, build_dir: Path, quiet: bool) -> Path:
    try:
        from torch_overlay.artifacts.openreg import build_openreg
    except ImportError as exc:
        raise EnvironmentBroken(
            f"cannot build OpenReg: torch_overlay.artifacts.openreg is not importable ({exc})") from exc
    return build_openreg(torch_dir, build_dir, quiet=quiet)


def build_openreg_once(builder: OpenRegBuilder, torch_dir: Path, build_dir: Path, quiet: bool) -> Path:
    print(f"building OpenReg in {build_dir} ...", flush=True)
    try:
        return builder(torch_dir, build_dir, quiet)
    except EnvironmentBroken:
        raise
    except Exception as exc:  # OpenRegBuildError carries the compiler's first error
        raise EnvironmentBroken(f"OpenReg build failed ({type(exc).__name__}):\n{exc}") from exc


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="run_test.py",
        description="Run the overlay's test files, each in its own process, against the installed torch.",
    )
    parser.add_argument("-i", "--include", nargs="+", default=[], metavar="TEST",
                        help="run only these tests (names like inductor/test_foo, or a directory)")
    parser.add_argument("-x", "--exclude", nargs="+", default=[], metavar="TEST", help="skip these tests")
    parser.add_argument("--shard", nargs=2, type=int, metavar=("WHICH", "TOTAL"),
                        help="run shard WHICH (1-based) of TOTAL, balanced by recorded durations")
    parser.add_argument("--keep-going", "--continue-through-error", action="store_true", dest="keep_going",
                        help="run all files even after one failed (default: stop after the first failure)")
    parser.add_argument("-v", "--verbose", action="store_true", help="run tests verbosely and show their output")
    parser.add_argument("--save-xml", nargs="?", const=DEFAULT_XML_DIR, metavar="DIR",
                        help=f"write JUnit XML per test file into DIR (default: {DEFAULT_XML_DIR})")
    parser.add_argument("--dry-run", action="store_true", help="list the files that would run, run nothing")
    parser.add_argument("-k", action="append", default=[], dest="keywords", metavar="EXPR",
                        help="only run tests matching EXPR (pytest -k); repeatable: any of them")
    parser.add_argument("-j", "--jobs", type=int, default=DEFAULT_JOBS, metavar="N",
                        help=f"run N files in parallel, longest recorded first (default: {DEFAULT_JOBS})")
    parser.add_argument("--tier", choices=TIERS, default="fast",
                        help=f"fast (the default) or full: also the slow tier (sets {TIER_ENV}=full for the test "
                             "files)")
    parser.add_argument("--update-times", action="store_true",
                        help=f"record this run's per-file durations in test/{TIMES_FILE}")
    parser.add_argument("--test-root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tree-root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--allow-stock-torch", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shard is not None:
        which, total = args.shard
        if total < 1 or not 1 <= which <= total:
            parser.error(f"--shard {which} {total}: need 1 <= WHICH <= TOTAL")
    if args.jobs < 1:
        parser.error("-j/--jobs must be at least 1")
    if args.update_times and args.keywords:
        parser.error("--update-times with -k would record durations of a partial run")
    return args


def plan(args: argparse.Namespace) -> tuple[TorchInfo | None, list[Suite], Path]:
    """Check torch, discover, select and shard: everything before anything runs."""
    test_root = (args.test_root or DEFAULT_TEST_ROOT).resolve()
    info: TorchInfo | None = None
    tree: Path | None = args.tree_root.resolve() if args.tree_root else None
    try:
        info = locate_torch()
    except EnvironmentBroken:
        if not args.allow_stock_torch:
            raise
    if not args.allow_stock_torch:
        assert info is not None
        check_overlay(info)
        tree = tree or find_tree(info)
    suites = discover(test_root, tree)
    selected = select(suites, args.include, args.exclude)
    times_path = test_root / TIMES_FILE
    if args.shard is not None:
        selected = shard(selected, args.shard[0], args.shard[1], load_times(times_path))
    return info, selected, times_path


def check_pytest() -> None:
    if importlib.util.find_spec("pytest") is None:
        raise EnvironmentBroken(f"pytest is not installed for {sys.executable}: {INSTALL_HINT}")


def execute(args: argparse.Namespace, builder: OpenRegBuilder | None) -> int:
    info, selected, times_path = plan(args)
    times = load_times(times_path)
    if args.dry_run:
        cost = estimates([s.name for s in selected], times)
        for suite in selected:
            print(f"{suite.name}  (~{cost[suite.name]:.0f}s, {suite.kind})")
        print(f"{len(selected)} test file(s) would run, ~{sum(cost.values()):.0f}s")
        return EXIT_OK
    check_pytest()
    openreg_path: Path | None = None
    if any(suite.kind == "openreg" for suite in selected):
        if info is None:
            raise EnvironmentBroken(f"torch is not installed for {sys.executable}: {INSTALL_HINT}")
        openreg_path = build_openreg_once(builder or default_openreg_builder, info.package_dir,
                                          installed_project(info).openreg_build_dir, not args.verbose)
    where = f" against torch {info.version} ({info.package_dir})" if info is not None else ""
    print(f"running {len(selected)} test file(s){where}", flush=True)
    echo = args.verbose and args.jobs == 1
    xml_dir = Path(args.save_xml).resolve() if args.save_xml is not None else None
    if xml_dir is not None:
        xml_dir.mkdir(parents=True, exist_ok=True)
    options = RunOptions(child_verbose=args.verbose, keywords=tuple(args.keywords), echo=echo,
                         openreg_path=openreg_path, xml_dir=xml_dir, full=args.tier == "full",
                         share_vec_isa_check=len(selected) > 1 and args.test_root is None)

    def on_result(result: Result) -> None:
        report(result, args.verbose, echo)

    order = selected if args.jobs == 1 else longest_first(selected, times)
    results, not_started = run_all(order, options, args.jobs, args.keep_going, on_result)
    if not_started:
        print(f"stopped after a failure: {not_started} test file(s) not run (--keep-going runs them all)")
    if args.update_times:
        write_times(times_path, updated_times(times, results))
    print(summary(results), flush=True)
    return exit_status(results)


def main(argv: Sequence[str] | None = None, *, openreg_builder: OpenRegBuilder | None = None) -> int:
    args = parse_args(argv)
    try:
        return execute(args, openreg_builder)
    except UsageError as exc:
        print(f"run_test.py: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EnvironmentBroken as exc:
        print(f"run_test.py: error: {exc}", file=sys.stderr)
        return EXIT_BROKEN


if __name__ == "__main__":
    sys.exit(main())
