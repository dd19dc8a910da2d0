"""The fork tree: `build/tree`, a git repository holding the base plus one commit per patch.

Commit 1 is the base wheel's text sources (`torch/`, `torchgen/`, `functorch/`); its compiled
files sit in the working tree as hard links into the base cache, untracked. Each patch of the
series is then applied with `git am` (author, date and message kept). `export` turns the commits
on top of the base back into `patches/`. `torch/version.py` is generated, as upstream's is.

The tree's record (`.git/torch-overlay.json`) says which base and which patches it holds and
whether the last build finished, stopped on a patch that does not apply (left in `git am` for
the developer), or was interrupted (noticed and redone by the next run). Whatever the state, a
rebuild first checks that it discards nothing of the developer's: uncommitted or untracked
files, commits that are not exported, a `git am`/rebase/merge in progress (unless `--force`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core import atomic, git
from ..core.errors import OverlayError, ToolError
from ..core.fault import fault_point
from ..core.lock import build_lock
from ..core.progress import Progress
from ..core.project import Project
from ..pinning.base import Base, link_or_copy
from .series import (
    WHEEL_PACKAGES,
    Patch,
    check_wheel_buildable,
    overlay_version,
    read_dropped,
    read_series,
    series_file,
    series_text,
)

RECORD = "torch-overlay.json"
VERSION_PY = "torch/version.py"
BRANCH = "main"
# Fixed so that the base commit hashes the same on every machine.
BASE_DATE = "2025-11-12T00:00:00+00:00"


class CorruptRecord(ToolError):
    """The tree's record cannot be read: only a rebuild (`--force`) can replace it."""


@dataclass
class TreeRecord:
    base_sha256: str
    base_commit: str
    applied: list[tuple[str, str]] = field(default_factory=list)  # (patch file, sha256)
    head: str = ""  # the last commit the tool made or exported
    complete: bool = False
    stopped_at: str = ""  # the patch `git am` stopped on, left in progress for the developer
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (patch file, why): a roll's, for export

    @classmethod
    def read(cls, tree: Path) -> TreeRecord | None:
        path = tree / ".git" / RECORD
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            data["applied"] = [(str(name), str(sha)) for name, sha in data["applied"]]
            data["dropped"] = [(str(name), str(why)) for name, why in data.get("dropped", [])]
            record = cls(**data)
            commits = (record.base_commit, record.head or record.base_commit)
            if not all(isinstance(c, str) and re.fullmatch(r"[0-9a-f]{40}", c) for c in commits):
                raise ValueError("base_commit and head must be full commit hashes")
            if not isinstance(record.base_sha256, str):
                raise TypeError("base_sha256 must be a string")
        except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError is a ValueError
            raise CorruptRecord(
                f"{path} is corrupt ({type(e).__name__}: {e}); save any unexported commits (`git -C {tree} "
                f"format-patch -o SAVED $(git -C {tree} rev-list --max-parents=0 HEAD)..HEAD`), then rebuild "
                "with `python -m torch_overlay tree --force`"
            ) from None
        return record

    def write(self, tree: Path) -> None:
        atomic.write_text(tree / ".git" / RECORD, json.dumps(asdict(self), indent=1))


def wanted(patches: list[Patch]) -> list[tuple[str, str]]:
    return [(p.path.name, p.sha256()) for p in patches]


# -- inspecting ---------------------------------------------------------------------------------

def changed_files(tree: Path) -> list[str]:
    """Tracked files with uncommitted changes and new untracked files (ignored ones excluded)."""
    lines = git.run(tree, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    return [line[3:] for line in lines if line]


def am_in_progress(tree: Path) -> bool:
    return (tree / ".git" / "rebase-apply" / "applying").exists()


@dataclass(frozen=True)
class Operation:
    """A git operation stopped half-way in the tree, and the commands that end it."""

    name: str
    proceed: str
    abort: str


def operation_in_progress(tree: Path) -> Operation | None:
    git_dir = tree / ".git"
    if am_in_progress(tree):
        return Operation("git am", "git am --continue", "git am --abort")
    if (git_dir / "rebase-apply").exists() or (git_dir / "rebase-merge").exists():
        return Operation("git rebase", "git rebase --continue", "git rebase --abort")
    for head, name in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        if (git_dir / head).exists():
            return Operation(f"git {name}", f"git {name} --continue", f"git {name} --abort")
    return None


def unexported_commits(tree: Path, record: TreeRecord) -> list[str]:
    """`<hash> <subject>` of each commit on HEAD that neither patches/ nor the tool made.

    The tool's own `git am` commits (committer: the bot) are excluded: a build killed between a
    commit and its record update leaves one, and redoing the build must not call it lost work.
    """
    since = record.head or record.base_commit
    lines = git.out(tree, "log", "--reverse", "--format=%h %ce %s", f"{since}..HEAD").splitlines()
    return [f"{h} {subject}" for h, email, subject in (line.split(" ", 2) for line in lines) if email != git.BOT_EMAIL]


def commits_since_base(tree: Path, record: TreeRecord) -> list[str]:
    return git.out(tree, "rev-list", "--reverse", f"{record.base_commit}..HEAD").split()


def is_fresh(record: TreeRecord | None, base: Base, patches: list[Patch]) -> bool:
    return (
        record is not None
        and record.complete
        and record.base_sha256 == base.wheel.sha256
        and record.applied == wanted(patches)
    )


# -- building -----------------------------------------------------------------------------------

def materialise(project: Project, base: Base, *, force: bool = False) -> TreeRecord:
    """Bring `build/<version>/tree` to base + series; a no-op when it already is."""
    if not series_file(project.patches_dir).exists():
        raise OverlayError(
            f"torch {project.base} has no series yet ({series_file(project.patches_dir)} is missing): carry one "
            f"onto it with `python -m torch_overlay roll --onto {project.base}`, or build another base (--base)"
        )
    patches = read_series(project.patches_dir)
    check_wheel_buildable(patches)
    tree = project.tree_dir
    with build_lock(project.build_dir):
        record = _existing_record(tree, force)
        if is_fresh(record, base, patches):
            _write_generated(tree, base, patches)
            return record  # type: ignore[return-value]
        record = _start_from_base(project, base, record, force)
        for index, patch in enumerate(patches):
            _apply(tree, record, patch, patches[index + 1:])
        record.complete = True
        record.write(tree)
        _write_generated(tree, base, patches)
        return record


def reset_to_base(project: Project, base: Base, *, force: bool = False) -> TreeRecord:
    """Bring `build/<version>/tree` to its base commit alone (a roll applies another series on it),
    refusing, as a rebuild does, to discard any work of the developer's."""
    with build_lock(project.build_dir):
        return _start_from_base(project, base, _existing_record(project.tree_dir, force), force)


def _existing_record(tree: Path, force: bool) -> TreeRecord | None:
    """The tree's record; none for no tree, or for a corrupt record with --force (rebuilt from scratch)."""
    try:
        return TreeRecord.read(tree) if (tree / ".git").exists() else None
    except CorruptRecord:
        if not force:
            raise
        return None


def _start_from_base(project: Project, base: Base, record: TreeRecord | None, force: bool) -> TreeRecord:
    """The tree at its base commit alone (made anew for another base), unless that loses work."""
    if not force:
        _refuse_to_lose_work(project.tree_dir, record)
    if record is None or record.base_sha256 != base.wheel.sha256:
        return _create(project, base)
    _reset_to_base(project.tree_dir, record)
    return record


def _refuse_to_lose_work(tree: Path, record: TreeRecord | None) -> None:
    """Raise, naming what would be lost and the way out, unless a rebuild discards nothing."""
    if record is None:
        if tree.exists():
            raise OverlayError(f"{tree} exists but was not made by torch_overlay; move it away or pass --force")
        return
    _abort_own_am(tree, record)
    require_committed(tree, record, "then `python -m torch_overlay export`; or pass --force: a rebuild discards it")
    commits = unexported_commits(tree, record)
    if commits:
        raise OverlayError(
            f"{tree} has commits that are not in patches/: {_listing(commits)}. Run "
            "`python -m torch_overlay export` first, or pass --force to discard them."
        )


def require_committed(tree: Path, record: TreeRecord, then: str) -> None:
    """Raise unless all of `tree` is committed: no git operation half-way through (`git am`, a
    rebase...) and no uncommitted change. `then` ends the message: what the command at hand
    needs once that is done."""
    operation = operation_in_progress(tree)
    if operation:
        where = f" (stopped at {record.stopped_at})" if record.stopped_at and operation.name == "git am" else ""
        raise OverlayError(
            f"{tree} is in the middle of `{operation.name}`{where}: finish it (`{operation.proceed}`) or abandon it "
            f"(`git -C {tree} {operation.abort.removeprefix('git ')}`), {then}"
        )
    dirty = changed_files(tree)
    if dirty:
        raise OverlayError(f"{tree} has uncommitted changes ({_listing(dirty)}): commit them, {then}")


def _listing(items: list[str]) -> str:
    return ", ".join(items[:10]) + (f" (and {len(items) - 10} more)" if len(items) > 10 else "")


def _abort_own_am(tree: Path, record: TreeRecord) -> None:
    """End a `git am` the tool started that nobody has worked on since: it holds nothing to lose.

    That is one killed mid-patch, or one stopped on a failing patch that the developer left
    alone (no commit since, nothing edited) to fix `patches/` instead.
    """
    if record.complete or not am_in_progress(tree):
        return
    untouched = not changed_files(tree) and git.out(tree, "rev-parse", "HEAD") == record.head
    if not record.stopped_at or untouched:
        git.run(tree, "am", "--abort")


def _create(project: Project, base: Base) -> TreeRecord:
    """A new tree holding only the base commit, built aside and renamed into place."""
    with atomic.replacing(project.tree_dir) as partial:
        partial.mkdir(parents=True)
        _populate(base, partial)
        git.run(partial, "init", "-q", "-b", BRANCH)
        _write_if_changed(partial / ".git" / "info" / "exclude", _exclude_list(base))
        git.run(partial, "add", "-A")
        message = (
            f"torch {base.version} base: sources of the official wheel\n\n"
            f"Upstream revision {base.revision}. Compiled files are present in the working tree\n"
            "but not tracked; they are the official wheel's, unchanged.\n"
        )
        git.run(partial, "commit", "-q", "-m", message, GIT_AUTHOR_DATE=BASE_DATE, GIT_COMMITTER_DATE=BASE_DATE)
        commit = git.out(partial, "rev-parse", "HEAD")
        record = TreeRecord(base_sha256=base.wheel.sha256, base_commit=commit, head=commit)
        record.write(partial)
        fault_point("populate")  # a complete `.partial`, not yet in place
    return record


def _in_tree(path: str) -> bool:
    return path.split("/", 1)[0] in WHEEL_PACKAGES


def package_files(base: Base) -> list[str]:
    """The base's files under `torch/`, `torchgen/`, `functorch/` (not its dist-info)."""
    return [f for f in base.text_files + base.binary_files if _in_tree(f)]


def _populate(base: Base, dest: Path) -> None:
    files = package_files(base)
    progress = Progress("materialising tree", total=len(files), unit="files")
    for name in files:
        src, out = base.extracted / name, dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        if name in base.binary_files:
            link_or_copy(src, out)
        else:
            shutil.copy2(src, out)  # a real copy: edits in the tree must never reach the cache
        progress.advance(1)
        fault_point("populate", out)
    progress.done()


def _exclude_list(base: Base) -> str:
    compiled = [f"/{f}" for f in base.binary_files if _in_tree(f)]
    generated = [f"/{VERSION_PY}", "__pycache__/", "*.pyc", "/*.egg-info/"]
    header = "# compiled files of the base wheel (hard links) and generated files"
    return "\n".join([header, *compiled, *generated]) + "\n"


def _reset_to_base(tree: Path, record: TreeRecord) -> None:
    operation = operation_in_progress(tree)
    if operation:  # only with --force (or the tool's own session): see _refuse_to_lose_work
        git.run(tree, *operation.abort.split()[1:], check=False)
        for leftover in ("rebase-apply", "rebase-merge"):
            shutil.rmtree(tree / ".git" / leftover, ignore_errors=True)
    record.complete = False
    record.stopped_at = ""
    record.applied = []
    record.dropped = []
    record.head = record.base_commit
    record.write(tree)
    git.run(tree, "checkout", "-q", "-f", "-B", BRANCH, record.base_commit)
    git.run(tree, "clean", "-q", "-fd")  # untracked, not ignored: compiled files stay


# `git am` keeps each patch's author, date and message; commits made by the tool hash the same
# everywhere (fixed committer, committer date = author date).
AM = ("am", "--keep-non-patch", "--committer-date-is-author-date", "--whitespace=nowarn")


def _apply(tree: Path, record: TreeRecord, patch: Patch, rest: list[Patch]) -> None:
    result = git.run(tree, *AM, str(patch.path.resolve()), check=False)
    if result.returncode != 0:
        _stop_at(tree, record, [patch, *rest])
        raise OverlayError(_apply_failure(tree, patch, result.stdout + result.stderr))
    fault_point("apply")  # committed, not yet recorded: the commit is the bot's, not lost work
    record.applied.append((patch.path.name, patch.sha256()))
    record.head = git.out(tree, "rev-parse", "HEAD")
    record.write(tree)


def _stop_at(tree: Path, record: TreeRecord, rest: list[Patch]) -> None:
    """Leave `git am` stopped on the failing patch with the rest of the series queued behind it.

    A plain `git am` that fails touches no file, so the tree is the last good commit; the
    developer fixes the patch there and `git am --continue` commits it and applies the others.
    """
    if am_in_progress(tree):
        git.run(tree, "am", "--abort")
    git.run(tree, *AM, *(str(p.path.resolve()) for p in rest), check=False)
    record.stopped_at = rest[0].path.name
    record.write(tree)


def _apply_failure(tree: Path, patch: Patch, output: str) -> str:
    failed = re.findall(r"^error: patch failed: (\S+):(\d+)$", output, flags=re.M)
    where = "; ".join(f"{path} (hunk at line {line})" for path, line in failed)
    other = [line for line in output.splitlines() if line.startswith("error:") and "patch failed" not in line]
    head = git.out(tree, "log", "-1", "--format=%h %s")
    name = patch.path.name
    return (
        f"{name} does not apply: {where or '; '.join(other) or output.strip()}\n"
        f"{tree} is stopped in `git am` on it, at the last good commit ({head}), with the rest of the "
        "series queued and no half-applied files. To fix the patch in the tree:\n"
        f"  cd {tree}\n"
        "  git apply --3way .git/rebase-apply/patch   # or make the change by hand; resolve any conflict\n"
        "  git add -A && git am --continue           # commits it with its message, then applies the rest\n"
        "  cd - && python -m torch_overlay export     # writes the fixed series to patches/\n"
        f"Or fix patches/{name} itself and run `python -m torch_overlay tree` again."
    )


def _write_generated(tree: Path, base: Base, patches: list[Patch]) -> None:
    _write_if_changed(tree / ".git" / "info" / "exclude", _exclude_list(base))
    _write_if_changed(tree / VERSION_PY, version_py(base, patches))


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def version_py(base: Base, patches: list[Patch]) -> str:
    """`torch/version.py`: the base's, with the overlay version and the applied patches."""
    text = (base.extracted / VERSION_PY).read_text()
    version = overlay_version(base.version, patches)
    text = re.sub(r"^__version__ = .*$", f"__version__ = {version!r}", text, count=1, flags=re.M)
    listed = "".join(f"    ({p.id!r}, {p.title!r}),\n" for p in patches)
    text += (
        "\n# torch-overlay: the patches applied on top of git_version (ids and titles)\n"
        f"overlay_base_version = {base.version!r}\n"
        f"overlay_patches = (\n{listed})\n"
    )
    return text


# -- exporting ----------------------------------------------------------------------------------

def export(project: Project) -> list[Path]:
    """Write the commits on top of the base to `patches/` and `series`; returns the patch files."""
    tree = project.tree_dir
    with build_lock(project.build_dir):
        record = TreeRecord.read(tree) if (tree / ".git").exists() else None
        _check_exportable(tree, record)
        assert record is not None
        project.patches_dir.mkdir(exist_ok=True)
        # The record's list covers a previous export killed before it removed stale files.
        old = {p.path.name for p in read_series(project.patches_dir)} | {name for name, _ in record.applied}
        scratch = project.export_scratch_dir
        shutil.rmtree(scratch, ignore_errors=True)
        git.run(
            tree, "format-patch", "--zero-commit", "--no-signature", "--no-numbered", "--abbrev=12",
            "--filename-max-length=64", "-o", str(scratch), f"{record.base_commit}..HEAD",
        )
        produced = sorted(scratch.iterdir())
        for path in produced:  # git wrote each whole into `scratch`, its partial: renamed into place
            os.replace(path, project.patches_dir / path.name)
            fault_point("export", project.patches_dir / path.name)
        scratch.rmdir()
        names = [p.name for p in produced]
        listing = series_file(project.patches_dir)
        dropped = {**read_dropped(project.patches_dir), **dict(record.dropped)}
        atomic.write_text(listing, series_text(names, {n: why for n, why in dropped.items() if n not in names}))
        fault_point("export", listing)
        for stale in old - set(names):
            (project.patches_dir / stale).unlink(missing_ok=True)
        patches = read_series(project.patches_dir)
        record.applied = wanted(patches)
        record.head = git.out(tree, "rev-parse", "HEAD")
        record.complete = True
        record.stopped_at = ""
        record.dropped = []  # now in `series`
        record.write(tree)
        return [p.path for p in patches]


def _check_exportable(tree: Path, record: TreeRecord | None) -> None:
    """The tree's commits are the developer's finished work, not a build's half-way state."""
    if record is None:
        raise OverlayError(f"{tree} is not a torch_overlay tree; run `python -m torch_overlay tree` first")
    require_committed(tree, record, "then export")
    if not record.complete and not record.stopped_at:
        raise OverlayError(f"the last build of {tree} was interrupted; run `python -m torch_overlay tree` to finish it")
    if record.stopped_at and git.out(tree, "rev-parse", "HEAD") == record.head:
        raise OverlayError(
            f"{tree} holds the series only up to before {record.stopped_at}, which did not apply; exporting "
            f"would drop it and the patches after it. Fix it in the tree (`git am`, as advised when it "
            "failed) or fix patches/ and run `python -m torch_overlay tree`"
        )
