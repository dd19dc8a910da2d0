"""The summary table of a results record: what `bench` prints, and what README.md and
benchmarks/README.md show between their bench-table markers (`python -m torch_overlay readme`)."""

from __future__ import annotations

from .parts import PARTS
from .results import BenchPart, BenchRecord
from .table import Row, row
from .targets import TREE_RSS, WHEEL_RSS

HEADER = ["| Measure | Result (median) | Target | Met |", "|---|---|---|---|"]


def render_table(results: BenchRecord) -> str:
    rows = [r for name, part in results.parts.items() for r in PARTS[name].rows(part.measures, part.targets)]
    rows += _peak_rss(results.parts)
    lines = HEADER + [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join([*lines, "", _provenance(results)])


def _peak_rss(parts: dict[str, BenchPart]) -> list[Row]:
    """The row spanning two parts: the memory of both builds."""
    if "tree" not in parts or "wheel" not in parts:
        return []
    tree, wheel = parts["tree"], parts["wheel"]
    return [row("Peak RSS: tree build / wheel build",
                f"{tree.measures['peak_rss_mb']:.0f} MB / {wheel.measures['peak_rss_mb']['wheel']:.0f} MB",
                tree.targets + wheel.targets, TREE_RSS, WHEEL_RSS)]


def _provenance(results: BenchRecord) -> str:
    """When and how each part was measured: parts are recorded separately, on a shared machine."""
    measured = ", ".join(
        f"{name} {part.measured_at[:10]} ({_runs(PARTS[name].repetitions(part.measures))})"
        for name, part in results.parts.items()
    )
    loads = [part.load_average_after[0] for part in results.parts.values()]
    return (f"Medians on {results.machine.usable_cores} usable cores, Python {results.machine.python} "
            f"(`python -m torch_overlay bench`): {measured}; 1-minute load average after each part "
            f"{min(loads):.1f}-{max(loads):.1f}.")


def _runs(count: int) -> str:
    return f"{count} run{'s' if count != 1 else ''}"
