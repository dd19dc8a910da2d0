"""`roll --onto VERSION`: carry one base's series onto another base with a three-way merge.

The new base's fork tree (`build/<new>/tree`) is reset to its base commit, and the old base's
tree (its base commit and the series on it) is fetched into it under `refs/roll/<old>/`, so the
tree holds both bases' sources: every blob a patch's `index` line names is there, and `git am -3`
merges a patch whose context moved instead of refusing it. Each patch ends as one of:

    clean        applied as it is
    merged       applied by a three-way merge (its context moved in the new base)
    upstream     nothing left to apply: the new base already has the whole change (dropped)
    conflicts    the merge conflicts: the roll stops on it
    blocked      (after a conflict) conflicts only in files an earlier conflicting patch touches
    pending      (after a conflict) would apply, cleanly or merged, once the roll goes on

The roll stops at the first conflict with the tree in `git am`, the conflicting patch's merge in
the working tree and the rest of the series queued: resolve, `git add`, `git am --continue`,
then `python -m torch_overlay --base NEW export`. Nothing is lost: a tree holding work that is
not exported is refused, as a rebuild refuses it. The patches after the conflict are tried in a
scratch worktree (the conflicting one skipped) so the report covers the whole series. When every
patch is in, the roll exports the new series to `patches/<new>/` and shows old and new version of
each patch side by side (`git range-diff`).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..core import git, log
from ..core.errors import OverlayError
from ..core.project import Project
from ..pinning.base import Base
from .series import Patch, read_series
from .tree import AM, TreeRecord, export, materialise, reset_to_base

# `git am -3` tells a patch it had to merge by the first line, and one whose merge changed nothing
# (the base already has it: git skips it) by the second.
_MERGED = "Falling back to patching base and 3-way merge"
_ALREADY_APPLIED = "No changes -- Patch already applied"


class Outcome(str, Enum):
    CLEAN = "clean"
    MERGED = "merged"
    UPSTREAM = "upstream"
    CONFLICTS = "conflicts"
    BLOCKED = "blocked"
    PENDING = "pending"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Step:
    patch: Patch
    outcome: Outcome
    detail: str = ""  # the conflicting files, or the earlier patch that blocks this one


@dataclass(frozen=True)
class Roll:
    old: str
    new: str
    steps: list[Step]
    tree: Path
    base_commit: str  # the new base's commit in the tree
    range_diff: str = ""  # when every patch is in

    @property
    def stopped(self) -> Step | None:
        return next((s for s in self.steps if s.outcome == Outcome.CONFLICTS), None)


def refs(old: str) -> tuple[str, str]:
    """Where the old base's commit and its series are kept in the new tree."""
    return f"refs/roll/{old}/base", f"refs/roll/{old}/series"


def roll(old_project: Project, old_base: Base, new_project: Project, new_base: Base, *,
         force: bool = False) -> Roll:
    """Apply `old_project`'s series onto `new_base` in `new_project`'s tree (see the module doc)."""
    if old_project.base == new_project.base:
        raise OverlayError(f"--onto {new_project.base} is the base the series is on; name another base")
    patches = read_series(old_project.patches_dir)
    old_record = materialise(old_project, old_base)  # the blobs the patches name, from the old tree
    new_record = reset_to_base(new_project, new_base, force=force)
    tree = new_project.tree_dir
    base_ref, series_ref = refs(old_project.base)
    git.run(tree, "fetch", "-q", "--no-tags", str(old_project.tree_dir), f"+{old_record.head}:{series_ref}")
    git.run(tree, "update-ref", base_ref, old_record.base_commit)
    steps: list[Step] = []
    for index, patch in enumerate(patches):
        log.info(f"roll {old_project.base} -> {new_project.base}: {patch.path.name}")
        step = _apply(tree, patch)
        if step.outcome == Outcome.CONFLICTS:
            rest = patches[index + 1:]
            git.run(tree, "am", "--abort")
            steps += [step, *_try_rest(tree, step, rest)]
            _apply(tree, patch, *rest)  # stops on `patch` again, now with the rest queued behind it
            _record(tree, new_record, steps, new_project.base, stopped_at=patch.path.name)
            return Roll(old_project.base, new_project.base, steps, tree, new_record.base_commit)
        steps.append(step)
        _record(tree, new_record, steps, new_project.base)
    export(new_project)
    materialise(new_project, new_base)  # torch/version.py for the new series
    return Roll(old_project.base, new_project.base, steps, tree, new_record.base_commit,
                range_diff(tree, old_project.base, new_record.base_commit))


def _apply(tree: Path, *patches: Patch) -> Step:
    """`git am -3` the patches (all but the first are queued behind it); the first one's outcome."""
    result = git.run(tree, *AM, "-3", *(str(p.path.resolve()) for p in patches), check=False)
    output = result.stdout + result.stderr
    patch = patches[0]
    if result.returncode == 0 and _ALREADY_APPLIED in output:
        return Step(patch, Outcome.UPSTREAM, "the new base has the whole change")
    if result.returncode == 0:
        return Step(patch, Outcome.MERGED if _MERGED in output else Outcome.CLEAN)
    return Step(patch, Outcome.CONFLICTS, ", ".join(_unmerged(tree)) or _first_error(output))


def _unmerged(tree: Path) -> list[str]:
    return git.out(tree, "diff", "--name-only", "--diff-filter=U").split()


def _first_error(output: str) -> str:
    return next((line for line in output.splitlines() if line.startswith("error:")), output.strip()[:200])


def _try_rest(tree: Path, conflict: Step, rest: list[Patch]) -> list[Step]:
    """The patches after `conflict`, tried in a scratch worktree without it: which would apply,
    and which conflict only in files an earlier conflicting patch touches."""
    scratch = Path(tempfile.mkdtemp(prefix="overlay-roll-"))
    worktree = scratch / "worktree"
    try:
        git.run(tree, "worktree", "add", "-q", "--detach", str(worktree), "HEAD")
        failed = [conflict.patch]
        steps = []
        for patch in rest:
            step = _apply(worktree, patch)
            if step.outcome == Outcome.CONFLICTS:
                conflicting = set(_unmerged(worktree))
                git.run(worktree, "am", "--abort")
                blockers = [f.path.name for f in failed if conflicting & set(f.files)]
                if conflicting and conflicting <= {name for f in failed for name in f.files}:
                    named = ", ".join(blockers[:2]) + (f" and {len(blockers) - 2} more" if len(blockers) > 2 else "")
                    step = Step(patch, Outcome.BLOCKED, f"conflicts only in files of {named}")
                failed.append(patch)
            elif step.outcome in (Outcome.CLEAN, Outcome.MERGED):
                step = Step(patch, Outcome.PENDING, f"applies {step.outcome} once the roll goes on")
            steps.append(step)
        return steps
    finally:
        git.run(tree, "worktree", "remove", "--force", str(worktree), check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        git.run(tree, "worktree", "prune", check=False)


def _record(tree: Path, record: TreeRecord, steps: list[Step], new: str, stopped_at: str = "") -> None:
    """The tree's record after a step: what it holds is the roll's, exported to `patches/<new>/` later."""
    record.head = git.out(tree, "rev-parse", "HEAD")
    record.dropped = [(s.patch.path.name, f"upstream in {new}: the roll's three-way merge left nothing to apply")
                      for s in steps if s.outcome == Outcome.UPSTREAM]
    record.applied = []  # what the tree holds is the roll's, not a series of patches/ yet
    record.complete = not stopped_at
    record.stopped_at = stopped_at
    record.write(tree)


def range_diff_command(old: str, base_commit: str) -> list[str]:
    """`git range-diff` of the old series against the rolled one: each patch's old and new version."""
    base_ref, series_ref = refs(old)
    # A patch rolled onto moved context differs from its old version mostly in context lines: a
    # high creation factor still pairs them (`!`) instead of listing one removed and one added.
    return ["range-diff", "--no-color", "--creation-factor=90", f"{base_ref}..{series_ref}",
            f"{base_commit[:12]}..HEAD"]


def range_diff(tree: Path, old: str, base_commit: str) -> str:
    return git.out(tree, *range_diff_command(old, base_commit))


def render(result: Roll) -> str:
    lines = [f"roll {result.old} -> {result.new}:"]
    lines += [f"  {s.patch.id}  {s.outcome:9s}  {s.patch.title}" + (f"  ({s.detail})" if s.detail else "")
              for s in result.steps]
    counts = {o: sum(s.outcome == o for s in result.steps) for o in Outcome}
    lines.append("  " + ", ".join(f"{n} {o}" for o, n in counts.items() if n))
    dropped = [s.patch.path.name for s in result.steps if s.outcome == Outcome.UPSTREAM]
    if dropped:
        lines.append(f"patches deleted, now upstream in {result.new}: {', '.join(dropped)}")
    stopped = result.stopped
    if stopped is not None:
        lines += [
            f"stopped on {stopped.patch.path.name}: {result.tree} is in `git am` with its conflicts in the "
            "working tree and the rest of the series queued. To go on:",
            f"  cd {result.tree}",
            "  $EDITOR <each conflicting file>; git add -A && git am --continue   # the rest follows, merged",
            f"  cd - && python -m torch_overlay --base {result.new} export",
            f"  git -C {result.tree} {' '.join(range_diff_command(result.old, result.base_commit))}   # old vs new",
        ]
    else:
        lines += [f"wrote patches/{result.new}/ (old and new version of each patch below)", "", result.range_diff]
    return "\n".join(lines)
