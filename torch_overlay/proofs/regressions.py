"""The differential gate: one generated corpus, run on stock torch and on the overlay, case by case.

`verify patches` proves that each patch fixes its bug; this proves that the overlay breaks nothing
else. Every file `test/differential/test_*.py` (a corpus *part*) runs with pytest twice with
the same interpreter: against a stock tree of the base (hard links, as `verify patches` uses) and
against the overlay tree, each with its own inductor cache (a base other than the installed torch's
release with its own dependencies, `pinning.deps`). Eager is the oracle inside the
corpus; here only the two sides' per-case outcomes are compared:

* agree-pass / agree-fail: both sides say the same;
* fixed: fails on stock, passes on the overlay;
* regressed: passes on stock every time, fails (or is skipped) on the overlay even once (the
  gate fails: a failure the overlay only sometimes shows is still one stock never shows);
* flaky: a case whose outcome changed when re-run on the same side; flaky on stock is reported,
  never counted against the overlay, and never hidden.

Re-runs (`RERUNS` more on both sides) go to each case a regression hinges on: stock passed it
and the overlay did not, so only a re-run can tell a regression from a flake on stock. A run
whose verdicts are kept (`--record`, or a shard) also re-runs the cases the series seems to fix,
so that a recorded "fixed" is never a flake on stock; a check (`python test/run_test.py`) does
not pay for that, since no such case can fail the gate.

A corpus case whose failure is a known upstream bug says so: its failure message starts with
`[upstream #N]` (after the exception's type, as pytest reports it), and its record (agree-fail or
fixed) carries `"upstream": "#N"`; the table counts a part's known agree-fail cases by issue. A
known limitation upstream has no issue for is named by a reason the part defines instead:
`[upstream some-reason]` (lower case, digits, dashes) is recorded as `"upstream": "some-reason"`.

The tier picks the corpus size: `fast` (what `python test/run_test.py` runs) or `full`, which
sets `PYTORCH_TEST_WITH_SLOW=1` so the corpus registers every op, sample and configuration.

A part can run as one shard of N (`--shard I N`, for CI runners): its cases are collected on
both sides and partitioned by their recorded durations (`Project.case_times_file`, from the
JUnit reports of earlier runs) with `shards`, the partition `test/run_test.py --shard` uses. A
shard's record names its shard, the part's collected cases and its own; `merge_shards` checks
that the records are one run's shards, each exactly once, and combines them into the record a
single process would have written. A collected case no shard reported on either side is
*missing*: like a timed-out side, it fails the gate.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core import log, records, shards
from ..core.errors import OverlayError
from ..core.lock import build_lock
from ..core.outcomes import CaseOutcome, CaseVerdict
from ..core.project import Project
from ..core.records import BaseRef
from ..fork import stock
from ..pinning.base import Base
from ..pinning.deps import Runtime, runtime
from .gate_record import SIDES, CaseRecord, CaseTimes, GateRecord, PartRecord, ShardRecord, SideRecord, verdict_counts
from .testrun import DEFAULT_TIMEOUT, TIERS, collect_cases, run_cases

CORPUS_DIR = Path("test") / "differential"
# Seconds one side of one part may take, by tier (`--timeout` overrides): a full-tier side was
# measured at up to an hour on 2 cores, with the other side running beside it.
TIMEOUTS = {"fast": DEFAULT_TIMEOUT, "full": 10800.0}
RERUNS = 2

# A failure message naming the upstream issue of a known bug (or the reason of a known limitation),
# after pytest's `ExceptionType: `.
UPSTREAM_TAG = re.compile(r"^(?:[\w.]+: )?\[upstream (#\d+|[a-z][a-z0-9-]*)\]")


def corpus_files(project: Project) -> list[Path]:
    return sorted((project.root / CORPUS_DIR).glob("test_*.py"))


def corpus_parts(project: Project) -> list[Path]:
    parts = corpus_files(project)
    if not parts:
        raise OverlayError(f"no corpus: {project.root / CORPUS_DIR} holds no test_*.py file")
    return parts


def select_parts(project: Project, names: Sequence[str] = ()) -> list[Path]:
    """The corpus parts to run: all, or those named (`test_programs` or `differential/test_programs`)."""
    parts = corpus_parts(project)
    if not names:
        return parts
    by_name = {name: part for part in parts for name in (part.stem, part_name(part))}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise OverlayError(f"no corpus part {', '.join(unknown)} in {project.root / CORPUS_DIR}: "
                           f"choose from {', '.join(part.stem for part in parts)}")
    return sorted({by_name[name] for name in names})


def part_name(path: Path) -> str:
    """`differential/test_programs`: a test name relative to `test/`, as run_test.py names files."""
    return path.relative_to(path.parents[1]).with_suffix("").as_posix()


@dataclass(frozen=True)
class SideRun:
    """One pytest run of one part on one side: each case's outcome, and how the run ended."""

    outcomes: dict[str, CaseOutcome]
    returncode: int | None  # None: timed out
    seconds: float
    log: str
    upstream: dict[str, str] = field(default_factory=dict)  # failed case -> "#N" its message names
    durations: dict[str, float] = field(default_factory=dict)  # case -> seconds, from the JUnit report


def upstream_tags(messages: dict[str, str]) -> dict[str, str]:
    """The failed cases whose message starts with `[upstream #N]` (or a reason), and their "#N"."""
    tags = {case: UPSTREAM_TAG.match(message) for case, message in messages.items()}
    return {case: match.group(1) for case, match in tags.items() if match}


@dataclass(frozen=True)
class Sides:
    """The torch of each side: its tree first on PYTHONPATH, then what the base's runtime adds (another
    base's dependencies, when the installed torch is not its release)."""

    trees: dict[str, Path]
    runtime: Runtime

    def pythonpath(self, side: str) -> list[Path]:
        return [self.trees[side], *self.runtime.pythonpath]

    def env(self, tier: str) -> dict[str, str]:
        return {**self.runtime.env, **tier_env(tier)}


def run_part(part: Path, sides: Sides, side: str, log: Path, tier: str, timeout: float,
             cases: list[str] | None = None) -> SideRun:
    """Run `part` (or only `cases` of it) with the torch of `side`."""
    start = time.monotonic()
    run = run_cases(part, sides.pythonpath(side), log, timeout, cases, sides.env(tier))
    return SideRun(run.outcomes, run.returncode, round(time.monotonic() - start, 1), str(log),
                   upstream_tags(run.messages), run.durations)


def tier_env(tier: str) -> dict[str, str]:
    return {"PYTORCH_TEST_WITH_SLOW": "1" if tier == "full" else "0"}  # torch's own switch for the full tier


@dataclass
class CaseResult:
    case: str
    stock: list[CaseOutcome] = field(default_factory=list)  # first run, then re-runs
    overlay: list[CaseOutcome] = field(default_factory=list)
    upstream: str | None = None  # "#N": the upstream issue its failure message names

    @property
    def verdict(self) -> CaseVerdict:
        return case_verdict(self.stock, self.overlay)

    def to_record(self) -> CaseRecord:
        # A known upstream bug explains a failure both sides share, or one the series fixes: only there.
        known = self.verdict in (CaseVerdict.AGREE_FAIL, CaseVerdict.FIXED)
        return CaseRecord(self.case, self.verdict, self.stock, self.overlay, self.upstream if known else None)


def case_verdict(stock_runs: list[CaseOutcome], overlay_runs: list[CaseOutcome]) -> CaseVerdict:
    """The verdict of one case from its outcomes on each side (first run first)."""
    if CaseOutcome.MISSING in stock_runs[:1] or CaseOutcome.MISSING in overlay_runs[:1]:
        # A case one side never reported: the file crashed there, or the corpus differs.
        if stock_runs[:1] == [CaseOutcome.PASSED]:
            return CaseVerdict.REGRESSED  # the overlay lost a case stock passes
        return CaseVerdict.ONE_SIDED
    if set(stock_runs) == {CaseOutcome.PASSED} and set(overlay_runs) != {CaseOutcome.PASSED}:
        return CaseVerdict.REGRESSED  # the overlay lost a case stock always passes, if only on some runs
    if len(set(stock_runs)) > 1:
        return CaseVerdict.FLAKY_STOCK
    if len(set(overlay_runs)) > 1:
        return CaseVerdict.FLAKY_OVERLAY
    s, o = stock_runs[0], overlay_runs[0]
    if s == CaseOutcome.SKIPPED and o == CaseOutcome.SKIPPED:
        return CaseVerdict.SKIPPED
    if s == o:
        return CaseVerdict.AGREE_PASS if s == CaseOutcome.PASSED else CaseVerdict.AGREE_FAIL
    if s == CaseOutcome.PASSED:
        return CaseVerdict.REGRESSED  # failed or skipped on the overlay: either way it lost a passing case
    if o == CaseOutcome.PASSED:
        return CaseVerdict.FIXED
    return CaseVerdict.AGREE_FAIL  # failed on one side, skipped on the other: nothing passes


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `total` of a part: the cases both sides collected, and its own."""

    index: int
    total: int
    collected: list[str]
    cases: list[str]


@dataclass
class PartResult:
    name: str
    cases: dict[str, CaseResult]
    runs: dict[str, SideRun]
    seconds: float  # wall time of the part: both sides (at once with jobs > 1) and the re-runs
    shard: Shard | None = None

    def counts(self) -> dict[CaseVerdict, int]:
        return verdict_counts(Counter(c.verdict for c in self.cases.values()))

    def durations(self) -> dict[str, float]:
        """Each case's first-run seconds, the longer side's: the sides run at the same time."""
        return {case: max(run.durations.get(case, 0.0) for run in self.runs.values())
                for case in sorted(set().union(*(run.durations for run in self.runs.values())))}

    def to_record(self, series: str, date: str) -> PartRecord:
        shard = None if self.shard is None else ShardRecord(
            self.shard.index, self.shard.total, self.shard.collected, self.shard.cases,
            [c for c in self.shard.cases if c not in self.cases])
        # agree-pass and skipped cases are the bulk (skipped: every CUDA variant on a machine
        # without CUDA): counted only; every other verdict is listed by name
        listed = [c.to_record() for c in self.cases.values()
                  if c.verdict not in (CaseVerdict.AGREE_PASS, CaseVerdict.SKIPPED)]
        return PartRecord(
            self.name, self.seconds, self.counts(),
            {side: SideRecord(r.returncode, r.seconds, len(r.outcomes)) for side, r in self.runs.items()},
            listed, series, date, durations=self.durations(), shard=shard,
        )


def merge(stock_run: SideRun, overlay_run: SideRun) -> dict[str, CaseResult]:
    names = sorted(set(stock_run.outcomes) | set(overlay_run.outcomes))
    missing = CaseOutcome.MISSING
    return {n: CaseResult(n, [stock_run.outcomes.get(n, missing)], [overlay_run.outcomes.get(n, missing)],
                          stock_run.upstream.get(n) or overlay_run.upstream.get(n))
            for n in names}


def run_sides(part: Path, sides: Sides, logs: Path, tier: str, timeout: float, jobs: int,
              cases: list[str] | None = None, attempt: int = 0) -> dict[str, SideRun]:
    """Both sides of one part, at once when `jobs` > 1 (each pytest is one process)."""
    def one(side: str) -> SideRun:
        suffix = f"-rerun{attempt}" if attempt else ""
        log = logs / f"{part.stem}-{side}{suffix}.log"
        return run_part(part, sides, side, log, tier, timeout, cases)

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(SIDES)))) as pool:
        return dict(zip(SIDES, pool.map(one, SIDES), strict=True))


def cases_to_rerun(cases: dict[str, CaseResult], confirm_fixes: bool) -> list[str]:
    """The cases whose sides disagree (neither missing) that need re-runs: each a regression hinges on
    (stock passed, the overlay did not), and, with `confirm_fixes`, every other one too."""
    disagreeing = {n: c for n, c in cases.items()
                   if c.stock != c.overlay and CaseOutcome.MISSING not in c.stock + c.overlay}
    return [n for n, c in disagreeing.items() if confirm_fixes or c.stock == [CaseOutcome.PASSED]]


def check_part(part: Path, sides: Sides, logs: Path, tier: str, timeout: float, jobs: int,
               shard: Shard | None = None, confirm_fixes: bool = True) -> PartResult:
    """Both sides of `part` (of only `shard`'s cases, if given), then the re-runs (`cases_to_rerun`)."""
    name = part_name(part)
    start = time.monotonic()
    if shard is not None and not shard.cases:
        log.info(f"  {name}: shard {shard.index}/{shard.total} holds no case")
        return PartResult(name, {}, {side: SideRun({}, 0, 0.0, "") for side in SIDES}, 0.0, shard)
    for stale in logs.glob(f"{part.stem}-*-rerun*.log"):  # an earlier run's re-runs would read as this run's
        stale.unlink()
    log.info(f"  {name}: stock and overlay ({tier} tier) ...")
    runs = run_sides(part, sides, logs, tier, timeout, jobs, None if shard is None else shard.cases)
    for side, run in runs.items():
        if not run.outcomes:
            ended = "timed out" if run.returncode is None else f"exited {run.returncode}"
            raise OverlayError(f"{name} reported no test case on {side} ({ended}); see {run.log}")
        if run.returncode is None:
            log.error(f"{name}: {side} timed out after {timeout:.0f} s; the cases it did not reach are "
                      f"missing; see {run.log}")
    cases = merge(runs["stock"], runs["overlay"])
    rerun = cases_to_rerun(cases, confirm_fixes)
    for attempt in range(1, RERUNS + 1 if rerun else 1):
        log.info(f"  {name}: re-running {len(rerun)} disagreeing case(s), attempt {attempt}/{RERUNS}")
        again = run_sides(part, sides, logs, tier, timeout, jobs, rerun, attempt)
        for n in rerun:
            cases[n].stock.append(again["stock"].outcomes.get(n, CaseOutcome.MISSING))
            cases[n].overlay.append(again["overlay"].outcomes.get(n, CaseOutcome.MISSING))
    result = PartResult(name, cases, runs, round(time.monotonic() - start, 1), shard)
    counts = result.counts()
    log.info(f"  {name}: " + ", ".join(f"{counts[v]} {v}" for v in CaseVerdict if counts[v]))
    return result


def run_gate(project: Project, base: Base, tier: str, parts: Sequence[Path], *, timeout: float | None = None,
             jobs: int = 2, keep: bool = False, on_part: Callable[[PartResult], None] | None = None,
             shard: tuple[int, int] | None = None, confirm_fixes: bool = True) -> list[PartResult]:
    """The given corpus parts (`select_parts`) on both sides; the overlay tree must already hold the
    whole series. `timeout` bounds each side of each part (default: the tier's, `TIMEOUTS`).
    `on_part` sees each part's result as soon as it is known (to record it before a later part
    can fail). `shard` (I, N): only shard I of N of the one part given. `confirm_fixes`: re-run
    the cases the series seems to fix too (`cases_to_rerun`)."""
    if tier not in TIERS:
        raise OverlayError(f"unknown tier {tier!r}: choose one of {', '.join(TIERS)}")
    if shard is not None and len(parts) != 1:
        raise OverlayError(f"--shard runs one shard of one corpus part; {len(parts)} parts were given")
    timeout = timeout or TIMEOUTS[tier]
    work = project.gate_dir
    with build_lock(work), stock.stock_tree(base, work, keep=keep) as stock_tree:
        sides = Sides({"stock": stock_tree, "overlay": project.tree_dir}, runtime(project.cache, base))
        results = []
        for index, part in enumerate(parts, 1):
            log.info(f"[{index}/{len(parts)}] {part_name(part)}")
            planned = None if shard is None else plan_shard(project, part, sides, work / "logs", tier, shard)
            results.append(check_part(part, sides, work / "logs", tier, timeout, jobs, planned, confirm_fixes))
            if on_part is not None:
                on_part(results[-1])
    return results


def plan_shard(project: Project, part: Path, sides: Sides, logs: Path, tier: str,
               shard: tuple[int, int]) -> Shard:
    """Shard I of N of `part`: the cases either side collects, partitioned by recorded duration."""
    index, total = shard

    def collect(side: str) -> list[str]:
        return collect_cases(part, sides.pythonpath(side), logs / f"{part.stem}-{side}-collect.log",
                             extra_env=sides.env(tier))

    with ThreadPoolExecutor(max_workers=len(SIDES)) as pool:
        collected = sorted(set().union(*pool.map(collect, SIDES)))
    if not collected:
        raise OverlayError(f"{part_name(part)} collected no test case on either side; see {logs}")
    times = load_case_times(project).of(tier, part_name(part))
    cases = shards.shard(collected, index, total, times)
    log.info(f"  {part_name(part)}: shard {index}/{total}: {len(cases)} of {len(collected)} case(s)")
    return Shard(index, total, collected, cases)


# How to mend a gate record that cannot be read: the committed one from git, or a new run.
RECORD_FIX = "restore it with git, or record the gate again: `verify gate --record`"


def load_case_times(project: Project) -> CaseTimes:
    """Recorded case durations by tier and part (none yet: every case costs the same)."""
    times = records.load(project.case_times_file, "record of case durations", RECORD_FIX, CaseTimes.from_json)
    return times if times is not None else CaseTimes({})


def to_record(results: list[PartResult], base: Base, series: str, tier: str) -> GateRecord:
    date = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    return GateRecord(date, tier, BaseRef(base.version, base.revision), series,
                      ".".join(map(str, sys.version_info[:3])), [r.to_record(series, date) for r in results])


def check_recordable(previous: GateRecord | None, tier: str, record_file: Path) -> None:
    """A fast run never replaces a full record: the full tier's cases are a superset of the fast
    tier's, and a record of one tier replaces a record of another whole."""
    if previous is not None and previous.tier == "full" and tier != "full":
        raise OverlayError(f"{record_file} holds the full tier's record; a {tier} run would replace it: "
                           "record the full tier (`verify gate --tier full --record`) or run without --record")


def merge_records(previous: GateRecord | None, new: GateRecord) -> GateRecord:
    """A run of some parts replaces those parts in a record of the same tier and base; the other
    parts stay, each with the series and date it ran on (a full tier can be recorded part by part)."""
    if previous is None or (previous.tier, previous.base) != (new.tier, new.base):
        return new
    ran = {p.part for p in new.parts}
    kept = [p for p in previous.parts if p.part not in ran]
    return replace(new, parts=sorted(kept + new.parts, key=lambda p: p.part))


def render(record: GateRecord, record_file: Path) -> str:
    """One table: a row per corpus part, a column per verdict, each side's first run in seconds and
    the part's wall time (both sides and the re-runs); then every regressed, flaky or one-sided case
    by name. Fixed and agree-fail cases (hundreds in the full tier) are counted in the table and,
    where they name one, by upstream issue; the record (`record_file`, as the reader finds it) lists
    each by name."""
    shown = [v for v in CaseVerdict if any(p.counts[v] for p in record.parts)] or [CaseVerdict.AGREE_PASS]
    header = ["part", *shown, "stock s", "overlay s", "wall min"]
    # A part recorded before parts measured their wall time has none: "-", and no total.
    walls = [p.seconds for p in record.parts]
    rows = [[p.part, *(str(p.counts[v]) for v in shown),
             *(f"{p.runs[side].seconds:.0f}" for side in SIDES), _minutes(p.seconds)]
            for p in record.parts]
    total = None if None in walls else sum(w for w in walls if w is not None)
    rows.append(["total", *(str(record.totals[v]) for v in shown), "", "", _minutes(total)])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    notable = [(p.part, c) for p in record.parts for c in p.cases
               if c.verdict in (CaseVerdict.REGRESSED, CaseVerdict.FLAKY_STOCK, CaseVerdict.FLAKY_OVERLAY,
                                CaseVerdict.ONE_SIDED)]
    for part, case in notable:
        issue = f" [upstream {case.upstream}]" if case.upstream else ""
        lines.append(f"- {case.verdict}: `{part}::{case.case}`{issue} "
                     f"(stock {'/'.join(case.stock)}, overlay {'/'.join(case.overlay)})")
    lines += [line for verdict in (CaseVerdict.FIXED, CaseVerdict.AGREE_FAIL) for p in record.parts
              if (line := _known_upstream(p, verdict, record_file))]
    runs = {p.part: p.runs for p in record.parts}
    for part, side in record.timed_out():
        lines.append(f"- timed out: `{part}` on {side} after {runs[part][side].seconds:.0f} s "
                     "(the cases it did not reach are not in this table)")
    lines += [f"- missing: `{case}` (collected, reported by no shard)" for case in record.missing_cases()]
    for p in record.parts:
        if p.series != record.series:
            lines.append(f"- recorded on an earlier series: `{p.part}` (series `{p.series}`, {p.date[:10]})")
    return "\n".join(lines)


def _known_upstream(part: PartRecord, verdict: CaseVerdict, record_file: Path) -> str | None:
    """A part's cases of `verdict` that name their upstream issue, counted by issue (the record lists
    each by name, with its issue)."""
    issues = Counter(c.upstream for c in part.cases if c.verdict == verdict and c.upstream)
    if not issues:
        return None
    counted = ", ".join(f"{n} ({k} case{'s' if k != 1 else ''})" for n, k in sorted(issues.items()))
    return f"- {verdict}, known upstream, `{part.part}`: {counted}; each case is listed in `{record_file}`"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.0f}"


def record(project: Project, data: GateRecord) -> Path:
    """Merge a run into `Project.gate_record_file` (what the README table is rendered from) and
    its case durations into `Project.case_times_file` (what shards are sized by), atomically."""
    previous = load_record(project)
    check_recordable(previous, data.tier, record_name(project))
    durations = {part.part: part.durations for part in data.parts if part.durations is not None}
    records.write(project.case_times_file, load_case_times(project).updated(data.tier, durations).to_json())
    parts = [replace(part, durations=None) for part in data.parts]
    merged = merge_records(previous, replace(data, parts=parts))
    records.write(project.gate_record_file, merged.to_json())
    return project.gate_record_file


def load_record(project: Project) -> GateRecord | None:
    return records.load(project.gate_record_file, "gate record", RECORD_FIX, GateRecord.from_json)


def record_name(project: Project) -> Path:
    """The gate record as the table names it (where each case is listed): relative to the root."""
    return project.gate_record_file.relative_to(project.root)


def _run_of(record: GateRecord) -> dict[str, object]:
    """What every shard record of one run shares, as recorded (a difference is named so)."""
    return {"tier": record.tier, "base": record.base.to_json(), "series": record.series, "python": record.python}


# How a difference in each of `_run_of`'s values is named.
RUN_KEYS = {"tier": "tiers", "base": "bases", "series": "series", "python": "Python versions"}


def read_shard_record(path: Path) -> GateRecord:
    """A record `verify gate --shard I N --json` printed; a clear error if it is not one."""
    try:
        text = path.read_text()
    except OSError as e:
        raise OverlayError(f"cannot read the gate record {path}: {e}") from None
    data = records.parse(path, text, "gate record", "`verify gate --part NAME --shard I N --json` prints one",
                         GateRecord.from_json)
    unsharded = [p.part for p in data.parts if p.shard is None]
    if unsharded:
        raise OverlayError(f"{path} holds {', '.join(unsharded)} unsharded: `verify merge` takes records of "
                           "`verify gate --part NAME --shard I N`")
    return data


def merge_shards(shard_records: Sequence[tuple[Path, GateRecord]]) -> GateRecord:
    """One record from shard records (with their files): what one process running every shard's
    cases would have recorded, plus the cases no shard reported (`missing`). Records of different
    runs, and a shard given twice or not at all, are errors naming the files or the shard."""
    (first, reference), *_ = shard_records
    for key, what in RUN_KEYS.items():
        for path, data in shard_records:
            if _run_of(data)[key] != _run_of(reference)[key]:
                raise OverlayError(f"shard records of different {what} cannot merge: {first} has "
                                   f"{_run_of(reference)[key]}, {path} has {_run_of(data)[key]}")
    by_part: dict[str, dict[int, tuple[Path, PartRecord]]] = {}
    for path, data in shard_records:
        for part in data.parts:
            assert part.shard is not None  # read_shard_record refuses unsharded parts
            shard = by_part.setdefault(part.part, {})
            if part.shard.index in shard:
                raise OverlayError(f"shard {part.shard.index}/{part.shard.total} of {part.part} is given twice: "
                                   f"{shard[part.shard.index][0]} and {path}")
            shard[part.shard.index] = (path, part)
    date = max(data.date for _, data in shard_records)
    parts = [_merge_part(name, shard, date) for name, shard in sorted(by_part.items())]
    return replace(reference, date=date, parts=parts)


def _merge_part(name: str, shards_of_part: dict[int, tuple[Path, PartRecord]], date: str) -> PartRecord:
    parts = [part for _, part in shards_of_part.values()]
    sharded = [part.shard for part in parts if part.shard is not None]
    totals = {shard.total for shard in sharded}
    if len(totals) > 1:
        raise OverlayError(f"the shards of {name} split it {' and '.join(map(str, sorted(totals)))} ways: "
                           "merge the shards of one run")
    (total,) = totals
    beyond = sorted(index for index in shards_of_part if not 1 <= index <= total)
    if beyond:
        raise OverlayError(f"{shards_of_part[beyond[0]][0]}: shard {beyond[0]}/{total} of {name} does not exist")
    dropped = [index for index in range(1, total + 1) if index not in shards_of_part]
    if dropped:
        raise OverlayError(f"shard {', '.join(f'{i}/{total}' for i in dropped)} of {name} is not given: "
                           "merge every shard's record")
    collected = sharded[0].collected
    for (path, _), shard in zip(shards_of_part.values(), sharded, strict=True):
        if shard.collected != collected:
            raise OverlayError(f"{path}: shard {shard.index}/{total} of {name} collected other cases "
                               "than its other shards: merge the shards of one run")
    planned = Counter(case for shard in sharded for case in shard.cases)
    twice = sorted(case for case, n in planned.items() if n > 1)
    if twice:
        raise OverlayError(f"{len(twice)} case(s) of {name} are in more than one shard, e.g. {twice[0]}")
    missing = sorted({*(set(collected) - set(planned)), *(c for shard in sharded for c in shard.missing)})
    counts = Counter[CaseVerdict]()
    for part in parts:
        counts.update(part.counts)
    return PartRecord(
        name,
        round(sum(part.seconds or 0.0 for part in parts), 1),  # machine time, over every shard
        verdict_counts(counts),
        {side: _merge_runs([part.runs[side] for part in parts]) for side in SIDES},
        sorted((c for part in parts for c in part.cases), key=lambda c: c.case),
        parts[0].series, date,
        durations=dict(sorted(kv for part in parts for kv in (part.durations or {}).items())),
        missing=missing,
    )


def _merge_runs(runs: list[SideRecord]) -> SideRecord:
    """One side of a part over its shards: timed out if any shard did, else the worst exit status."""
    codes = [run.returncode for run in runs]
    return SideRecord(None if None in codes else max(c for c in codes if c is not None),
                      round(sum(run.seconds for run in runs), 1), sum(run.cases for run in runs))
