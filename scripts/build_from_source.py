#!/usr/bin/env python3
"""Build the overlay from source: an upstream checkout at the pinned revision + the patch series.

Usage (in the virtual environment that should get the build):

    python scripts/build_from_source.py /path/to/pytorch            # apply, build, test
    python scripts/build_from_source.py /path/to/pytorch --no-build # checks + git am only

Steps, each refusing with a clear message when its precondition does not hold:
  1. CHECKOUT is an upstream checkout (`torch/`, `setup.py`, `.git`), clean, and its HEAD is the
     revision pinned in overlay.toml `[base] revision` (the v2.9.1 tag). A checkout whose HEAD is
     that revision plus exactly the series (an earlier run whose build failed) is accepted as is.
  2. `git am` the series onto it. If a patch does not apply, `git am --abort` restores the
     checkout exactly as it was and the failing patch is named.
  3. The build environment: `[source-build]` of overlay.toml (CPU only: USE_CUDA=0, ...); any
     variable already set in the caller's environment wins.
  4. `pip install -r requirements.txt`, then `pip install -e . -v --no-build-isolation`.
  5. OpenReg against the built tree: `python -m torch_overlay.artifacts.openreg --torch-dir CHECKOUT/torch`.
  6. The patches' regression suites (their Test Plan): `python test/run_test.py -i ...` in CHECKOUT.
The submodules must be checked out (`git submodule update --init --recursive`) beforehand.

Expected time: hours. A CPU-only build compiles several thousand C++ translation units; this was
not measured on this machine. Basis of the estimate: upstream's CI (pytorch/pytorch PR #183931)
reports 294 build runner-minutes for six x86 CPU wheel builds (6 x ~49 min) on
`linux.12xlarge.memory.ephemeral` runners, i.e. close to an hour per build on many cores;
upstream's CONTRIBUTING.md ("Make no-op build fast": ninja, ccache) exists because full builds
are that slow. With 2 cores expect several hours (plan for 4-8 h; ccache makes
rebuilds fast). Disk: the build directory takes tens of GB.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Run as a file (`python scripts/build_from_source.py`, from any directory): the tool it drives
# is the package next to it, not an installed one.
sys.path.insert(0, str(ROOT))

from torch_overlay.core import git, log  # noqa: E402
from torch_overlay.core.errors import OverlayError  # noqa: E402
from torch_overlay.core.project import Project  # noqa: E402
from torch_overlay.fork.message import parse, suites  # noqa: E402
from torch_overlay.fork.series import Patch, read_series  # noqa: E402
from torch_overlay.pinning.pin import load_pin  # noqa: E402


def check_checkout(checkout: Path) -> None:
    missing = [name for name in ("torch", "setup.py", ".git") if not (checkout / name).exists()]
    if missing:
        raise OverlayError(f"{checkout} is not an upstream PyTorch checkout (missing: {', '.join(missing)})")
    dirty = git.user_run(checkout, "status", "--porcelain").stdout.splitlines()  # unstripped: columns matter
    if dirty:
        listed = ", ".join(line[3:] for line in dirty[:10])
        raise OverlayError(f"{checkout} has uncommitted changes ({listed}); commit or stash them first")


def series_applied(checkout: Path, revision: str, patches: list[Patch]) -> bool:
    """Whether HEAD is `revision` plus exactly the series (by commit titles), e.g. after a failed build."""
    if not patches:
        return False
    if git.user_run(checkout, "rev-parse", f"HEAD~{len(patches)}", check=False).stdout.strip() != revision:
        return False
    titles = git.user_out(checkout, "log", "--reverse", "--format=%s", f"{revision}..HEAD").splitlines()
    return titles == [p.title for p in patches]


def check_revision(checkout: Path, revision: str, patches: list[Patch]) -> bool:
    """True when the series still has to be applied; refuses any other HEAD than the pinned one."""
    head = git.user_out(checkout, "rev-parse", "HEAD")
    if head == revision:
        return True
    if series_applied(checkout, revision, patches):
        log.info(f"{checkout}: the series is already applied on {revision[:12]}")
        return False
    raise OverlayError(
        f"{checkout} is at {head[:12]}, but the series is pinned to {revision} (overlay.toml [base] revision); "
        f"run `git checkout {revision}` (and `git submodule update --init --recursive`) first"
    )


def apply_series(checkout: Path, patches: list[Patch]) -> None:
    if not patches:
        return
    # Committed as the tool commits the series in build/tree (its fixed identity), so the same
    # patches give the same commits here and a CI runner needs no git identity of its own.
    result = git.run(checkout, "am", "--keep-non-patch", "--whitespace=nowarn",
                     *[str(p.path.resolve()) for p in patches], check=False)
    if result.returncode == 0:
        log.info(f"applied {len(patches)} patch(es) with git am")
        return
    output = (result.stdout + result.stderr).strip()
    git.run(checkout, "am", "--abort", check=False)  # back to the pinned revision, files untouched
    failed = re.search(r"^Patch failed at \d+ (.*)$", output, flags=re.M)
    which = next((p.path.name for p in patches if failed and p.title == failed.group(1).strip()), None)
    raise OverlayError(
        f"{which or 'a patch of the series'} does not apply to {checkout}; `git am --abort` restored it.\n{output}"
    )


def build_env(source_build_env: dict[str, str]) -> dict[str, str]:
    return {**source_build_env, **os.environ}  # the caller's environment wins


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    log.info(f"+ (cd {cwd} && {' '.join(cmd)})")
    if subprocess.run(cmd, cwd=cwd, env=env).returncode != 0:
        raise OverlayError(f"failed: {' '.join(cmd)}")


def build_and_test(checkout: Path, patches: list[Patch], env: dict[str, str], build_dir: Path) -> None:
    python = sys.executable
    run([python, "-m", "pip", "install", "-r", "requirements.txt"], checkout, env)
    run([python, "-m", "pip", "install", "-e", ".", "-v", "--no-build-isolation"], checkout, env)
    run([python, "-m", "torch_overlay.artifacts.openreg", "--torch-dir", str(checkout / "torch"),
         "--build-dir", str(build_dir / "openreg")], ROOT, dict(env, PYTHONPATH=str(ROOT)))
    names = list(dict.fromkeys(s for p in patches for s in suites(parse(p))))  # patches share suites: run each once
    if names:
        run([python, "test/run_test.py", "-i", *names], checkout, env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="upstream PyTorch checkout at the pinned revision")
    parser.add_argument("--no-build", action="store_true", help="stop after the checks and git am")
    parser.add_argument("--build-dir", type=Path, default=Project.discover(ROOT).build_dir / "source-build",
                        help="where OpenReg is built (default: build/source-build)")
    parser.add_argument("--project", type=Path, default=ROOT, help=argparse.SUPPRESS)  # tests: another overlay.toml
    args = parser.parse_args(argv)
    project = Project.discover(args.project)
    checkout = args.checkout.resolve()
    try:
        pin = load_pin(project.pin_file, project.base)
        patches = read_series(project.patches_dir)
        check_checkout(checkout)
        if check_revision(checkout, pin.revision, patches):
            apply_series(checkout, patches)
        if args.no_build:
            print(f"{checkout}: checks passed, series applied; --no-build: stopping before the build")
            return 0
        build_and_test(checkout, patches, build_env(pin.source_build_env), args.build_dir.resolve())
    except OverlayError as e:
        log.error(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
