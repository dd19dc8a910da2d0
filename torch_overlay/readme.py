"""The README's patch table, rendered from the series and the measured drift results.

Nothing in the table is typed by hand: ids, titles, issues, PRs and files come from the patch
files, and "first release with the fix" from `benchmarks/drift.json` (`verify --against V
--record`). `python -m torch_overlay readme` rewrites the table; `--check` fails when it is
out of date.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .drift import ALREADY_UPSTREAM, PARTLY_UPSTREAM, RECORD_FILE
from .errors import OverlayError
from .series import Patch
from .upstream import version_key

START, END = "<!-- patch-table:start -->", "<!-- patch-table:end -->"
GATE_START, GATE_END = "<!-- regressions-table:start -->", "<!-- regressions-table:end -->"


def upstream_prs(patch: Patch) -> tuple[int, ...]:
    """PR numbers cited in the message's `Upstream:` paragraph."""
    match = re.search(r"^Upstream:(.*?)(?:\n\n|\n---\n)", patch.text, flags=re.M | re.S)
    return tuple(int(n) for n in re.findall(r"pytorch/pytorch#(\d+)", match.group(1))) if match else ()


def first_release_with_fix(drift: dict[str, Any], patch: Patch) -> str:
    """The lowest measured release carrying the fix, whole or as upstream's part of it."""
    checked = sorted(drift, key=version_key)
    for version in checked:
        entry = {p["file"]: p for p in drift[version]["patches"]}.get(patch.path.name, {})
        if entry.get("verdict") == ALREADY_UPSTREAM:
            return version
        if entry.get("verdict") == PARTLY_UPSTREAM:
            beyond = len(entry["beyond_upstream"])
            return f"{version}: upstream fix present; {beyond} case{'s' if beyond != 1 else ''} beyond upstream"
    measured = [v for v in checked if patch.path.name in {p["file"] for p in drift[v]["patches"]}]
    return f"none of {', '.join(measured)}" if measured else "not measured"


def _links(numbers: tuple[int, ...], kind: str) -> str:
    return ", ".join(f"[#{n}](https://github.com/pytorch/pytorch/{kind}/{n})" for n in numbers) or "-"


def render_table(patches: list[Patch], drift: dict[str, Any]) -> str:
    lines = [
        "| Id | Title | Upstream issue | Upstream PR | Files | First release with the fix |",
        "|---|---|---|---|---|---|",
    ]
    for p in patches:
        files = "<br>".join(f"`{f}`" for f in p.files)
        title = p.title.replace("|", "\\|")
        lines.append(
            f"| {p.id} | {title} | {_links(p.upstream_issues, 'issues')} | {_links(upstream_prs(p), 'pull')} "
            f"| {files} | {first_release_with_fix(drift, p)} |"
        )
    return "\n".join(lines)


def load_drift(root: Path) -> dict[str, Any]:
    path = root / RECORD_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def with_table(readme: str, table: str, start: str = START, end: str = END) -> str:
    """`readme` with the block between the `start` and `end` markers replaced by `table`."""
    if start not in readme or end not in readme:
        raise OverlayError(f"README.md lacks the {start} ... {end} markers")
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{table}\n{end}{tail}"


def render_gate(record: dict[str, Any] | None, corpus: Sequence[str] = ()) -> str:
    """The differential gate's latest recorded run (`verify --regressions --record`), or why none;
    `corpus` names every part, so that parts the record lacks are named too."""
    if record is None:
        return "Not recorded yet: `python -m torch_overlay verify --regressions --tier full --record`."
    from .regressions import render

    when = record["date"][:10]
    text = (f"{record['tier'].capitalize()} tier, series `{record['series']}`, Python {record['python']}, "
            f"{when}: {'no regression' if record['ok'] else 'REGRESSIONS FOUND'}.\n\n{render(record)}")
    missing = [name for name in corpus if name not in {p["part"] for p in record["parts"]}]
    if missing:
        text += ("\n\nNot recorded in this tier yet: " + ", ".join(f"`{name}`" for name in missing)
                 + f" (`python -m torch_overlay verify --regressions --tier {record['tier']} --record --part NAME`).")
    return text
