#!/usr/bin/env python3
"""Run the overlay's test suites, one subprocess per test file, like upstream's test/run_test.py.

Usage (in the venv where `pip install -e .` ran):

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
by default, and a cache entry written by one file must never answer for another.

Hidden options, for the runner's own tests only (test/overlay/test_run_test.py):
`--test-root DIR` replaces this repository's `test/`, `--tree-root DIR` names the fork tree
instead of locating it from torch, and `--allow-stock-torch` skips the "is this the overlay"
check so synthetic suites can run under a stock torch.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEST_ROOT = REPO_ROOT / "test"
TIMES_FILE = ".test-times.json"
OPENREG_TESTS = Path("cpp_extensions/open_registration_extension/torch_openreg/tests")
OPENREG_BUILD_DIR = REPO_ROOT / "build" / "openreg"
# Used for files missing from the times file when the file itself has no entries to average.
DEFAULT_DURATION = 30.0
LOG_TAIL_LINES = 40
DEFAULT_XML_DIR = "test-reports"
INSTALL_HINT = "run `pip install -e .` in this venv"

PASSED, FAILED, SKIPPED = "PASSED", "FAILED", "SKIPPED"

# (torch package dir, build dir, quiet) -> directory to put on PYTHONPATH
OpenRegBuilder = Callable[[Path, Path, bool], Path]


class UsageError(Exception):
    """A problem the user must fix before anything can run; reported on stderr, exit status 2."""


@dataclass(frozen=True)
class Suite:
    name: str  # e.g. "inductor/test_foo": relative to its test root, no ".py"
    path: Path
    kind: str  # "overlay", "tree" or "openreg"
    test_root: Path  # the `test/` directory it lives in; the subprocess runs there


@dataclass
class Result:
    suite: Suite
    status: str
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
        raise UsageError(f"torch is not installed for {sys.executable}: {INSTALL_HINT}")
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
            raise UsageError(f"cannot import torch from {package_dir}:\n{tail}\n{INSTALL_HINT}")
        version, is_overlay = json.loads(proc.stdout.strip().splitlines()[-1])
        return str(version), bool(is_overlay)


def check_overlay(info: TorchInfo) -> None:
    if not info.is_overlay:
        raise UsageError(
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
        raise UsageError(
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
        tree_tests = tree_root / "test"
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


def estimates(names: Sequence[str], times: dict[str, float]) -> dict[str, float]:
    """Recorded duration per name; unknown names get the average, so a new file is not free."""
    default = sum(times.values()) / len(times) if times else DEFAULT_DURATION
    return {name: times.get(name, default) for name in names}


def shard(suites: Sequence[Suite], which: int, total: int, times: dict[str, float]) -> list[Suite]:
    """Greedy longest-first: each file goes to the least-loaded shard (ties: lowest index).

    Sorting by (-duration, name) makes the assignment deterministic, so every CI job computes
    the same partition independently.
    """
    cost = estimates([suite.name for suite in suites], times)
    loads = [0.0] * total
    assigned: list[list[Suite]] = [[] for _ in range(total)]
    for suite in sorted(suites, key=lambda s: (-cost[s.name], s.name)):
        target = min(range(total), key=lambda index: (loads[index], index))
        loads[target] += cost[suite.name]
        assigned[target].append(suite)
    return sorted(assigned[which - 1], key=lambda s: s.name)


def updated_times(old: dict[str, float], results: Sequence[Result]) -> dict[str, float]:
    """Old times for files not run, this run's for files that did not fail (a crash is not a
    duration). Entries of files not found are kept: a partial run (a shard, a tree whose series
    does not add a suite yet) must not erase what another run measured."""
    new = dict(old)
    for result in results:
        if result.status != FAILED:
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


def command(suite: Suite, options: RunOptions) -> list[str]:
    cmd = [sys.executable, str(suite.path)]
    if options.child_verbose:
        cmd.append("-v")
    for keyword in options.keywords:
        cmd += ["-k", keyword]
    return cmd


def child_env(suite: Suite, cache_dir: Path, options: RunOptions) -> dict[str, str]:
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    env["TRITON_CACHE_DIR"] = str(cache_dir / "triton")
    # Keeps prints (stdout) and unittest's report (stderr) in order in the merged log.
    env["PYTHONUNBUFFERED"] = "1"
    # torch.testing turns CI=true into an implicit `--save-xml`, which needs the optional
    # xmlrunner package and writes reports of its own; this runner writes the JUnit XML.
    env.pop("CI", None)
    extra: list[Path] = []
    if suite.kind == "overlay":
        extra.append(REPO_ROOT)  # the tool's tests import torch_overlay from the checkout
    if suite.kind == "openreg" and options.openreg_path is not None:
        extra.append(options.openreg_path)
    if extra:
        paths = [str(p) for p in extra] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_suite(suite: Suite, options: RunOptions) -> Result:
    cmd = command(suite, options)
    if options.echo:
        print(f"--- {suite.name}", flush=True)  # the output that follows is this file's
    cache_dir = Path(tempfile.mkdtemp(prefix="run_test-inductor-"))
    start = time.monotonic()
    try:
        returncode, output = _run_process(cmd, child_env(suite, cache_dir, options), suite.test_root, options.echo)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    duration = time.monotonic() - start
    return Result(suite, classify(returncode, output), duration, returncode, output, cmd)


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


_RAN_RE = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_OK_RE = re.compile(r"^OK(?: \((.*)\))?\s*$", re.MULTILINE)


def classify(returncode: int, output: str) -> str:
    """FAILED on a non-zero exit; SKIPPED when unittest ran nothing or skipped all it ran."""
    if returncode != 0:
        return FAILED
    ran = _RAN_RE.findall(output)
    oks = _OK_RE.findall(output)
    if not ran or not oks:
        return PASSED  # not a unittest report: the exit status is all there is
    total = int(ran[-1])
    skipped = re.search(r"skipped=(\d+)", oks[-1])
    if total == 0 or (skipped is not None and int(skipped.group(1)) == total):
        return SKIPPED
    return PASSED


# --------------------------------------------------------------------------------------------
# JUnit XML from unittest's verbose output


@dataclass
class Case:
    classname: str
    name: str
    outcome: str  # "passed", "failure", "error" or "skipped"
    message: str = ""
    detail: str = ""


@dataclass
class _Pending:
    case: Case
    description: str  # "test_x (mod.Class.test_x)", the key of the failure sections


# `test_x (__main__.T.test_x) ... ok`; Python < 3.11 prints `(__main__.T)`; a failing subtest
# gets its own indented line, `  test_x (__main__.T.test_x) (i=1) ... FAIL`.
_START_RE = re.compile(r"^\s*(?P<method>\w+) \((?P<id>[\w.]+)\)(?P<sub>(?: \[.*?\])?(?: \(.*?\))?)(?= \.\.\.|$)")
_RESULT_RE = re.compile(
    r"(?:^|\.\.\. |\s)(?P<token>ok|FAIL|ERROR|expected failure|unexpected success|skipped(?: (?P<reason>.*))?)\s*$"
)
_OUTCOMES = {
    "ok": "passed",
    "expected failure": "passed",
    "FAIL": "failure",
    "unexpected success": "failure",
    "ERROR": "error",
}
_SEPARATOR = "=" * 70
_RULE = "-" * 70


def parse_cases(suite_name: str, output: str) -> list[Case]:
    lines = output.splitlines()
    cases: list[Case] = []
    details = _failure_sections(lines)
    pending: _Pending | None = None
    for line in lines:
        start = _START_RE.match(line)
        if start:
            pending = _new_pending(suite_name, start)
            line = line[start.end():]
        if pending is None:
            continue
        result = _RESULT_RE.search(line)
        if result:
            _finish(pending, result, details)
            cases.append(pending.case)
            pending = None
    return cases


def _new_pending(suite_name: str, match: re.Match[str]) -> _Pending:
    method, test_id = match.group("method"), match.group("id")
    classname = test_id.removesuffix("." + method)
    if classname.startswith("__main__."):
        classname = suite_name.replace("/", ".") + classname[len("__main__"):]
    name = method + match.group("sub")
    description = match.group(0).strip()
    return _Pending(Case(classname=classname, name=name, outcome="passed"), description)


def _finish(pending: _Pending, result: re.Match[str], details: dict[str, str]) -> None:
    token = result.group("token")
    case = pending.case
    if token.startswith("skipped"):
        case.outcome = "skipped"
        case.message = (result.group("reason") or "").strip("'\"")
        return
    case.outcome = _OUTCOMES[token]
    if case.outcome != "passed":
        case.message = token
        case.detail = details.get(pending.description, "")


def _failure_sections(lines: Sequence[str]) -> dict[str, str]:
    """`FAIL: test_x (mod.T.test_x)` -> its traceback, from unittest's closing report."""
    sections: dict[str, str] = {}
    index = 0
    while index < len(lines):
        header = re.match(r"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (.*)$", lines[index + 1]) if (
            lines[index] == _SEPARATOR and index + 1 < len(lines)
        ) else None
        if header is None:
            index += 1
            continue
        body: list[str] = []
        index += 2
        while index < len(lines) and lines[index] != _RULE:
            index += 1  # a docstring's first line may follow the header
        index += 1
        while index < len(lines) and lines[index] != _SEPARATOR:
            if lines[index] == _RULE and index + 1 < len(lines) and _RAN_RE.match(lines[index + 1]):
                break
            body.append(lines[index])
            index += 1
        sections.setdefault(header.group(1).strip(), "\n".join(body).strip())
    return sections


_XML_INVALID = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """XML 1.0 cannot hold most control characters (ANSI colours...); show them escaped."""
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def junit_xml(result: Result) -> ET.ElementTree:
    cases = parse_cases(result.suite.name, result.output)
    if result.status == FAILED and not any(case.outcome in ("failure", "error") for case in cases):
        # A crash outside any test (import error, segfault): still a red testcase.
        tail = "\n".join(result.output.splitlines()[-LOG_TAIL_LINES:])
        cases.append(Case(result.suite.name.replace("/", "."), "<file>", "error",
                          f"exit status {result.returncode}", tail))
    suite = ET.Element("testsuite", {
        "name": result.suite.name,
        "tests": str(len(cases)),
        "failures": str(sum(case.outcome == "failure" for case in cases)),
        "errors": str(sum(case.outcome == "error" for case in cases)),
        "skipped": str(sum(case.outcome == "skipped" for case in cases)),
        "time": f"{result.duration:.3f}",
        "file": str(result.suite.path),
    })
    for case in cases:
        element = ET.SubElement(suite, "testcase", {"classname": case.classname, "name": _xml_text(case.name)})
        if case.outcome in ("failure", "error"):
            child = ET.SubElement(element, case.outcome, {"message": _xml_text(case.message)})
            child.text = _xml_text(case.detail)
        elif case.outcome == "skipped":
            ET.SubElement(element, "skipped", {"message": _xml_text(case.message)})
    ET.SubElement(suite, "system-out").text = _xml_text(result.output)
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.ElementTree(root)


def write_xml(result: Result, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (result.suite.name.replace("/", ".") + ".xml")
    junit_xml(result).write(path, encoding="utf-8", xml_declaration=True)
    return path


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
                stop = stop or (result.status == FAILED and not keep_going)
    return results, len(queue)


def report(result: Result, verbose: bool, echoed: bool) -> None:
    print(f"{result.status:<7} {result.suite.name} ({result.duration:.1f}s)", flush=True)
    if verbose and not echoed:
        sys.stdout.write(result.output)
    elif result.status == FAILED and not echoed:
        for line in result.output.splitlines()[-LOG_TAIL_LINES:]:
            print(f"    {line}")
    if result.status == FAILED:
        print(f"    reproduce: TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) {shlex.join(result.command)}")
    sys.stdout.flush()


def summary(results: Sequence[Result]) -> str:
    counts = {status: sum(r.status == status for r in results) for status in (PASSED, FAILED, SKIPPED)}
    line = f"{counts[PASSED]} passed, {counts[FAILED]} failed"
    return line + (f", {counts[SKIPPED]} skipped" if counts[SKIPPED] else "")


def default_openreg_builder(torch_dir: Path, build_dir: Path, quiet: bool) -> Path:
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    try:
        from torch_overlay.openreg import build_openreg
    except ImportError as exc:
        raise UsageError(f"cannot build OpenReg: torch_overlay.openreg is not importable ({exc})") from exc
    return build_openreg(torch_dir, build_dir, quiet=quiet)


def build_openreg_once(builder: OpenRegBuilder, torch_dir: Path, quiet: bool) -> Path:
    print(f"building OpenReg in {OPENREG_BUILD_DIR} ...", flush=True)
    try:
        return builder(torch_dir, OPENREG_BUILD_DIR, quiet)
    except UsageError:
        raise
    except Exception as exc:  # OpenRegBuildError carries the compiler's first error
        raise UsageError(f"OpenReg build failed ({type(exc).__name__}):\n{exc}") from exc


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
                        help="only run test methods/classes matching EXPR (unittest -k); repeatable")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="run N files in parallel")
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
    except UsageError:
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


def execute(args: argparse.Namespace, builder: OpenRegBuilder | None) -> int:
    info, selected, times_path = plan(args)
    times = load_times(times_path)
    if args.dry_run:
        cost = estimates([s.name for s in selected], times)
        for suite in selected:
            print(f"{suite.name}  (~{cost[suite.name]:.0f}s, {suite.kind})")
        print(f"{len(selected)} test file(s) would run, ~{sum(cost.values()):.0f}s")
        return 0
    openreg_path: Path | None = None
    if any(suite.kind == "openreg" for suite in selected):
        if info is None:
            raise UsageError(f"torch is not installed for {sys.executable}: {INSTALL_HINT}")
        openreg_path = build_openreg_once(builder or default_openreg_builder, info.package_dir, not args.verbose)
    where = f" against torch {info.version} ({info.package_dir})" if info is not None else ""
    print(f"running {len(selected)} test file(s){where}", flush=True)
    echo = args.verbose and args.jobs == 1
    options = RunOptions(child_verbose=args.verbose or args.save_xml is not None,
                         keywords=tuple(args.keywords), echo=echo, openreg_path=openreg_path)
    xml_dir = Path(args.save_xml) if args.save_xml is not None else None

    def on_result(result: Result) -> None:
        report(result, args.verbose, echo)
        if xml_dir is not None:
            write_xml(result, xml_dir)

    results, not_started = run_all(selected, options, args.jobs, args.keep_going, on_result)
    if not_started:
        print(f"stopped after a failure: {not_started} test file(s) not run (--keep-going runs them all)")
    if args.update_times:
        write_times(times_path, updated_times(times, results))
    print(summary(results), flush=True)
    return 1 if any(result.status == FAILED for result in results) else 0


def main(argv: Sequence[str] | None = None, *, openreg_builder: OpenRegBuilder | None = None) -> int:
    args = parse_args(argv)
    try:
        return execute(args, openreg_builder)
    except UsageError as exc:
        print(f"run_test.py: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
