"""Reading and writing the committed JSON records (`Project.records_dir`): the gate's, the drift's
and the bench's.

Each record is a set of dataclasses with `to_json()` and a `from_json()` classmethod; here are
the checks their `from_json` is built from, and what they share. A record is read by `load` or
`parse`, which turn anything wrong in it into one line naming the file and the fix: a newer
schema than this tool reads (update the tool), or a file that is not such a record (restore or
re-record it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from . import atomic
from .errors import OverlayError

T = TypeVar("T")
E = TypeVar("E", bound=Enum)


class RecordError(OverlayError):
    """What is wrong inside a record; `parse` adds the file, the kind of record and the fix."""


class NewerSchema(RecordError):
    """A record written by a newer tool: this one cannot tell what its fields mean."""


def schema(data: Any, newest: int, default: int | None = None) -> int:
    """The version of the record `data`, which must be a JSON object; one this tool cannot read is
    an error. `default`: the version of records written before they carried one."""
    if not isinstance(data, dict):
        raise RecordError(f"holds {type(data).__name__}, not an object")
    version = data.get("schema", default)
    if version is None:
        raise RecordError("missing 'schema'")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordError(f"schema {version!r} is not a version")
    if version > newest:
        raise NewerSchema(f"schema {version} is newer than this tool reads ({newest}): update torch_overlay")
    return version


def field(data: Any, key: str, kind: type[T]) -> T:
    """`data[key]`, which must be a `kind` (a field of a JSON object)."""
    if not isinstance(data, dict):
        raise RecordError(f"{key!r} is not in an object")
    if key not in data:
        raise RecordError(f"missing {key!r}")
    value = data[key]
    # A bool is an int to Python, never a count or a number of a record.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RecordError(f"{key!r} is {value!r}, not {kind.__name__}")
    return value


def optional(data: Any, key: str, kind: type[T]) -> T | None:
    """`data[key]` if it is there and not null, else None."""
    return None if not isinstance(data, dict) or data.get(key) is None else field(data, key, kind)


def number(data: Any, key: str) -> float:
    """`data[key]`, a number: JSON writes a measured 2.0 as 2.0, and a whole count as 2."""
    if isinstance(data, dict) and isinstance(data.get(key), int) and not isinstance(data[key], bool):
        return data[key]
    return field(data, key, float)


def member(kind: type[E], value: Any) -> E:
    """The member of the string enum `kind` that `value` names (an outcome or a verdict)."""
    try:
        return kind(value)
    except ValueError:
        raise RecordError(f"{value!r} is not a {kind.__name__}: one of "
                          f"{', '.join(str(m.value) for m in kind)}") from None


@dataclass(frozen=True)
class BaseRef:
    """The pinned base a record was measured on."""

    version: str
    revision: str

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "revision": self.revision}

    @classmethod
    def from_json(cls, data: Any) -> BaseRef:
        return cls(field(data, "version", str), field(data, "revision", str))


def parse(path: Path, text: str, what: str, fix: str, from_json: Callable[[Any], T]) -> T:
    """The record `path` holds (its `text`), read by `from_json`. Anything wrong is one line:
    `PATH: not a WHAT: missing 'parts' (FIX)`, or the newer schema and `update torch_overlay`."""
    try:
        return from_json(json.loads(text))
    except NewerSchema as e:
        raise OverlayError(f"{_shown(path)}: {e}") from None
    except (RecordError, ValueError) as e:  # ValueError: not JSON at all
        raise OverlayError(f"{_shown(path)}: not a {what}: {e} ({fix})") from None


def load(path: Path, what: str, fix: str, from_json: Callable[[Any], T]) -> T | None:
    """The record in `path` (see `parse`); None when there is none yet."""
    return parse(path, path.read_text(), what, fix, from_json) if path.exists() else None


def write(path: Path, data: Any) -> None:
    """Replace `path` with `data` (a record's `to_json()`), as every record is committed: one space
    of indentation (diffs stay small), a final newline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(data, indent=1) + "\n")


def _shown(path: Path) -> Path:
    """`path` as the user would type it: relative to the working directory when inside it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
