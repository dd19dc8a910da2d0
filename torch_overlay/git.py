"""Running git reproducibly: no user or system config, fixed identities for generated commits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .errors import ToolError
from .lock import inherited_fds

# Commits the tool makes itself (the base commit, `git am` committer) must hash the same on
# every machine, so identity, dates and config come from here, never from the user's setup.
BOT_NAME = "torch-overlay"
BOT_EMAIL = "torch-overlay@users.noreply.github.com"
MISSING_GIT = "git was not found on PATH; install git (e.g. `apt-get install git`) and run the command again"


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


def run(repo: Path, *args: str, check: bool = True, input: str | None = None, **extra_env: str) -> subprocess.CompletedProcess[str]:
    try:
        result = subprocess.run(
            ["git", "-c", "core.autocrlf=false", "-c", "diff.algorithm=myers", *args],
            cwd=repo, env=env(**extra_env), input=input, text=True, capture_output=True, pass_fds=inherited_fds(),
        )
    except FileNotFoundError as e:
        if e.filename != "git":
            raise
        raise ToolError(MISSING_GIT) from None
    if check and result.returncode != 0:
        detail = " / ".join(line for line in result.stderr.strip().splitlines() if line)
        raise ToolError(f"git {' '.join(args)} failed in {repo}: {detail}")
    return result


def out(repo: Path, *args: str) -> str:
    return run(repo, *args).stdout.strip()
