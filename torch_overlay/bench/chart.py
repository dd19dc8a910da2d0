"""A small bar chart of the paired timings (`benchmarks/bench.png`); matplotlib is imported for it alone."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import OverlayError
from .parts import PARTS
from .results import BenchRecord
from .table import Panel, seconds

CHART_FILE = "bench.png"
# Left to right: the compiled step, the wheel, the tree.
CHART_PARTS = ("recompile", "wheel", "tree")


def chart_panels(results: BenchRecord) -> list[Panel]:
    """Every ratio that was measured, as (title, [slow label, fast label], [slow s, fast s])."""
    parts = results.parts
    return [panel for name in CHART_PARTS if name in parts for panel in PARTS[name].panels(parts[name].measures)]


def write_chart(results: BenchRecord, path: Path) -> None:
    """One panel per ratio, each its own linear scale from zero, so bar heights compare honestly
    within a panel."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise OverlayError(
            f"the chart needs matplotlib ({e}); install it outside the project, e.g. "
            "`pip install --target /tmp/mpl matplotlib` and PYTHONPATH=/tmp/mpl, or pass --no-chart"
        ) from e
    panels = chart_panels(results)
    if not panels:
        return
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels), 3.2), squeeze=False)
    for ax, (title, labels, values) in zip(axes[0], panels, strict=True):
        bars = ax.bar(labels, values, color=["#b0b0b0", "#2b7bba"])
        ax.set_ylim(0, max(values) * 1.15)
        ax.set_title(f"{title}\n{values[0] / values[1]:.1f}x", fontsize=9)
        ax.set_ylabel("seconds (median)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.bar_label(bars, labels=[seconds(v).replace(" ", "") for v in values], fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
