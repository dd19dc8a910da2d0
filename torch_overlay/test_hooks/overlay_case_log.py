"""A pytest plugin (loaded with `-p overlay_case_log`): each case's outcome, written the moment
the case ends.

pytest writes its JUnit XML when the session ends, so a process that dies inside a case (a
segfault in compiled code) leaves none. This log, one JSON object per line and appended as the
run goes, keeps what ran before the crash and names the case that was running: started, never
ended. It lives in `test_hooks/` (what test processes load from the tool), which is put on the
test's PYTHONPATH, so that nothing else of the tool becomes importable by the tests.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

PATH_ENV = "TORCH_OVERLAY_CASE_LOG"


def _tool_outcomes() -> ModuleType:
    """The tool's outcome vocabulary (`core/outcomes.py`, standard library only), loaded by path:
    the test process can import nothing else of the tool."""
    path = Path(__file__).resolve().parents[1] / "core" / "outcomes.py"
    spec = importlib.util.spec_from_file_location("_torch_overlay_outcomes", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CaseOutcome = _tool_outcomes().CaseOutcome
_outcomes: dict[str, Any] = {}


def _write(record: dict[str, Any]) -> None:
    path = os.environ.get(PATH_ENV)
    if path:
        with open(path, "a") as f:  # closed (so flushed) per line: a crash loses nothing written
            f.write(json.dumps(record) + "\n")


def pytest_collection_finish(session: Any) -> None:
    _write({"collected": [item.nodeid for item in session.items]})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _write({"started": nodeid})


def pytest_runtest_logreport(report: Any) -> None:
    # A case's phases (setup, call, teardown) each report: any failure fails the case, as in JUnit.
    before = _outcomes.get(report.nodeid, CaseOutcome.PASSED)
    if report.failed:
        _outcomes[report.nodeid] = CaseOutcome.FAILED
    elif report.skipped and before != CaseOutcome.FAILED:
        _outcomes[report.nodeid] = CaseOutcome.SKIPPED
    else:
        _outcomes[report.nodeid] = before


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _write({"ended": nodeid, "outcome": _outcomes.pop(nodeid, CaseOutcome.PASSED)})
