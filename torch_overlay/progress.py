"""Progress lines on stderr for the long steps (extract, copy, compile)."""

from __future__ import annotations

import sys
import time


class Progress:
    """Prints `label: NN% (x/y MB)` at most every half second, then a final line."""

    def __init__(self, label: str, total: int) -> None:
        self.label = label
        self.total = max(total, 1)
        self.done_bytes = 0
        self._start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int) -> None:
        self.done_bytes += n
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            self._print("\r")

    def done(self) -> None:
        self.done_bytes = self.total
        self._print("\r")
        print(f" {time.monotonic() - self._start:.1f}s", file=sys.stderr, flush=True)

    def _print(self, prefix: str) -> None:
        pct = 100 * self.done_bytes // self.total
        mb = self.done_bytes >> 20
        print(f"{prefix}{self.label}: {pct:3d}% ({mb}/{self.total >> 20} MB)", end="", file=sys.stderr, flush=True)
