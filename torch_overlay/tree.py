"""The fork tree: `build/tree`, a git repository holding the base plus one commit per patch.

Commit 1 is the base wheel's text sources (`torch/`, `torchgen/`, `functorch/`); its compiled
files sit in the working tree as hard links into the base cache, untracked. Each patch of the
series is then applied with `git am` (author, date and message kept). `export` turns the commits
on top of the base back into `patches/`. `torch/version.py` is generated, as upstream's is.

The tree's record (`.git/torch-overlay.json`) says which base and which patches it holds and
whether the last build finished; an interrupted build is noticed and redone by the next one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import git
from .base import Base, link_or_copy
from .errors import OverlayError
from .lock import build_lock
from .progress import Progress
from .project import Project
from .series import WHEEL_PACKAGES, Patch, check_wheel_buildable, local_tag, read_series, series_file

RECORD = "torch-overlay.json"
VERSION_PY = "torch/version.py"
BRANCH = "main"
# Fixed so that the base commit hashes the same on every machine.
BASE_DATE = "2025-11-12T00:00:00+00:00"


@dataclass
class TreeRecord:
    base_sha256: str
    base_commit: str
    applied: list[tuple[str, str]] = field(default_factory=list)  # (patch file, sha256)
    head: str = ""
    complete: bool = False

    @classmethod
    def read(cls, tree: Path) -> "TreeRecord | None":
        path = tree / ".git" / RECORD
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        data["applied"] = [tuple(entry) for entry in data["applied"]]
        return cls(**data)

    def write(self, tree: Path) -> None:
        path = tree / ".git" / RECORD
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, path)


def wanted(patches: list[Patch]) -> list[tuple[str, str]]:
    return [(p.path.name, p.sha256()) for p in patches]


def overlay_version(base_version: str, patches: list[Patch]) -> str:
    return f"{base_version}+{local_tag(patches)}"


# -- inspecting ---------------------------------------------------------------------------------

def changed_files(tree: Path) -> list[str]:
    """Tracked files with uncommitted changes and new untracked files (ignored ones excluded)."""
    lines = git.run(tree, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    return [line[3:] for line in lines if line]


def am_in_progress(tree: Path) -> bool:
    return (tree / ".git" / "rebase-apply").exists()


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
    """Bring `build/tree` to base + series; a no-op when it already is."""
    patches = read_series(project.patches_dir)
    check_wheel_buildable(patches)
    tree = project.tree_dir
    with build_lock(project.build_dir):
        record = TreeRecord.read(tree) if (tree / ".git").exists() else None
        if is_fresh(record, base, patches):
            _write_generated(tree, base, patches)
            return record  # type: ignore[return-value]
        if record is not None and record.complete and not force:
            _refuse_to_lose_work(tree, record)
        if record is None or record.base_sha256 != base.wheel.sha256:
            if tree.exists() and record is None and not force:
                raise OverlayError(f"{tree} exists but was not made by torch_overlay; move it away or pass --force")
            record = _create(project, base)
        else:
            _reset_to_base(tree, record)
        for patch in patches:
            _apply(tree, record, patch)
        record.head = git.out(tree, "rev-parse", "HEAD")
        record.complete = True
        record.write(tree)
        _write_generated(tree, base, patches)
        return record


def _refuse_to_lose_work(tree: Path, record: TreeRecord) -> None:
    dirty = changed_files(tree)
    if dirty:
        raise OverlayError(
            f"{tree} has uncommitted changes, a rebuild would discard them: {', '.join(dirty[:10])}"
            + (" ..." if len(dirty) > 10 else "")
            + ". Commit and `python -m torch_overlay export` them, or pass --force to discard."
        )
    head = git.out(tree, "rev-parse", "HEAD")
    if head != record.head:
        raise OverlayError(
            f"{tree} has commits that are not in patches/ (HEAD {head[:12]}); run "
            "`python -m torch_overlay export` first, or pass --force to discard them."
        )


def _create(project: Project, base: Base) -> TreeRecord:
    """A new tree holding only the base commit, built aside and renamed into place."""
    tree = project.tree_dir
    partial = tree.with_name(tree.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # left by an interrupted run
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
    if tree.exists():
        shutil.rmtree(tree)
    os.replace(partial, tree)
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
    progress.done()


def _exclude_list(base: Base) -> str:
    compiled = [f"/{f}" for f in base.binary_files if _in_tree(f)]
    generated = [f"/{VERSION_PY}", "__pycache__/", "*.pyc", "/*.egg-info/"]
    return "\n".join(["# compiled files of the base wheel (hard links) and generated files", *compiled, *generated]) + "\n"


def _reset_to_base(tree: Path, record: TreeRecord) -> None:
    if am_in_progress(tree):
        git.run(tree, "am", "--abort")
    record.complete = False
    record.applied = []
    record.write(tree)
    git.run(tree, "checkout", "-q", "-f", "-B", BRANCH, record.base_commit)
    git.run(tree, "clean", "-q", "-fd")  # untracked, not ignored: compiled files stay


def _apply(tree: Path, record: TreeRecord, patch: Patch) -> None:
    result = git.run(
        tree, "am", "--keep-non-patch", "--committer-date-is-author-date", "--whitespace=nowarn",
        str(patch.path.resolve()), check=False,
    )
    if result.returncode != 0:
        if am_in_progress(tree):
            git.run(tree, "am", "--abort")
        raise OverlayError(_apply_failure(tree, patch, result.stdout + result.stderr))
    record.applied.append((patch.path.name, patch.sha256()))
    record.write(tree)


def _apply_failure(tree: Path, patch: Patch, output: str) -> str:
    failed = re.findall(r"^error: patch failed: (\S+):(\d+)$", output, flags=re.M)
    where = "; ".join(f"{path} (hunk at line {line})" for path, line in failed)
    other = [line for line in output.splitlines() if line.startswith("error:") and "patch failed" not in line]
    head = git.out(tree, "log", "-1", "--format=%h %s")
    return (
        f"{patch.path.name} does not apply: {where or '; '.join(other) or output.strip()}\n"
        f"The tree is left at the last good commit ({head}), with no half-applied files. "
        f"Fix or regenerate {patch.path.name} (e.g. rebase it in the tree and export)."
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
        if record is None or not record.complete or am_in_progress(tree):
            raise OverlayError(f"{tree} is not a finished tree; run `python -m torch_overlay tree` first")
        dirty = changed_files(tree)
        if dirty:
            raise OverlayError(f"{tree} has uncommitted changes ({', '.join(dirty[:10])}); commit them first")
        project.patches_dir.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=project.build_dir) as tmp:
            git.run(
                tree, "format-patch", "--zero-commit", "--no-signature", "--no-numbered", "--abbrev=12",
                "--filename-max-length=64", "-o", tmp, f"{record.base_commit}..HEAD",
            )
            produced = sorted(Path(tmp).iterdir())
            old = {p.path.name for p in read_series(project.patches_dir)}
            for path in produced:
                os.replace(path, project.patches_dir / path.name)
        names = [p.name for p in produced]
        listing = series_file(project.patches_dir)
        listing.with_suffix(".tmp").write_text("".join(f"{n}\n" for n in names))
        os.replace(listing.with_suffix(".tmp"), listing)
        for stale in old - set(names):
            (project.patches_dir / stale).unlink(missing_ok=True)
        patches = read_series(project.patches_dir)
        record.applied = wanted(patches)
        record.head = git.out(tree, "rev-parse", "HEAD")
        record.write(tree)
        return [p.path for p in patches]
