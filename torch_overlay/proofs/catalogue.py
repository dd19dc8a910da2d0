"""`verify catalogue`: upstream's silent-correctness reports (`test/catalogue/`, a repro per issue)
re-run on stock torch and on the overlay of one base.

Each repro prints one last line, `REPRO <issue> reproduces|fixed|error: ...` (see the
catalogue's `verdict.py`). It runs as a script with the same interpreter, the torch under test
chosen by PYTHONPATH (a stock tree of the base, or the overlay tree), from a scratch directory
outside any tree and with its own inductor cache, as `verify patches` runs test files. The
overlay must fare at least as well as stock on every report: a report stock gets right and the
overlay gets wrong, or answers with an error where stock does not, is harm (exit status 1).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import log
from ..core.errors import OverlayError
from ..core.lock import build_lock
from ..core.outcomes import Repro, render_table
from ..core.project import Project
from ..fork import stock
from ..pinning.base import Base
from ..pinning.deps import runtime
from .testrun import test_env

REPRO_GLOB = "repro_*.py"
VERDICT_LINE = re.compile(r"^REPRO (\d+) (reproduces|fixed|error)(?:: (.*))?$")
DEFAULT_TIMEOUT = 900.0  # seconds per repro and side: a few compiles on 2 cores


@dataclass(frozen=True)
class ReproRun:
    outcome: Repro
    detail: str  # an error's message, or why there is no verdict
    seconds: float
    log: Path

    def summary(self) -> str:
        return f"{self.outcome}: {self.detail}" if self.detail else str(self.outcome)

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "detail": self.detail, "seconds": round(self.seconds, 1),
                "log": str(self.log)}


@dataclass(frozen=True)
class ReportResult:
    issue: int
    script: Path
    stock: ReproRun
    overlay: ReproRun

    @property
    def harm(self) -> bool:
        """The overlay fares worse than stock on this report."""
        return self.overlay.outcome.rank < self.stock.outcome.rank

    @property
    def verdict(self) -> str:
        if self.harm:
            return "HARM: the overlay fares worse than stock"
        if self.overlay.outcome.rank > self.stock.outcome.rank:
            fixed = self.overlay.outcome == Repro.FIXED
            return "fixed by the overlay" if fixed else "an error instead of a wrong result"
        return "upstream fixed" if self.stock.outcome == Repro.FIXED else "both reproduce"

    def to_json(self) -> dict[str, Any]:
        return {"issue": self.issue, "script": self.script.name, "stock": self.stock.to_json(),
                "overlay": self.overlay.to_json(), "harm": self.harm, "verdict": self.verdict}


def repros(project: Project, wanted: list[str] | None) -> list[tuple[int, Path]]:
    """The catalogue's repros by issue number, all or those named (`139789` or `#139789`)."""
    found = {int(p.stem.removeprefix("repro_")): p for p in project.catalogue_dir.glob(REPRO_GLOB)
             if p.stem.removeprefix("repro_").isdigit()}
    if not found:
        raise OverlayError(f"no {REPRO_GLOB} in {project.catalogue_dir.relative_to(project.root)}")
    if not wanted:
        return sorted(found.items())
    numbers = {w.lstrip("#") for w in wanted}
    unknown = sorted(n for n in numbers if not n.isdigit() or int(n) not in found)
    if unknown:
        raise OverlayError(f"no repro for {', '.join(unknown)} in {project.catalogue_dir.relative_to(project.root)} "
                           f"(issues: {', '.join(str(n) for n in sorted(found))})")
    return sorted((n, p) for n, p in found.items() if str(n) in numbers)


def parse_verdict(issue: int, output: str) -> tuple[Repro, str] | None:
    """The outcome a repro's output names for `issue` in its last verdict line, if any."""
    for line in reversed(output.splitlines()):
        match = VERDICT_LINE.match(line.strip())
        if match and int(match.group(1)) == issue:
            return Repro(match.group(2)), match.group(3) or ""
    return None


def run_repro(issue: int, script: Path, pythonpath: list[Path], extra_env: dict[str, str], log_file: Path,
              timeout: float) -> ReproRun:
    """`script` under the torch `pythonpath` selects, from a scratch directory with a fresh inductor cache."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="repro-") as scratch:
        cache = Path(scratch) / "inductor"
        cache.mkdir()
        try:
            env = test_env(pythonpath, cache, extra_env)
            done = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as e:
            log_file.write_text(_text(e.stdout) + _text(e.stderr))
            return ReproRun(Repro.NO_VERDICT, f"timed out after {timeout:.0f}s", time.monotonic() - start, log_file)
    log_file.write_text(done.stdout + done.stderr)
    seconds = time.monotonic() - start
    parsed = parse_verdict(issue, done.stdout)
    if parsed is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return ReproRun(Repro.NO_VERDICT, f"exit status {done.returncode}: {last}", seconds, log_file)
    return ReproRun(*parsed, seconds, log_file)


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def evaluate(project: Project, base: Base, chosen: list[tuple[int, Path]], *, keep: bool = False,
             timeout: float = DEFAULT_TIMEOUT) -> list[ReportResult]:
    """The `chosen` repros (`repros`) on stock `base` and on its overlay tree (which must hold the series)."""
    extra = runtime(project.cache, base)
    work = project.verify_dir
    logs = work / "catalogue-logs"
    results = []
    with build_lock(work), stock.stock_tree(base, work, keep=keep) as stock_tree:
        for index, (issue, script) in enumerate(chosen, 1):
            sides = {}
            for side, root in (("stock", stock_tree), ("overlay", project.tree_dir)):
                log.info(f"[{index}/{len(chosen)}] #{issue} {side} ...")
                sides[side] = run_repro(issue, script, [root, *extra.pythonpath], extra.env,
                                        logs / f"{issue}-{side}.log", timeout)
                log.info(f"[{index}/{len(chosen)}] #{issue} {side}: {sides[side].summary()} "
                         f"({sides[side].seconds:.0f}s)")
            results.append(ReportResult(issue, script, sides["stock"], sides["overlay"]))
    return results


def render(results: list[ReportResult], stock_label: str) -> str:
    rows = [("issue", f"stock {stock_label}", "overlay", "verdict")]
    rows += [(f"#{r.issue}", str(r.stock.outcome), str(r.overlay.outcome), r.verdict) for r in results]
    counts = {outcome: sum(r.overlay.outcome == outcome for r in results) for outcome in Repro}
    stock_fixed = sum(r.stock.outcome == Repro.FIXED for r in results)
    lines = [render_table(rows),
             f"{len(results)} reports: stock fixes {stock_fixed}, the overlay fixes {counts[Repro.FIXED]}, "
             f"reproduce on the overlay {counts[Repro.REPRODUCES]}, errors {counts[Repro.ERROR]}, "
             f"no verdict {counts[Repro.NO_VERDICT]}; harm {sum(r.harm for r in results)}"]
    for r in results:
        for side, run in (("stock", r.stock), ("overlay", r.overlay)):
            if run.detail:
                lines.append(f"#{r.issue} {side}: {run.summary()} (log: {run.log})")
    return "\n".join(lines)


def to_json(results: list[ReportResult], base: Base) -> dict[str, Any]:
    return {"base": {"version": base.version, "wheel_sha256": base.wheel.sha256},
            "harm": any(r.harm for r in results), "reports": [r.to_json() for r in results]}
