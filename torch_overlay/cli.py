"""`python -m torch_overlay <command>`: the tool's command line."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from . import readme
from .artifacts.wheel import build_wheel
from .bench import CHART_FILE, DEFAULT_PARTS, PART_NAMES, RESULTS_FILE, BenchOptions, run_bench, select_parts
from .core import log
from .core.errors import TOOL_BROKE, OverlayError
from .core.project import CACHE_ENV, Project
from .fork import status, tree
from .fork.series import overlay_version, read_series
from .pinning import base as base_mod
from .pinning.pin import Pin, load_pin
from .proofs import regressions
from .proofs.gate_record import GateRecord
from .proofs.testrun import DEFAULT_TIMEOUT


def load_base(project: Project, pin: Pin) -> base_mod.Base:
    return base_mod.load(project.cache_dir, pin, pin.wheel_for_this_interpreter())


def cmd_fetch(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    wheel = pin.wheel_for_tag(args.tag) if args.tag else pin.wheel_for_this_interpreter()
    print(base_mod.fetch(project.cache_dir, pin, wheel))
    return 0


def cmd_tree(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    record = tree.materialise(project, load_base(project, pin), force=args.force)
    print(f"{project.tree_dir}: base {record.base_commit[:12]} + {len(record.applied)} patch(es)")
    return 0


def cmd_export(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    written = tree.export(project)
    tree.materialise(project, load_base(project, pin))  # refreshes torch/version.py for the new series
    print(f"exported {len(written)} patch(es) to {project.patches_dir}")
    for path in written:
        print(f"  {path.name}")
    return 0


def cmd_wheel(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    base = load_base(project, pin)
    tree.materialise(project, base)
    out = build_wheel(pin, base, project.cache_dir, project.tree_dir, read_series(project.patches_dir), args.output)
    print(out)
    return 0


def cmd_status(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    info = status.collect(project, pin, verify_hash=not args.no_verify)
    print(json.dumps(info, indent=2) if args.json else status.render(info))
    return 0


def cmd_verify(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    if args.regressions and args.against:
        raise OverlayError("--regressions compares with the base itself; it does not take --against")
    if args.record and not (args.against or args.regressions):
        raise OverlayError("--record needs --against VERSION or --regressions")
    if args.part and not args.regressions:
        raise OverlayError("--part names corpus parts of --regressions; use -p PATCH_ID to choose patches")
    if (args.shard or args.merge) and not args.regressions:
        raise OverlayError(f"{'--shard' if args.shard else '--merge'} is for the gate: add --regressions")
    if args.merge:
        if args.part or args.shard:
            raise OverlayError("--merge combines recorded shards; it runs nothing, so takes no --part or --shard")
        return merge_regressions(project, pin, args)
    if args.regressions:
        return verify_regressions(project, pin, args)  # its default timeout depends on the tier
    timeout = args.timeout or DEFAULT_TIMEOUT
    if args.against:
        from .proofs.drift import run_drift

        return run_drift(project, pin, args.against, args.patch, keep=args.keep, timeout=timeout,
                         as_json=args.json, write_record=args.record)
    from .proofs import prove

    base = load_base(project, pin)
    tree.materialise(project, base)
    patches = prove.select(read_series(project.patches_dir), args.patch)
    proofs = prove.prove(project, base, patches, keep=args.keep, timeout=timeout)
    print(json.dumps(prove.to_json(proofs, base), indent=2) if args.json else prove.render(proofs, pin.version))
    return 0 if all(p.ok for p in proofs) else 1


def verify_regressions(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    if args.shard:
        index, total = args.shard
        if not 1 <= index <= total:
            raise OverlayError(f"--shard {index} {total}: need 1 <= I <= N")
        if not args.part or len(args.part) != 1:
            raise OverlayError("--shard I N runs one shard of one corpus part: name it with --part NAME")
        if args.record:
            raise OverlayError("a shard's record is not the tier's: print it with --json and combine every "
                               "shard's with --merge RECORD... --record")
    parts = regressions.select_parts(project, args.part or ())  # say what is missing before any download
    base = load_base(project, pin)
    tree.materialise(project, base)
    series = overlay_version(base.version, read_series(project.patches_dir))

    def record_part(result: regressions.PartResult) -> None:
        # Each part is recorded when it ends: a later part that fails (a timeout) loses no other.
        regressions.record(project, regressions.to_record([result], base, series, args.tier))

    results = regressions.run_gate(project, base, args.tier, parts, timeout=args.timeout, jobs=args.jobs,
                                   keep=args.keep, on_part=record_part if args.record else None,
                                   shard=tuple(args.shard) if args.shard else None)
    return report_gate(project, pin, regressions.to_record(results, base, series, args.tier), args)


def merge_regressions(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    data = regressions.merge_shards([(path, regressions.read_shard_record(path)) for path in args.merge])
    if args.record:
        regressions.record(project, data)
    return report_gate(project, pin, data, args)


def report_gate(project: Project, pin: Pin, data: GateRecord, args: argparse.Namespace) -> int:
    """Print a gate record (JSON or the table), name what fails it; the exit status."""
    if args.json:
        print(json.dumps(data.to_json(), indent=1))
    else:
        print(regressions.render(data, regressions.record_name(project)))
    if args.record:
        log.info(f"recorded in {project.gate_record_file}")
    failed = data.regressed_cases()
    if failed:
        log.error(f"{len(failed)} case(s) pass on stock {pin.version} and fail on the overlay: "
                  + ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else ""))
    incomplete = data.timed_out()
    if incomplete:
        log.error("the gate did not see every case: "
                  + ", ".join(f"{part} ({side})" for part, side in incomplete) + " timed out; "
                  "run it again with a larger --timeout")
    missing = data.missing_cases()
    if missing:
        log.error(f"{len(missing)} case(s) reported by no shard: " + ", ".join(missing[:5])
                  + (" ..." if len(missing) > 5 else ""))
    return 1 if failed or incomplete or missing else 0


def cmd_stage(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    from .stage import run_stage

    return run_stage(project, pin, args.onto, args.output, args.patch, branch=args.branch, keep=args.keep,
                     timeout=args.timeout)


def cmd_bench(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    options = BenchOptions(
        parts=select_parts(args.only or (), every=args.all), repeat=args.repeat, workdir=args.workdir,
        float_programs=tuple(args.float_programs), every_config=args.all, output=args.output,
        chart=not args.no_chart, as_json=args.json,
    )
    return run_bench(project, pin, options)


def cmd_readme(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    if args.check:
        readme.check(project)
    else:
        readme.write(project)
    return 0


Command = Callable[[Project, Pin, argparse.Namespace], int]

DEBUG_ENV = "TORCH_OVERLAY_DEBUG"
EPILOG = f"""\
exit status:
  0  success
  1  a check failed: a patch's proof, a regression, a test, an out-of-date README table
  2  usage or input error: bad arguments, overlay.toml, series or a patch, or the tree holds
     work the command would lose (the message names it and the way out)
  3  the tool or its environment broke: git/cmake/compiler missing, download failed, disk full,
     unwritable or corrupt cache or tree state

Failures are one line on stderr; -v/--debug (or {DEBUG_ENV}=1) adds the traceback.
-q/--quiet leaves only the results (stdout) and failures: no progress lines.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m torch_overlay", description=__doc__, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--debug", action="store_true", help="print a traceback with any error")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr, only failures")
    sub = p.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="download and verify the pinned base wheel")
    fetch.add_argument("--tag", help="wheel tag to fetch (default: this interpreter's)")
    fetch.set_defaults(run=cmd_fetch)
    t = sub.add_parser("tree", help="materialise build/tree: base commit + one commit per patch")
    t.add_argument("--force", action="store_true", help="discard uncommitted or unexported work in the tree")
    t.set_defaults(run=cmd_tree)
    sub.add_parser("export", help="write the tree's commits back to patches/ and series").set_defaults(run=cmd_export)
    w = sub.add_parser("wheel", help="build the custom torch wheel")
    w.add_argument("-o", "--output", type=Path, default=Path("dist"), help="output directory (default: dist)")
    w.set_defaults(run=cmd_wheel)
    s = sub.add_parser("status", help="base, tree and patches at a glance")
    s.add_argument("--json", action="store_true")
    s.add_argument("--no-verify", action="store_true", help="skip re-hashing the base wheel")
    s.set_defaults(run=cmd_status)
    v = sub.add_parser("verify", help="prove each patch: its tests fail on stock torch and pass on the overlay")
    v.add_argument("-p", "--patch", nargs="+", metavar="PATCH_ID", help="only these patches (id or file name)")
    v.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    v.add_argument("--against", metavar="VERSION", help="upstream drift: check the patches against a later release")
    v.add_argument("--regressions", action="store_true",
                   help="the differential gate: the test/differential corpus on stock and on the overlay, per case")
    v.add_argument("--tier", choices=("fast", "full"), default="fast",
                   help="with --regressions: corpus size (fast: what run_test.py runs; full: every op and sample)")
    v.add_argument("--part", nargs="+", metavar="PART",
                   help="with --regressions: only these corpus parts (e.g. test_programs); "
                        "--record merges them into the recorded run of the same tier")
    v.add_argument("--shard", nargs=2, type=int, metavar=("I", "N"),
                   help="with --regressions and one --part: only shard I (1-based) of N of its cases, balanced by "
                        "recorded case durations; --json prints the shard's record for --merge")
    v.add_argument("--merge", nargs="+", type=Path, metavar="RECORD",
                   help="with --regressions: combine the shard records of one run (every shard of each part, "
                        "once) into the tier's record; --record writes it to benchmarks/")
    v.add_argument("-j", "--jobs", type=int, default=2,
                   help="with --regressions: run the two sides at once (default: 2)")
    v.add_argument("--record", action="store_true",
                   help="write the results to benchmarks/ "
                        "(drift.json with --against, regressions.json with --regressions)")
    v.add_argument("--keep", action="store_true", help="keep stock trees (and an --against release) for the next run")
    tier_timeouts = ", ".join(f"{seconds:.0f} {tier} tier" for tier, seconds in regressions.TIMEOUTS.items())
    v.add_argument("--timeout", type=float,
                   help=f"seconds per test file (default: {DEFAULT_TIMEOUT:.0f}; with --regressions, per side of "
                        f"a part: {tier_timeouts})")
    v.set_defaults(run=cmd_verify)
    st = sub.add_parser("stage", help="prepare the patches still needed upstream: mboxes, PR bodies, a branch")
    st.add_argument("--onto", required=True, metavar="TARGET", help="upstream checkout directory or release version")
    st.add_argument("-o", "--output", type=Path, required=True, help="output directory (must not exist or be empty)")
    st.add_argument("-p", "--patch", nargs="+", metavar="PATCH_ID", help="only these patches (id or file name)")
    st.add_argument("--branch", default="overlay-stack", help="branch to create in a checkout (default: overlay-stack)")
    st.add_argument("--keep", action="store_true", help="keep a release target's download for the next run")
    st.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds per test file (default: {DEFAULT_TIMEOUT:.0f})")
    st.set_defaults(run=cmd_stage)
    r = sub.add_parser("readme", help="rewrite the tables in README.md and benchmarks/README.md from the series "
                                      "and the records in benchmarks/")
    r.add_argument("--check", action="store_true", help="only check that every table is up to date")
    r.set_defaults(run=cmd_readme)
    bench_parser(sub.add_parser("bench", help="measure the overlay's speed-ups side by side (median of N runs)"))
    for command in sub.choices.values():  # also accepted after the command name
        command.add_argument("-v", "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        command.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def bench_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", nargs="+", choices=PART_NAMES, metavar="PART",
                   help=f"only these parts ({', '.join(PART_NAMES)}); default: {', '.join(DEFAULT_PARTS)}")
    p.add_argument("--all", action="store_true",
                   help="every part, including the full test suite, and every optim_db configuration in the "
                        "kernels part (slow)")
    p.add_argument("--repeat", type=int, default=BenchOptions.repeat, metavar="N",
                   help="runs per measurement, median reported (default: 3)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--output", type=Path, metavar="DIR",
                   help=f"merge the results into DIR/{RESULTS_FILE} and draw DIR/{CHART_FILE} (e.g. benchmarks/)")
    p.add_argument("--no-chart", action="store_true", help="with --output: write the JSON only")
    p.add_argument("--float-programs", nargs="+", default=(), metavar="NAME",
                   help="floats part: only these catalog programs (e.g. clamp_max_mixed; default: all)")
    p.add_argument("--workdir", type=Path, help="where temporary trees go (default: the cache dir, for hard links)")
    p.set_defaults(run=cmd_bench)


def _failure(error: BaseException) -> tuple[str, int]:
    """One line for stderr and the exit code: what broke, which file, and what to do."""
    if isinstance(error, OverlayError):
        return str(error), error.exit_code
    if isinstance(error, OSError):
        return _os_failure(error), TOOL_BROKE
    return f"internal error: {type(error).__name__}: {error} (run again with --debug for the traceback)", TOOL_BROKE


def _os_failure(error: OSError) -> str:
    name = error.filename
    if isinstance(error, FileNotFoundError) and name and "/" not in str(name):
        return f"{name} was not found on PATH; install it and run the command again"
    where = f" {name}" if name else ""
    if error.errno == errno.ENOSPC:
        return (f"no space left on the device writing{where}; nothing was half-written: free some space "
                f"(or move the base cache with {CACHE_ENV}) and run the command again")
    if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (f"cannot write{where}: {error.strerror}; make it writable (the base cache can move: "
                f"point {CACHE_ENV} at a writable directory)")
    return f"{error.strerror or error}:{where}"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    debug = args.debug or bool(os.environ.get(DEBUG_ENV))
    log.set_verbosity(log.Verbosity.QUIET if args.quiet else log.Verbosity.VERBOSE if debug else log.Verbosity.NORMAL)
    try:
        return _run(args)
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    except BrokenPipeError:
        # Whoever read our output stopped (`status | head`): not a failure, as for git and ls.
        # stdout now points at /dev/null, so the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # every failure ends as one line; --debug adds the traceback
        if log.is_verbose():
            traceback.print_exc()
        message, code = _failure(e)
        log.error(message)
        return code


def _run(args: argparse.Namespace) -> int:
    try:
        project = Project.discover(Path.cwd()) if (Path.cwd() / "overlay.toml").exists() else Project.discover()
    except FileNotFoundError as e:
        raise OverlayError(f"{e}: run the command inside a torch-overlay checkout") from None
    return args.run(project, load_pin(project.pin_file), args)
