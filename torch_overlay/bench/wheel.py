"""Part `wheel`: `build_wheel` (raw member copy) vs a naive zipfile re-deflate of the same
content, each in a worker process; the sha256 of every build (they must all be equal)."""

from __future__ import annotations

import shutil
import statistics
from pathlib import Path

from ..pinning.base import sha256_of
from .options import BenchOptions
from .rezip import same_members
from .stats import Json, log, ratio, summarize
from .table import Panel, Row, row, seconds
from .targets import WHEEL_DETERMINISTIC, WHEEL_RSS, WHEEL_SAME_CONTENT, WHEEL_SPEEDUP, Measured, TargetCheck
from .worker import run_worker
from .workspace import Workspace


def measure(ws: Workspace, options: BenchOptions) -> Measured:
    repeat = options.repeat
    project = ws.warm_project()
    builds = max(repeat, 2)  # determinism needs at least two builds
    fast: list[float] = []
    naive: list[float] = []
    shas: list[str] = []
    naive_shas: list[str] = []
    rss: dict[str, float] = {"wheel": 0.0, "naive": 0.0}
    same_content = True
    for i in range(builds):
        log(f"wheel {i + 1}/{builds}: build_wheel, then naive re-deflate")
        out = ws.root / f"wheel-{i}"
        built = run_worker("wheel", root=str(project.root), cache=str(project.cache.root), out=str(out))
        wheel = Path(built["path"])
        fast.append(built["seconds"])
        rss["wheel"] = max(rss["wheel"], built["peak_rss_mb"])
        shas.append(sha256_of(wheel))
        if i < repeat:  # the naive build is the slow one: no extra runs beyond --repeat
            rezipped = out / "naive.whl"
            result = run_worker("naive", src=str(wheel), dst=str(rezipped))
            naive.append(result["seconds"])
            rss["naive"] = max(rss["naive"], result["peak_rss_mb"])
            naive_shas.append(sha256_of(rezipped))
            same_content = same_content and same_members(wheel, rezipped)
        shutil.rmtree(out)  # ~1 GB per wheel: never keep more than one pair on disk
    part: Json = {
        "wheel_name": wheel.name, "build_wheel": summarize(fast), "naive": summarize(naive),
        "naive_over_build_wheel": ratio(statistics.median(naive), statistics.median(fast)),
        "sha256": shas, "naive_sha256": naive_shas, "deterministic": len(set(shas)) == 1,
        "same_content": same_content, "peak_rss_mb": rss,
    }
    return part, [
        WHEEL_SPEEDUP.check(part["naive_over_build_wheel"]),
        WHEEL_DETERMINISTIC.check(part["deterministic"]),
        WHEEL_SAME_CONTENT.check(same_content),
        WHEEL_RSS.check(rss["wheel"]),
    ]


def rows(part: Json, targets: list[TargetCheck]) -> list[Row]:
    return [
        row("Custom wheel (`build_wheel`, raw member copy) vs naive re-deflate of the same content",
            f"{seconds(part['build_wheel']['median_s'])} vs {seconds(part['naive']['median_s'])} "
            f"(**{part['naive_over_build_wheel']}x**)", targets, WHEEL_SPEEDUP),
        row("Custom wheel sha256 across builds",
            f"identical over {len(part['sha256'])} builds" if part["deterministic"] else "differs",
            targets, WHEEL_DETERMINISTIC),
    ]


def repetitions(part: Json) -> int:
    return len(part["naive"]["runs_s"])


def panels(part: Json) -> list[Panel]:
    return [("custom wheel", ["naive", "raw copy"], [part["naive"]["median_s"], part["build_wheel"]["median_s"]])]
