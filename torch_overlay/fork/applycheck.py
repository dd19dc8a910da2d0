"""Does a patch apply to a source tree, or is it already there (does it apply in reverse)?

Both checks are `git apply --check`: nothing is written. The reverse check leaves out the
patch's regression tests: they are the overlay's own new files, so upstream never has them
byte for byte even when it carries the fix itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core import git
from .series import TEST_DIR, Patch


@dataclass(frozen=True)
class ApplyCheck:
    applies: bool
    reverse_applies: bool
    output: str  # git's messages for a patch that does not apply

    def describe(self) -> str:
        if self.reverse_applies:
            return "already applied (reverse-applies)"
        return "applies cleanly" if self.applies else "does not apply"


def ensure_repo(root: Path) -> None:
    """`git apply` run below another repository's root ignores paths outside it: give `root` its own."""
    if not (root / ".git").exists():
        git.run(root, "init", "-q")


def check(root: Path, patch: Patch) -> ApplyCheck:
    """Check `patch` against the working tree files of the repository at `root`."""
    ensure_repo(root)
    path = str(patch.path.resolve())
    forward = git.run(root, "apply", "--check", path, check=False)
    source_files = [f for f in patch.files if not f.startswith(TEST_DIR + "/")]
    reverse_ok = False
    if source_files:  # a tests-only patch has nothing that could already be upstream
        reverse = git.run(root, "apply", "--check", "-R", f"--exclude={TEST_DIR}/*", path, check=False)
        reverse_ok = reverse.returncode == 0
    return ApplyCheck(
        applies=forward.returncode == 0,
        reverse_applies=reverse_ok,
        output=(forward.stdout + forward.stderr).strip(),
    )
