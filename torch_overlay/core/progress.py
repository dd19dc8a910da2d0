"""Progress lines on stderr for the long steps (extract, copy, compile)."""

from __future__ import annotations

import sys
import time

from . import log


class Progress:
    """`label: NN% (done/total unit)`: redrawn in place on a terminal, every 25% in a log."""

    def __init__(self, label: str, total: int, unit: str = "MB") -> None:
        self.label = label
        self.total = max(total, 1)
        self.unit = unit
        self.done_amount = 0
        self._start = time.monotonic()
        self._last = 0.0
        self._logged_quarter = -1
        self._tty = sys.stderr.isatty()

    def advance(self, n: int) -> None:
        self.done_amount += n
        if self._tty:
            now = time.monotonic()
            if now - self._last >= 0.5:
                self._last = now
                log.info(f"\r{self._line()}", end="")
        elif (quarter := 4 * self.done_amount // self.total) > self._logged_quarter and quarter < 4:
            self._logged_quarter = quarter
            log.info(self._line())

    def done(self) -> None:
        self.done_amount = self.total
        prefix = "\r" if self._tty else ""
        log.info(f"{prefix}{self._line()} in {time.monotonic() - self._start:.1f}s")

    def _line(self) -> str:
        pct = 100 * self.done_amount // self.total
        if self.unit == "MB":
            return f"{self.label}: {pct:3d}% ({self.done_amount >> 20}/{self.total >> 20} MB)"
        return f"{self.label}: {pct:3d}% ({self.done_amount}/{self.total} {self.unit})"
