"""`python -m torch_overlay bench`: the overlay's speed-ups, measured side by side in one run.

The machines this runs on are small and shared, so absolute times drift by tens of percent from
one minute to the next. Every comparison is therefore measured as a pair inside the same
repetition (cold then warm, raw copy then naive, stock then overlay) and reported as the ratio
of the medians of N repetitions. One module per part:

  tree       time to a patched, importable torch from the cached base wheel
  wheel      `build_wheel` (raw member copy) vs a naive zipfile re-deflate of the same content
  recompile  a compiled optimizer-style step, 20 learning rates, on stock 2.9.1 and the overlay
  training   a compiled training loop on stock and the overlay: compiles, time, parameters vs eager
  compiletime  real models (torchvision, transformers): first compiled step, steady state, compiles
  floats     the float-parameter catalog on stock and the overlay: stale results and compiles
  kernels    inductor's kernels and bytes accessed for safe in-place programs and optimizer steps
  openreg    OpenReg cold build (fresh build dir) and unchanged rebuild
  suite      `python test/run_test.py` wall time and slowest files (slow: only with --tier full/--only)

and beside them: stats (timing, memory, medians), worker (builds in their own processes, for
their peak RSS), workspace (temporary project roots), runner and programs/ (standalone programs
run under a chosen torch), targets (each claim, once), table/report/chart/results (what is
printed, rendered into the READMEs, drawn and recorded). Standard library only; matplotlib is
imported for the chart alone.
"""

from .chart import CHART_FILE
from .command import measure, run_bench
from .options import DEFAULT_PARTS, PART_NAMES, BenchOptions, select_parts
from .report import render_table
from .results import RESULTS_FILE, BenchRecord, load_results

__all__ = [
    "CHART_FILE", "DEFAULT_PARTS", "PART_NAMES", "RESULTS_FILE", "BenchOptions", "BenchRecord", "load_results",
    "measure", "render_table", "run_bench", "select_parts",
]
