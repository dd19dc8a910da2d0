"""`stage --onto TARGET -o DIR`: the patches still needed upstream, ready to send.

TARGET is an upstream checkout (a git repository with `torch/`), a base with its own series
(`patches/<version>/`) or another pinned release version:

    a base        its own series, forward-ported there: each patch is proven on that base (its
                  tests fail on stock, pass on the overlay: `verify patches`), and the proven ones
                  must apply in order with `git am` onto a repository of the base's sources (the
                  fork tree's base commit). The series' dropped patches are listed as skipped,
                  with the reason the series records. A patch whose proof fails is not staged
                  (the command then exits 1) and the others still are.
    a release     this base's series, classified there by `drift` (its tests and
                  `git apply --check`); a conflicting patch stops everything: roll the series
                  onto it first (`roll --onto`), which makes it a base.
    a checkout    this base's series, classified by `git apply --check` alone (a source checkout
                  cannot run without a build); a local branch with one commit per patch is made
                  on top of its HEAD, in a temporary worktree, so the checkout's own branch and
                  files are never touched.

Patches already upstream are listed as skipped, with the evidence. For each staged patch DIR
gets the mbox (`git am`-ready patch file) and a PR body in markdown (upstream's template, and
whether the fix meets the release cherry-pick criteria); `stage.json` holds every verdict. Bad
input stops before anything is written; DIR is assembled under a temporary name and renamed at
the end.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from .core import atomic, git
from .core.errors import OverlayError
from .core.outcomes import Drift, Proof
from .core.project import Project
from .fork import applycheck, message, tree
from .fork.series import Patch, read_dropped, read_series, series_file
from .pinning.base import load as load_base
from .pinning.pin import Pin, base_versions, load_pin
from .proofs import drift
from .proofs.prove import PatchProof, prove, select, side_summary

GitRun = Callable[..., subprocess.CompletedProcess[str]]


@dataclass(frozen=True)
class Decision:
    patch: Patch
    verdict: Drift | Proof  # a base's own series: its proof there; else the drift (a checkout: never partly)
    evidence: str
    apply: str  # how the patch applies there
    apply_output: str = ""  # git's messages for one that does not

    @property
    def staged(self) -> bool:
        return self.verdict in (Drift.STILL_NEEDED, Proof.OK)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.patch.id,
            "file": self.patch.path.name,
            "title": self.patch.title,
            "verdict": self.verdict,
            "staged": self.staged,
            "evidence": self.evidence,
            "apply": self.apply,
            "apply_output": self.apply_output,
            "release_cherry_pick": message.cherry_pick(self.patch),
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
        decisions.append(Decision(patch, verdict, f"patch {check.describe()} (tests not run on a checkout)",
                                  check.describe(), check.output))
    return decisions


def decide_on_release(project: Project, pin: Pin, version: str, patches: list[Patch], *,
                      keep: bool, timeout: float) -> list[Decision]:
    _, results, _ = drift.evaluate_release(project, pin, version, patches, keep=keep, timeout=timeout)
    return [Decision(r.patch, r.verdict, r.evidence(), r.apply.describe(), r.apply.output) for r in results]


def decide_by_proof(proof: PatchProof, version: str) -> Decision:
    """A patch of `version`'s own series, by its proof there."""
    evidence = f"on torch {version}: stock {side_summary(proof.stock)}; overlay {side_summary(proof.overlay)}"
    return Decision(proof.patch, proof.verdict, evidence, "applies in order (git am)" if proof.ok else "not staged")


def refuse_conflicts(decisions: list[Decision], target: str, remedy: str) -> None:
    conflicts = [d for d in decisions if d.verdict == Drift.CONFLICTS]
    if conflicts:
        detail = "\n".join(f"  {d.patch.path.name}: {d.evidence}\n    {d.apply_output}" for d in conflicts)
        raise OverlayError(f"patches conflict with {target}; nothing was staged:\n{detail}\n{remedy}")


def not_proven(decision: Decision) -> bool:
    """A patch of a base's own series whose proof there failed: not staged, and the run fails."""
    return isinstance(decision.verdict, Proof) and not decision.staged


def has_own_series(project: Project, version: str) -> bool:
    """Whether `version` is a base with a series of its own: staged as it is, not classified."""
    return version in base_versions(project.pin_file) and series_file(project.with_base(version).patches_dir).exists()


# -- the stack branch ---------------------------------------------------------------------------

def build_stack(repo: Path, head: str, patches: list[Patch], worktree: Path, run: GitRun = git.user_run) -> str:
    """`git am` the patches onto `head` in a detached worktree; returns the stack's top commit.
    `run`: the user's git for their checkout, the tool's (`git.run`) for a tree it made."""
    run(repo, "worktree", "add", "-q", "--detach", str(worktree), head)
    for patch in patches:
        result = run(worktree, "am", "-q", "--keep-non-patch", "--whitespace=nowarn", str(patch.path.resolve()),
                     check=False)
        if result.returncode != 0:
            run(worktree, "am", "--abort", check=False)
            raise OverlayError(f"{patch.path.name} does not apply on top of the earlier patches "
                               f"(git am):\n{(result.stdout + result.stderr).strip()}")
    return str(run(worktree, "rev-parse", "HEAD").stdout.strip())


def remove_worktree(repo: Path, worktree: Path, run: GitRun = git.user_run) -> None:
    run(repo, "worktree", "remove", "--force", str(worktree), check=False)
    shutil.rmtree(worktree, ignore_errors=True)
    run(repo, "worktree", "prune", check=False)


def check_in_order(repo: Path, base_commit: str, patches: list[Patch]) -> None:
    """The staged mboxes apply in order with `git am` onto the base's sources (the tree's first commit)."""
    scratch = Path(tempfile.mkdtemp(prefix="overlay-stage-"))
    try:
        build_stack(repo, base_commit, patches, scratch / "worktree", git.run)
    finally:
        remove_worktree(repo, scratch / "worktree", git.run)
        shutil.rmtree(scratch, ignore_errors=True)


# -- the output ---------------------------------------------------------------------------------

def readme(target: str, decisions: list[Decision], dropped: dict[str, str], branch_note: str) -> str:
    lines = [f"# Patches staged for {target}", "", "| patch | verdict | applies | evidence |", "|---|---|---|---|"]
    lines += [f"| {d.patch.path.name} | {d.verdict} | {d.apply} | {d.evidence} |" for d in decisions]
    skipped = [f"- {d.patch.path.name}: {d.evidence}" for d in decisions if d.verdict == Drift.ALREADY_UPSTREAM]
    skipped += [f"- {name}: dropped from the series: {why}" for name, why in dropped.items()]
    if skipped:
        lines += ["", "## Skipped (already upstream)", "", *skipped]
    unproven = [f"- {d.patch.path.name}: {d.verdict}" for d in decisions if not_proven(d)]
    if unproven:
        lines += ["", "## Not staged (their proof failed: `verify patches` shows why)", "", *unproven]
    return "\n".join(lines + ["", branch_note, ""])


def write_output(out: Path, target: str, decisions: list[Decision], branch_note: str,
                 dropped: dict[str, str] | None = None) -> None:
    if out.exists() and any(out.iterdir()):
        raise OverlayError(f"{out} exists and is not empty; choose another -o directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(out) as partial:  # `out` is empty or absent (checked above): nothing is lost
        partial.mkdir()
        for d in decisions:
            if d.staged:
                shutil.copyfile(d.patch.path, partial / d.patch.path.name)
                (partial / d.patch.path.with_suffix(".md").name).write_text(message.pr_body(d.patch, d.evidence))
        (partial / "README.md").write_text(readme(target, decisions, dropped or {}, branch_note))
        summary = {"target": target, "patches": [d.to_json() for d in decisions],
                   "dropped": [{"file": name, "why": why} for name, why in (dropped or {}).items()]}
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
    dropped: dict[str, str] = field(default_factory=dict)  # a base's series: what it dropped, and why

    @property
    def complete(self) -> bool:
        """Every patch proven or classified (a base's patch whose proof failed is not)."""
        return not any(not_proven(d) for d in self.decisions)


def run_stage(project: Project, pin: Pin, onto: str, output: Path, patch_ids: list[str] | None, *, branch: str,
              keep: bool, timeout: float) -> Staged:
    """`stage --onto TARGET -o OUTPUT`: the chosen patches (all when none are named), staged for TARGET."""
    out = output.resolve()
    if out.exists() and any(out.iterdir()):  # checked early too: before any long step
        raise OverlayError(f"{out} exists and is not empty; choose another -o directory")
    target_path = Path(onto).expanduser()
    if not target_path.is_dir() and is_version(onto) and has_own_series(project, onto):
        return _stage_base(project.with_base(onto), patch_ids, out, keep=keep, timeout=timeout)
    patches = select(read_series(project.patches_dir), patch_ids)
    if target_path.is_dir():
        return _stage_checkout(target_path.resolve(), patches, out, branch)
    if not is_version(onto):
        raise OverlayError(f"--onto {onto}: neither an upstream checkout directory nor a release version")
    decisions = decide_on_release(project, pin, onto, patches, keep=keep, timeout=timeout)
    refuse_conflicts(decisions, f"torch {onto}", f"Roll the series onto it (`roll --onto {onto}`, after pinning it "
                     "as a base) and stage that base's series.")
    write_output(out, f"torch {onto}", decisions, "Release target: no branch made.")
    return Staged(out, decisions)


def _stage_base(target: Project, patch_ids: list[str] | None, out: Path, *, keep: bool, timeout: float) -> Staged:
    """A base's own series: proven there, checked to apply in order, staged."""
    pin = load_pin(target.pin_file, target.base)
    base = load_base(target.cache, pin, pin.wheel_for_this_interpreter())
    patches = select(read_series(target.patches_dir), patch_ids)
    record = tree.materialise(target, base)  # the tests are taken from the base's overlay tree
    decisions = [decide_by_proof(p, target.base) for p in prove(target, base, patches, keep=keep, timeout=timeout)]
    check_in_order(target.tree_dir, record.base_commit, [d.patch for d in decisions if d.staged])
    dropped = read_dropped(target.patches_dir)
    label = f"torch {target.base}"
    write_output(out, label, decisions, f"Release target: the mboxes apply in order with `git am` on {label}'s "
                 "sources; no branch made.", dropped)
    return Staged(out, decisions, dropped=dropped)


def _stage_checkout(checkout: Path, patches: list[Patch], out: Path, branch: str) -> Staged:
    head = check_checkout(checkout, branch)
    decisions = decide_on_checkout(checkout, patches)
    refuse_conflicts(decisions, str(checkout), "Rebase them onto the target (build/tree, then export) and stage again.")
    needed = [d.patch for d in decisions if d.staged]
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
    lines += [f"dropped  {name}: {why}" for name, why in staged.dropped.items()]
    lines.append(f"staged in {staged.out}")
    b = staged.branch
    if b is not None:
        lines.append(f"branch {b.name}: {b.commits} commit(s) on {b.head[:12]} in {b.checkout}")
        lines.append(f"submit (not run): cd {b.checkout} && git checkout {b.name} && ghstack submit")
    return "\n".join(lines)
