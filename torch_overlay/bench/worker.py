"""The worker protocol: each measured build runs in its own process.

Its peak RSS is then its own (ru_maxrss only ever grows), and a build that balloons cannot hide
inside the bench's own footprint. The parent runs `python -m torch_overlay.bench TASK ARGS`
with ARGS a JSON object of strings; the worker prints one JSON object as its last stdout line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.errors import OverlayError
from ..core.project import CHECKOUT, Cache, Project
from ..fork.series import read_series
from ..pinning.base import Base, load
from ..pinning.pin import Pin, load_pin
from .rezip import naive_rezip
from .stats import Json, peak_rss_mb, timed


def run_worker(task: str, **kwargs: str) -> Json:
    proc = subprocess.run(
        [sys.executable, "-m", "torch_overlay.bench", task, json.dumps(kwargs)],
        env=worker_env(), capture_output=True, text=True,
    )
    if proc.returncode != 0:
        raise OverlayError(f"bench worker {task} failed (exit {proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def worker_env() -> dict[str, str]:
    """This environment, with this checkout's torch_overlay importable first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _project_and_base(root: str, cache: str) -> tuple[Project, Pin, Base]:
    project = Project.at(Path(root), Cache(Path(cache)))
    pin = load_pin(project.pin_file, project.base)
    return project, pin, load(project.cache, pin, pin.wheel_for_this_interpreter())


# Each task imports only what it builds with: the worker's peak RSS is then the build's.

def _build_tree(args: Json) -> Json:
    from ..fork.tree import materialise

    def build() -> None:  # loading the base is part of it: a cold cache extracts here
        project, _, base = _project_and_base(args["root"], args["cache"])
        materialise(project, base)

    seconds, _ = timed(build)
    return {"seconds": seconds, "peak_rss_mb": peak_rss_mb()}


def _build_wheel(args: Json) -> Json:
    from ..artifacts.wheel import build_wheel

    project, pin, base = _project_and_base(args["root"], args["cache"])
    patches = read_series(project.patches_dir)
    seconds, path = timed(lambda: build_wheel(pin, base, project.cache, project.tree_dir, patches,
                                              Path(args["out"])))
    return {"seconds": seconds, "path": str(path), "peak_rss_mb": peak_rss_mb()}


def _naive_rezip(args: Json) -> Json:
    seconds, _ = timed(lambda: naive_rezip(Path(args["src"]), Path(args["dst"])))
    return {"seconds": seconds, "peak_rss_mb": peak_rss_mb()}


TASKS: dict[str, Callable[[Json], Json]] = {"tree": _build_tree, "wheel": _build_wheel, "naive": _naive_rezip}


def worker_main(argv: Sequence[str]) -> int:
    task, args = argv[0], json.loads(argv[1])
    print(json.dumps(TASKS[task](args)))
    return 0
