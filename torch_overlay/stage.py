"""`stage --onto TARGET -o DIR`: the patches still needed upstream, ready to send.

TARGET is an upstream checkout (a git repository with `torch/`) or a pinned release version.
Each patch is classified there (see `drift`: on a release, by its tests and `git apply --check`;
on a checkout, by `git apply --check` alone, since a source checkout cannot run without a
build). Patches already upstream are listed as skipped, with the evidence. For the others DIR
gets the mbox (`git am`-ready patch file), a PR body in markdown and the apply check's result.
With a checkout, a local branch with one commit per patch is made on top of its HEAD, in a
temporary worktree, so the checkout's own branch and files are never touched.

All or nothing: a conflicting patch, a dirty checkout or any other bad input stops before
anything is written; DIR is assembled under a temporary name and renamed at the end.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .core import atomic, git
from .core.errors import OverlayError
from .core.outcomes import Drift
from .core.project import Project
from .fork import applycheck, message
from .fork.applycheck import ApplyCheck
from .fork.series import Patch, read_series
from .pinning.pin import Pin
from .proofs import drift
from .proofs.prove import select


@dataclass(frozen=True)
class Decision:
    patch: Patch
    verdict: Drift  # on a checkout: never partly upstream (no tests run there)
    evidence: str
    apply: ApplyCheck

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.patch.id,
            "file": self.patch.path.name,
            "title": self.patch.title,
            "verdict": self.verdict,
            "evidence": self.evidence,
            "git_apply_check": self.apply.describe(),
            "git_apply_output": self.apply.output,
        }


# -- the target ---------------------------------------------------------------------------------

def check_checkout(path: Path, branch: str) -> str:
    """Validate an upstream checkout; returns its HEAD commit."""
    if not (path / "torch").is_dir() or not (path / ".git").exists():
        raise OverlayError(f"{path} is not an upstream PyTorch checkout (it needs torch/ and .git)")
    top = git.user_run(path, "rev-parse", "--show-toplevel", check=False).stdout.strip()
    if not top or Path(top).resolve() != path.resolve():
        raise OverlayError(f"{path} is not the top of a git checkout")
    dirty = git.user_run(path, "status", "--porcelain").stdout.splitlines()  # not stripped: " M" is a status
    if dirty:
        listed = ", ".join(line[3:] for line in dirty[:10])
        raise OverlayError(f"{path} has uncommitted changes ({listed}); commit or stash them first")
    if git.user_run(path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode == 0:
        raise OverlayError(f"branch {branch} already exists in {path}; delete it or pass --branch NAME")
    return git.user_out(path, "rev-parse", "HEAD")


def is_version(target: str) -> bool:
    """Whether `--onto` (not a directory) names a release: `2.10.0`, `2.10.0rc1`."""
    try:
        Version(target)
    except InvalidVersion:
        return False
    return True


def decide_on_checkout(checkout: Path, patches: list[Patch]) -> list[Decision]:
    decisions = []
    for patch in patches:
        check = applycheck.check(checkout, patch)
        if check.reverse_applies:
            verdict = Drift.ALREADY_UPSTREAM
        else:
            verdict = Drift.STILL_NEEDED if check.applies else Drift.CONFLICTS
        decisions.append(Decision(patch, verdict, f"patch {check.describe()} (tests not run on a checkout)", check))
    return decisions


def decide_on_release(project: Project, pin: Pin, version: str, patches: list[Patch], *,
                      keep: bool, timeout: float) -> list[Decision]:
    _, results, _ = drift.evaluate_release(project, pin, version, patches, keep=keep, timeout=timeout)
    return [Decision(r.patch, r.verdict, r.evidence(), r.apply) for r in results]


def refuse_conflicts(decisions: list[Decision], target: str) -> None:
    conflicts = [d for d in decisions if d.verdict == Drift.CONFLICTS]
    if conflicts:
        detail = "\n".join(f"  {d.patch.path.name}: {d.evidence}\n    {d.apply.output}" for d in conflicts)
        raise OverlayError(f"patches conflict with {target}; nothing was staged:\n{detail}\n"
                           "Rebase them onto the target (build/tree, then export) and stage again.")


# -- the stack branch ---------------------------------------------------------------------------

def build_stack(checkout: Path, head: str, patches: list[Patch], worktree: Path) -> str:
    """`git am` the patches onto `head` in a detached worktree; returns the stack's top commit."""
    git.user_run(checkout, "worktree", "add", "-q", "--detach", str(worktree), head)
    for patch in patches:
        result = git.user_run(worktree, "am", "-q", "--keep-non-patch", "--whitespace=nowarn",
                          str(patch.path.resolve()), check=False)
        if result.returncode != 0:
            git.user_run(worktree, "am", "--abort", check=False)
            raise OverlayError(f"{patch.path.name} does not apply on top of the earlier patches "
                               f"(git am):\n{(result.stdout + result.stderr).strip()}")
    return git.user_out(worktree, "rev-parse", "HEAD")


def remove_worktree(checkout: Path, worktree: Path) -> None:
    git.user_run(checkout, "worktree", "remove", "--force", str(worktree), check=False)
    shutil.rmtree(worktree, ignore_errors=True)
    git.user_run(checkout, "worktree", "prune", check=False)


# -- the output ---------------------------------------------------------------------------------

def readme(target: str, decisions: list[Decision], branch_note: str) -> str:
    lines = [f"# Patches staged for {target}", "", "| patch | verdict | git apply --check | evidence |",
             "|---|---|---|---|"]
    lines += [f"| {d.patch.path.name} | {d.verdict} | {d.apply.describe()} | {d.evidence} |" for d in decisions]
    skipped = [d for d in decisions if d.verdict == Drift.ALREADY_UPSTREAM]
    if skipped:
        lines += ["", "## Skipped (already upstream)", ""]
        lines += [f"- {d.patch.path.name}: {d.evidence}" for d in skipped]
    return "\n".join(lines + ["", branch_note, ""])


def write_output(out: Path, target: str, decisions: list[Decision], branch_note: str) -> None:
    if out.exists() and any(out.iterdir()):
        raise OverlayError(f"{out} exists and is not empty; choose another -o directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(out) as partial:  # `out` is empty or absent (checked above): nothing is lost
        partial.mkdir()
        for d in decisions:
            if d.verdict == Drift.STILL_NEEDED:
                shutil.copyfile(d.patch.path, partial / d.patch.path.name)
                (partial / d.patch.path.with_suffix(".md").name).write_text(message.pr_body(d.patch))
        (partial / "README.md").write_text(readme(target, decisions, branch_note))
        summary = {"target": target, "patches": [d.to_json() for d in decisions]}
        (partial / "stage.json").write_text(json.dumps(summary, indent=1) + "\n")


# -- the command --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Branch:
    """The stack branch made in a checkout."""

    name: str
    commits: int
    head: str  # the checkout's HEAD it stacks on
    checkout: Path


@dataclass(frozen=True)
class Staged:
    out: Path
    decisions: list[Decision]
    branch: Branch | None = None  # none for a release target, or when nothing is left to send


def run_stage(project: Project, pin: Pin, onto: str, output: Path, patch_ids: list[str] | None, *, branch: str,
              keep: bool, timeout: float) -> Staged:
    """`stage --onto TARGET -o OUTPUT`: the chosen patches (all when none are named), staged for TARGET."""
    patches = select(read_series(project.patches_dir), patch_ids)
    out = output.resolve()
    if out.exists() and any(out.iterdir()):  # checked early too: before any long step
        raise OverlayError(f"{out} exists and is not empty; choose another -o directory")
    target_path = Path(onto).expanduser()
    if target_path.is_dir():
        return _stage_checkout(target_path.resolve(), patches, out, branch)
    if not is_version(onto):
        raise OverlayError(f"--onto {onto}: neither an upstream checkout directory nor a release version")
    decisions = decide_on_release(project, pin, onto, patches, keep=keep, timeout=timeout)
    refuse_conflicts(decisions, f"torch {onto}")
    write_output(out, f"torch {onto}", decisions, "Release target: no branch made.")
    return Staged(out, decisions)


def _stage_checkout(checkout: Path, patches: list[Patch], out: Path, branch: str) -> Staged:
    head = check_checkout(checkout, branch)
    decisions = decide_on_checkout(checkout, patches)
    refuse_conflicts(decisions, str(checkout))
    needed = [d.patch for d in decisions if d.verdict == Drift.STILL_NEEDED]
    if not needed:
        write_output(out, str(checkout), decisions, "Nothing left to send: no branch made.")
        return Staged(out, decisions)
    worktree = Path(tempfile.mkdtemp(prefix="overlay-stack-")) / "worktree"
    try:
        top = build_stack(checkout, head, needed, worktree)
        note = (f"Branch `{branch}` in {checkout}: {len(needed)} commit(s) on {head[:12]}. Submit with:\n\n"
                f"    cd {checkout} && git checkout {branch} && ghstack submit")
        write_output(out, str(checkout), decisions, note)
        git.user_run(checkout, "branch", branch, top)
    finally:
        remove_worktree(checkout, worktree)
        shutil.rmtree(worktree.parent, ignore_errors=True)
    return Staged(out, decisions, Branch(branch, len(needed), head, checkout))


def render(staged: Staged) -> str:
    """What `stage` prints: each patch's verdict, where they went, and the branch made (if any)."""
    lines = [f"{d.patch.id}  {d.verdict:16s}  {d.evidence}" for d in staged.decisions]
    lines.append(f"staged in {staged.out}")
    b = staged.branch
    if b is not None:
        lines.append(f"branch {b.name}: {b.commits} commit(s) on {b.head[:12]} in {b.checkout}")
        lines.append(f"submit (not run): cd {b.checkout} && git checkout {b.name} && ghstack submit")
    return "\n".join(lines)
