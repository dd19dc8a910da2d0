"""Measuring: wall time, peak memory, medians and ratios, and the machine the numbers came from."""

from __future__ import annotations

import datetime
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..core.log import info
from ..core.records import RecordError, field, number, optional

Json = dict[str, Any]
T = TypeVar("T")


def summarize(runs: Sequence[float]) -> Json:
    """Median and the individual runs: the spread shows how noisy the machine was. Kept to the
    microsecond: a steady-state step takes a few milliseconds, and a ratio of milliseconds rounded
    to 0.001 s is a ratio of rounding (4 ms against 5 ms reads as 1.25x)."""
    return {"median_s": round(statistics.median(runs), 6), "runs_s": [round(r, 6) for r in runs]}


def ratio(slow: float, fast: float) -> float:
    return round(slow / fast, 1) if fast > 0 else float("inf")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def peak_rss_mb() -> float:
    """Peak RSS of this process or of its largest waited-for child (git), whichever is larger.

    The process's own peak comes from /proc's VmHWM, which starts afresh at exec: ru_maxrss of
    RUSAGE_SELF would also count the parent's memory at the time of the (v)fork, and a test
    process that has imported torch would then report gigabytes for a tiny build.
    """
    self_kb = _proc_field_kb("/proc/self/status", "VmHWM:") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(max(self_kb, children_kb) / 1024, 1)  # Linux reports kilobytes


def _proc_field_kb(path: str, field: str) -> int | None:
    """A `Field:  N kB` line of a /proc file, or None where /proc does not exist."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Machine:
    """The machine a run measured on, and how loaded it was."""

    cores: int | None
    usable_cores: int | None
    memory_gb: float | None
    python: str
    platform: str
    load_average: list[float]  # over 1, 5 and 15 minutes

    def to_json(self) -> Json:
        return {"cores": self.cores, "usable_cores": self.usable_cores, "memory_gb": self.memory_gb,
                "python": self.python, "platform": self.platform, "load_average": self.load_average}

    @classmethod
    def from_json(cls, data: Any) -> Machine:
        memory = number(data, "memory_gb") if optional(data, "memory_gb", object) is not None else None
        return cls(optional(data, "cores", int), optional(data, "usable_cores", int), memory,
                   field(data, "python", str), field(data, "platform", str), load_average(data, "load_average"))


def load_average(data: Any, key: str) -> list[float]:
    """A recorded load average: three numbers."""
    values = field(data, key, list)
    if len(values) != 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise RecordError(f"{key!r} is {values!r}, not three numbers")
    return values


def machine_info() -> Machine:
    memory_kb = _proc_field_kb("/proc/meminfo", "MemTotal:")
    return Machine(
        cores=os.cpu_count(),
        usable_cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        memory_gb=round(memory_kb / 1024 / 1024, 1) if memory_kb else None,
        python=platform.python_version(),
        platform=platform.platform(),
        load_average=[round(x, 2) for x in os.getloadavg()],
    )


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def log(message: str) -> None:
    """A progress line on stderr: the bench prints its table (or JSON) alone on stdout."""
    info(f"bench: {message}")
