"""Running git: in the trees the tool makes (reproducibly) and in the user's own checkouts.

The tool's trees (`build/tree`) get no user or system config and fixed identities, so the
commits the tool makes hash the same on every machine: `run`, `out`. A user's checkout (an
upstream clone that `stage` or `scripts/build_from_source.py` works on) gets the user's git as
it is, so that the branch and commits made there are theirs: `user_run`, `user_out`. A failure
in the tool's tree means the tool broke (ToolError); in a user's checkout it is about the
input (OverlayError). Either way the message is one line naming the command and the repository.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .errors import OverlayError, ToolError
from .lock import inherited_fds

# Commits the tool makes itself (the base commit, `git am` committer) must hash the same on
# every machine, so identity, dates and config come from here, never from the user's setup.
BOT_NAME = "torch-overlay"
BOT_EMAIL = "torch-overlay@users.noreply.github.com"
MISSING_GIT = "git was not found on PATH; install git (e.g. `apt-get install git`) and run the command again"
# Settings a user's config could otherwise change in what the tool's commits and diffs hold.
_REPRODUCIBLE = ("-c", "core.autocrlf=false", "-c", "diff.algorithm=myers")


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_COMMITTER_NAME=BOT_NAME,
        GIT_COMMITTER_EMAIL=BOT_EMAIL,
        GIT_AUTHOR_NAME=BOT_NAME,
        GIT_AUTHOR_EMAIL=BOT_EMAIL,
        LC_ALL="C",
    )
    base.update(extra)
    return base


def run(repo: Path, *args: str, check: bool = True, input: str | None = None,
        **extra_env: str) -> subprocess.CompletedProcess[str]:
    """git in a tree the tool made; `extra_env` adds to the reproducible environment (dates)."""
    return _git(repo, args, _REPRODUCIBLE, env(**extra_env), input, ToolError if check else None)


def out(repo: Path, *args: str) -> str:
    return run(repo, *args).stdout.strip()


def user_run(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git in the user's own checkout, with the user's identity and configuration."""
    return _git(repo, args, (), None, None, OverlayError if check else None)


def user_out(repo: Path, *args: str) -> str:
    return user_run(repo, *args).stdout.strip()


def _git(repo: Path, args: Sequence[str], config: Sequence[str], environment: dict[str, str] | None,
         input: str | None, failure: type[OverlayError] | None) -> subprocess.CompletedProcess[str]:
    """Run `git CONFIG ARGS` in `repo`; with `failure`, a non-zero exit raises it."""
    try:
        result = subprocess.run(["git", *config, *args], cwd=repo, env=environment, input=input, text=True,
                                capture_output=True, pass_fds=inherited_fds())
    except FileNotFoundError as e:
        if e.filename != "git":
            raise
        raise ToolError(MISSING_GIT) from None
    if failure is not None and result.returncode != 0:
        detail = " / ".join(line for line in result.stderr.strip().splitlines() if line)
        raise failure(f"git {' '.join(args)} failed in {repo}: {detail}")
    return result
