"""The proof matrix: every patch's regression tests fail on stock torch and pass on the overlay.

For each patch, its test files (taken from the overlay tree, where `git am` put them) are run
(a) in a stock tree of the base, to which only that patch's test files are added: they must
fail there, or they do not catch the bug; (b) in the overlay tree: they must pass. Both runs
use the same interpreter (`sys.executable`); the torch under test is chosen by PYTHONPATH and
every run has its own inductor cache (see `testrun`). A base other than the installed torch's
release runs with its own dependencies (`pinning.deps`) and with OpenReg built for its tree
(`with_privateuse1_backend`), so the suites of PrivateUse1-only patches run on both sides as
they do on the installed base.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..artifacts.openreg import OpenRegBuildError, build_openreg
from ..core import log
from ..core.errors import OverlayError
from ..core.lock import build_lock
from ..core.outcomes import FileOutcome, Proof, render_table
from ..core.project import Project
from ..fork import stock
from ..fork.series import Patch
from ..pinning.base import Base
from ..pinning.deps import NO_EXTENSIONS, Runtime, runtime
from .testrun import DEFAULT_TIMEOUT, RunResult, run_test_file


@dataclass(frozen=True)
class PatchProof:
    patch: Patch
    test_files: tuple[str, ...]
    stock: tuple[RunResult, ...]
    overlay: tuple[RunResult, ...]

    @property
    def verdict(self) -> Proof:
        if not self.test_files:
            return Proof.NO_TESTS
        if any(r.outcome != FileOutcome.PASS for r in self.overlay):
            return Proof.BROKEN
        if not all(r.failing for r in self.stock):
            return Proof.NOT_CAUGHT
        return Proof.OK

    @property
    def ok(self) -> bool:
        return self.verdict == Proof.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.patch.id,
            "file": self.patch.path.name,
            "title": self.patch.title,
            "test_files": list(self.test_files),
            "stock": [r.to_json() for r in self.stock],
            "overlay": [r.to_json() for r in self.overlay],
            "verdict": self.verdict,
            "ok": self.ok,
        }


def select(patches: list[Patch], wanted: list[str] | None) -> list[Patch]:
    """The patches named by id (`0003`) or file name; all of them when none are named."""
    if not wanted:
        return patches
    chosen = [p for p in patches if p.id in wanted or p.path.name in wanted]
    unknown = set(wanted) - {p.id for p in chosen} - {p.path.name for p in chosen}
    if unknown:
        known = ", ".join(p.id for p in patches) or "none"
        raise OverlayError(f"no patch {', '.join(sorted(unknown))} in the series (patches: {known})")
    return chosen


def existing_tests(patch: Patch, tree: Path) -> tuple[str, ...]:
    """The patch's test files that exist after it is applied (a patch may also delete tests)."""
    return tuple(f for f in patch.test_files if (tree / f).is_file())


def log_path(logs: Path, patch: Patch, side: str, test_file: str) -> Path:
    return logs / f"{patch.id}-{side}-{test_file.replace('/', '_')}.log"


def run_side(root: Path, pythonpath: list[Path], patch: Patch, side: str, files: tuple[str, ...],
             logs: Path, timeout: float, extra_env: dict[str, str] | None = None) -> tuple[RunResult, ...]:
    results = []
    for name in files:
        log.info(f"  {patch.id} {side:8s} {name} ...")
        result = run_test_file(root, name, pythonpath, log_path(logs, patch, side, name), timeout, extra_env)
        log.info(f"  {patch.id} {side:8s} {name}: {result.summary()} ({result.seconds:.0f}s)")
        results.append(result)
    return tuple(results)


def prove(project: Project, base: Base, patches: list[Patch], *, keep: bool = False,
          timeout: float = DEFAULT_TIMEOUT) -> list[PatchProof]:
    """Run the matrix for `patches`; the overlay tree must already hold the whole series."""
    work = project.verify_dir
    extra = with_privateuse1_backend(project.tree_dir / "torch", project.openreg_build_dir,
                                     runtime(project.cache, base))
    with build_lock(work):
        logs = work / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        with stock.stock_tree(base, work, keep=keep) as stock_tree:
            proofs = []
            for index, patch in enumerate(patches, 1):
                log.info(f"[{index}/{len(patches)}] {patch.path.name}")
                files = existing_tests(patch, project.tree_dir)
                stock.place_tests(stock_tree, project.tree_dir, files)
                stock_runs = run_side(stock_tree, [stock_tree, *extra.pythonpath], patch, "stock", files, logs,
                                      timeout, extra.env)
                overlay_runs = run_side(project.tree_dir, [project.tree_dir, *extra.pythonpath], patch, "overlay",
                                        files, logs, timeout, extra.env)
                proofs.append(PatchProof(patch, files, stock_runs, overlay_runs))
    return proofs


def with_privateuse1_backend(torch_dir: Path, build_dir: Path, extra: Runtime) -> Runtime:
    """For a torch that is not the installed torch's release (`extra` turns off autoloading the
    installed backends, built for another ABI): OpenReg built in `build_dir` against `torch_dir`
    (a fork tree's, or a release's stock tree), which also loads into every other tree of that
    release (the same compiled libraries). It goes on PYTHONPATH ahead of
    the installed one, so that autoloading (back on) imports it in every process a test starts,
    and pytest loads it too (`-p torch_openreg`) where no `torch.backends` entry point names it.
    Without a C++ tool chain the proof goes on without it, and says so: PrivateUse1-only suites
    then run no test."""
    if not extra.other_release:
        return extra
    try:
        staged = build_openreg(torch_dir, build_dir, quiet=True)
    except OpenRegBuildError as e:
        log.warning(f"OpenReg does not build against {torch_dir}, so PrivateUse1 suites cannot run there: {e}")
        return extra
    env = {k: v for k, v in extra.env.items() if k not in NO_EXTENSIONS}
    return Runtime([staged, *extra.pythonpath], {**env, "PYTEST_ADDOPTS": "-p torch_openreg"})


def side_summary(results: tuple[RunResult, ...]) -> str:
    return "; ".join(r.summary() for r in results) or "-"


def render(proofs: list[PatchProof], stock_label: str) -> str:
    rows = [("patch", f"stock {stock_label}", "overlay", "verdict")]
    rows += [(p.patch.id, side_summary(p.stock), side_summary(p.overlay), p.verdict) for p in proofs]
    lines = [render_table(rows)]
    for p in proofs:
        if not p.ok:
            lines.append(f"{p.patch.path.name}: {p.verdict}")
            lines.extend(f"  log: {r.log}" for r in p.stock + p.overlay)
    return "\n".join(lines)


def to_json(proofs: list[PatchProof], base: Base) -> dict[str, Any]:
    return {
        "base": {"version": base.version, "revision": base.revision, "wheel_sha256": base.wheel.sha256},
        "ok": all(p.ok for p in proofs),
        "patches": [p.to_json() for p in proofs],
    }
