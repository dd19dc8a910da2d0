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
from .bench.report import render_table
from .core import log
from .core.errors import TOOL_BROKE, OverlayError
from .core.project import BASE_ENV, CACHE_ENV, PIN_FILE, Project
from .fork import status, tree
from .fork.series import overlay_version, read_series
from .pinning import base as base_mod
from .pinning.pin import Pin, load_pin
from .proofs import catalogue, regressions
from .proofs.gate_record import GateRecord
from .proofs.testrun import DEFAULT_TIMEOUT, TIERS


def load_base(project: Project, pin: Pin) -> base_mod.Base:
    return base_mod.load(project.cache, pin, pin.wheel_for_this_interpreter())


def cmd_fetch(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    wheel = pin.wheel_for_tag(args.tag) if args.tag else pin.wheel_for_this_interpreter()
    print(base_mod.fetch(project.cache, pin, wheel))
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
    out = build_wheel(pin, base, project.cache, project.tree_dir, read_series(project.patches_dir), args.output)
    print(out)
    return 0


def cmd_status(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    info = status.collect(project, pin, verify_hash=not args.no_verify)
    print(json.dumps(info, indent=2) if args.json else status.render(info))
    return 0


def cmd_prove(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    from .proofs import prove

    base = load_base(project, pin)
    tree.materialise(project, base)
    patches = prove.select(read_series(project.patches_dir), args.patch)
    proofs = prove.prove(project, base, patches, keep=args.keep, timeout=args.timeout)
    print(json.dumps(prove.to_json(proofs, base), indent=2) if args.json else prove.render(proofs, pin.version))
    return 0 if all(p.ok for p in proofs) else 1


def cmd_against(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    from .proofs import drift, prove

    patches = prove.select(read_series(project.patches_dir), args.patch)
    release, results, measured = drift.evaluate_release(project, pin, args.version, patches, keep=args.keep,
                                                        timeout=args.timeout)
    entry = drift.to_record(release, results, measured)
    print(json.dumps(entry.to_json(), indent=2) if args.json else drift.render(args.version, results))
    if args.record:
        log.info(f"recorded in {drift.record(project, entry)}")
    return 0


def cmd_catalogue(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    chosen = catalogue.repros(project, args.issue)  # name a wrong issue before any download
    base = load_base(project, pin)
    tree.materialise(project, base)
    results = catalogue.evaluate(project, base, chosen, keep=args.keep, timeout=args.timeout)
    print(json.dumps(catalogue.to_json(results, base), indent=2) if args.json
          else catalogue.render(results, pin.version))
    return 1 if any(r.harm for r in results) else 0


def cmd_gate(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    if args.shard:
        index, total = args.shard
        if not 1 <= index <= total:
            raise OverlayError(f"--shard {index} {total}: need 1 <= I <= N")
        if not args.part or len(args.part) != 1:
            raise OverlayError("--shard I N runs one shard of one corpus part: name it with --part NAME")
    parts = regressions.select_parts(project, args.part or ())  # say what is missing before any download
    if args.record:  # before the run, not after it
        regressions.check_recordable(regressions.load_record(project), args.tier, regressions.record_name(project))
    base = load_base(project, pin)
    tree.materialise(project, base)
    series = overlay_version(base.version, read_series(project.patches_dir))

    def record_part(result: regressions.PartResult) -> None:
        # Each part is recorded when it ends: a later part that fails (a timeout) loses no other.
        regressions.record(project, regressions.to_record([result], base, series, args.tier))

    results = regressions.run_gate(project, base, args.tier, parts, timeout=args.timeout, jobs=args.jobs,
                                   keep=args.keep, on_part=record_part if args.record else None,
                                   shard=tuple(args.shard) if args.shard else None,
                                   # only kept verdicts need a confirmed "fixed": no such case fails the gate
                                   confirm_fixes=bool(args.record or args.shard))
    return report_gate(project, pin, regressions.to_record(results, base, series, args.tier), args)


def cmd_merge(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    data = regressions.merge_shards([(path, regressions.read_shard_record(path)) for path in args.records])
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


def cmd_roll(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    from .fork import roll

    new = project.with_base(args.onto)
    result = roll.roll(project, load_base(project, pin), new, load_base(new, load_pin(new.pin_file, new.base)),
                       force=args.force)
    print(roll.render(result))
    return 0 if result.stopped is None else 1


def cmd_stage(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    from . import stage

    staged = stage.run_stage(project, pin, args.onto, args.output, args.patch, branch=args.branch, keep=args.keep,
                             timeout=args.timeout)
    print(stage.render(staged))
    return 0 if staged.complete else 1


def bench_options(args: argparse.Namespace) -> BenchOptions:
    full = args.tier == "full"  # every part (unless --only names some), every optim_db configuration
    return BenchOptions(
        parts=select_parts(args.only or (), every=full), repeat=args.repeat, workdir=args.workdir,
        float_programs=tuple(args.float_programs), every_config=full, output=args.output,
        chart=not args.no_chart,
    )


def cmd_bench(project: Project, pin: Pin, args: argparse.Namespace) -> int:
    results = run_bench(project, pin, bench_options(args))
    print(json.dumps(results.to_json(), indent=1) if args.json else render_table(results))
    return 0 if results.targets_ok else 1


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
  1  a check failed: a patch's proof, a regression, a test, an out-of-date README table,
     a roll that stopped on a conflict
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
    p.add_argument("--base", metavar="VERSION",
                   help=f"the base to work on, e.g. 2.15.0 (default: ${BASE_ENV}, else overlay.toml's default-base)")
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
    verify_modes = verify_parser(sub.add_parser(
        "verify", help="prove the patches, check them against a later release, or run the differential gate",
        description="Each mode takes its own options: `verify MODE --help`. Without a mode, `verify` proves "
                    "the patches (`verify patches`)."))
    st = sub.add_parser("stage", help="prepare the patches still needed upstream: mboxes, PR bodies, a branch")
    st.add_argument("--onto", required=True, metavar="TARGET", help="upstream checkout directory or release version")
    st.add_argument("-o", "--output", type=Path, required=True, help="output directory (must not exist or be empty)")
    patch_options(st)
    st.add_argument("--branch", default="overlay-stack", help="branch to create in a checkout (default: overlay-stack)")
    st.add_argument("--keep", action="store_true", help="keep a release target's download for the next run")
    timeout_option(st)
    st.set_defaults(run=cmd_stage)
    ro = sub.add_parser("roll", help="apply the base's series onto another base (three-way), patch by patch")
    ro.add_argument("--onto", required=True, metavar="VERSION", help="the base to roll onto (pinned in overlay.toml)")
    ro.add_argument("--force", action="store_true", help="discard uncommitted or unexported work in its tree")
    ro.set_defaults(run=cmd_roll)
    r = sub.add_parser("readme", help="rewrite the tables in README.md and benchmarks/README.md from the series "
                                      "and the records in benchmarks/")
    r.add_argument("--check", action="store_true", help="only check that every table is up to date")
    r.set_defaults(run=cmd_readme)
    bench_parser(sub.add_parser("bench", help="measure the overlay's speed-ups side by side (median of N runs)"))
    for command in [*sub.choices.values(), *verify_modes]:  # also accepted after the command name
        command.add_argument("-v", "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        command.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def verify_parser(v: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`verify MODE`: each mode takes only its own options, so argparse refuses any other."""
    modes = v.add_subparsers(dest="mode", required=True, metavar="MODE")
    patches = modes.add_parser("patches", help="prove each patch: its tests fail on stock torch and pass on the "
                                               "overlay")
    patch_options(patches)
    patches.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    patches.add_argument("--keep", action="store_true", help="keep the stock trees for the next run")
    timeout_option(patches)
    patches.set_defaults(run=cmd_prove)
    against = modes.add_parser("against", help="upstream drift: which patches a later release already carries, "
                                               "still needs, or conflicts with")
    against.add_argument("version", metavar="VERSION", help="a release pinned under [upstream.wheels]")
    patch_options(against)
    against.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    against.add_argument("--record", action="store_true", help="merge the results into benchmarks/drift.json")
    against.add_argument("--keep", action="store_true", help="keep the stock trees and the release for the next run")
    timeout_option(against)
    against.set_defaults(run=cmd_against)
    gate = modes.add_parser("gate", help="the differential gate: the test/differential corpus on stock and on "
                                         "the overlay, per case")
    gate.add_argument("--tier", choices=TIERS, default="fast",
                      help="corpus size (fast, the default: what run_test.py runs; full: every op and sample)")
    gate.add_argument("--part", nargs="+", metavar="PART",
                      help="only these corpus parts (e.g. test_programs); --record merges them into the recorded "
                           "run of the same tier")
    # A shard's record is not the tier's: it is printed (--json) and combined by `verify merge`.
    recorded = gate.add_mutually_exclusive_group()
    recorded.add_argument("--shard", nargs=2, type=int, metavar=("I", "N"),
                          help="with one --part: only shard I (1-based) of N of its cases, balanced by recorded "
                               "case durations; --json prints the shard's record for `verify merge`")
    recorded.add_argument("--record", action="store_true",
                          help="write the results to benchmarks/regressions.json (fixed cases confirmed by re-runs)")
    gate.add_argument("-j", "--jobs", type=int, default=2, help="run the two sides at once (default: 2)")
    gate.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    gate.add_argument("--keep", action="store_true", help="keep the stock tree for the next run")
    tier_timeouts = ", ".join(f"{seconds:.0f} {tier} tier" for tier, seconds in regressions.TIMEOUTS.items())
    gate.add_argument("--timeout", type=float, help=f"seconds per side of a part (default: {tier_timeouts})")
    gate.set_defaults(run=cmd_gate)
    cat = modes.add_parser("catalogue", help="re-run upstream's silent-correctness reports (test/catalogue) on "
                                             "stock torch and on the overlay; harm fails")
    cat.add_argument("-i", "--issue", nargs="+", metavar="ISSUE", help="only these reports (upstream issue numbers)")
    cat.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    cat.add_argument("--keep", action="store_true", help="keep the stock tree for the next run")
    cat.add_argument("--timeout", type=float, default=catalogue.DEFAULT_TIMEOUT,
                     help=f"seconds per repro and side (default: {catalogue.DEFAULT_TIMEOUT:.0f})")
    cat.set_defaults(run=cmd_catalogue)
    merge = modes.add_parser("merge", help="combine the gate's shard records of one run into the tier's record")
    merge.add_argument("records", nargs="+", type=Path, metavar="RECORD",
                       help="`verify gate --shard I N --json` output: every shard of each part, once")
    merge.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    merge.add_argument("--record", action="store_true", help="write the merged record to benchmarks/regressions.json")
    merge.set_defaults(run=cmd_merge)
    return [patches, against, gate, cat, merge]


def patch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-p", "--patch", nargs="+", metavar="PATCH_ID", help="only these patches (id or file name)")


def timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per test file (default: {DEFAULT_TIMEOUT:.0f})")


def bench_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", nargs="+", choices=PART_NAMES, metavar="PART",
                   help=f"only these parts ({', '.join(PART_NAMES)}); default: {', '.join(DEFAULT_PARTS)}")
    p.add_argument("--tier", choices=TIERS, default="fast",
                   help="fast (the default) or full: every part (unless --only names some), including the full "
                        "test suite, and every optim_db configuration in the kernels part (slow)")
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


VERIFY_MODES = ("patches", "against", "gate", "catalogue", "merge")
# What the modes were spelled before they were subcommands: a user of the old spelling is told the new.
OLD_VERIFY_FLAGS = {"--regressions": "verify gate", "--against": "verify against VERSION",
                    "--merge": "verify merge RECORD..."}


def with_verify_mode(p: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`verify` without a mode proves the patches (`verify -p 0001` is `verify patches -p 0001`),
    as `git stash` is `git stash push`."""
    if "verify" not in argv or any(not arg.startswith("-") for arg in argv[:argv.index("verify")]):
        return argv  # no verify command (a "verify" after another command is one of its arguments)
    at = argv.index("verify") + 1
    rest = argv[at:]
    if rest[:1] and rest[0] in (*VERIFY_MODES, "-h", "--help"):
        return argv
    old = [f"`verify {flag}` is now `{OLD_VERIFY_FLAGS[flag]}`" for flag in rest if flag in OLD_VERIFY_FLAGS]
    if old:
        p.error("; ".join(old))
    return [*argv[:at], "patches", *rest]


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(with_verify_mode(p, sys.argv[1:] if argv is None else argv))
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
    if args.base:  # what the tool runs (pip's build backend, bench workers, tests) works on it too
        os.environ[BASE_ENV] = args.base
    here = Path.cwd()
    try:
        project = Project.at(here) if (here / PIN_FILE).exists() else Project.discover()
    except FileNotFoundError as e:
        raise OverlayError(f"{e}: run the command inside a torch-overlay checkout") from None
    return args.run(project, load_pin(project.pin_file, project.base), args)
