"""`status`: what the base, the tree and each patch look like right now (read-only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import git
from ..core.project import Project
from ..pinning import base as base_mod
from ..pinning.pin import Pin
from .series import overlay_version, read_series
from .tree import TreeRecord, am_in_progress, changed_files, commits_since_base


def collect(project: Project, pin: Pin, *, verify_hash: bool = True) -> dict[str, Any]:
    wheel = pin.wheel_for_this_interpreter()
    wheel_path = base_mod.wheel_path(project.cache, pin, wheel)
    verified = None
    if verify_hash and wheel_path.exists():
        verified = base_mod.sha256_of(wheel_path) == wheel.sha256
    patches = read_series(project.patches_dir)
    tree = _tree_status(project.tree_dir, wheel.sha256, [(p.path.name, p.sha256()) for p in patches])
    applied = set(tree.get("applied", []))
    return {
        "base": {
            "version": pin.version,
            "revision": pin.revision,
            "wheel_tag": wheel.tag,
            "wheel": str(wheel_path),
            "wheel_present": wheel_path.exists(),
            "hash_verified": verified,
        },
        "overlay_version": overlay_version(pin.version, patches),
        "tree": {k: v for k, v in tree.items() if k != "applied"},
        "patches": [
            {
                "id": p.id,
                "file": p.path.name,
                "title": p.title,
                "applied": p.path.name in applied,
                "files": list(p.files),
                "fixes": list(p.upstream_issues),
            }
            for p in patches
        ],
    }


def _tree_status(tree: Path, base_sha: str, wanted: list[tuple[str, str]]) -> dict[str, Any]:
    record = TreeRecord.read(tree) if (tree / ".git").exists() else None
    if record is None:
        return {"path": str(tree), "present": False}
    applied = [name for name, _ in record.applied]
    dirty = changed_files(tree)
    unexported = len(commits_since_base(tree, record)) - len(record.applied)
    return {
        "path": str(tree),
        "present": True,
        "complete": record.complete and not am_in_progress(tree),
        "clean": not dirty,
        "dirty_files": dirty,
        "stale": record.base_sha256 != base_sha or record.applied != wanted or not record.complete,
        "unexported_commits": max(unexported, 0) if git.out(tree, "rev-parse", "HEAD") != record.head else 0,
        "applied": applied,
    }


def render(info: dict[str, Any]) -> str:
    b, t = info["base"], info["tree"]
    lines = [
        f"base     torch {b['version']} @ {b['revision']} ({b['wheel_tag']})",
        f"wheel    {b['wheel']} ({_hash_word(b)})",
        f"overlay  {info['overlay_version']}",
    ]
    if not t["present"]:
        lines.append(f"tree     {t['path']}: not built (python -m torch_overlay tree)")
    else:
        state = "clean" if t["clean"] else f"dirty: {', '.join(t['dirty_files'][:5])}"
        fresh = "stale against patches/" if t["stale"] else "up to date with patches/"
        lines.append(f"tree     {t['path']}: {state}, {fresh}")
        if t["unexported_commits"]:
            lines.append(f"         {t['unexported_commits']} commit(s) not exported (python -m torch_overlay export)")
    lines.append(f"patches  {len(info['patches'])}")
    for p in info["patches"]:
        mark = "applied" if p["applied"] else "not applied"
        lines.append(f"  {p['id']} [{mark}] {p['title']}")
        lines.extend(f"         {f}" for f in p["files"])
    return "\n".join(lines)


def _hash_word(b: dict[str, Any]) -> str:
    if not b["wheel_present"]:
        return "not downloaded"
    return {True: "sha256 verified", False: "SHA256 MISMATCH", None: "not checked"}[b["hash_verified"]]
