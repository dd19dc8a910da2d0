"""The results file (`benchmarks/results.json`): its schema and how a run merges into it."""

from __future__ import annotations

import json
from pathlib import Path

from ..core import atomic
from .options import PART_NAMES
from .stats import Json

SCHEMA = 1
RESULTS_FILE = "results.json"


def all_met(parts: Json) -> bool:
    return all(t["ok"] for p in parts.values() for t in p["targets"])


def merge(previous: Json | None, new: Json) -> Json:
    """Parts measured now replace the old ones; parts not run this time are kept (the slow suite
    is measured separately). Each part carries its own date and load average."""
    if previous is None or previous.get("schema") != SCHEMA:
        return new
    parts = dict(previous.get("parts", {}), **new["parts"])
    return dict(new, parts={name: parts[name] for name in PART_NAMES if name in parts}, targets_ok=all_met(parts))


def load_results(directory: Path) -> Json | None:
    path = directory / RESULTS_FILE
    return json.loads(path.read_text()) if path.exists() else None


def write_results(directory: Path, results: Json) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(directory / RESULTS_FILE, json.dumps(results, indent=1) + "\n")
