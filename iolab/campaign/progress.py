"""Progress lines of a campaign (or a study run as one) on stderr."""

from __future__ import annotations

import sys
import time

from iolab.units import format_duration


class Progress:
    """``[ 12/120]  10% elapsed 0:03, eta 0:28 (1 failed)`` lines on stderr (``label`` names what is
    counted, for the live view)."""

    def __init__(self, total: int, label: str = "", stream=None, every: float = 1.0):
        self.total, self.label, self.stream = total, label, stream or sys.stderr
        self.done = 0
        self.t0 = time.monotonic()
        self.every = every
        self._last = -1e9

    def step(self, note: str = "") -> None:
        self.done += 1
        now = time.monotonic()
        if now - self._last < self.every and self.done < self.total:
            return
        self._last = now
        el = now - self.t0
        eta = el / self.done * (self.total - self.done) if self.done else float("nan")
        pct = 100 * self.done / self.total if self.total else 100
        w = len(str(self.total))
        print(f"[{self.done:>{w}}/{self.total}] {pct:3.0f}% elapsed {format_duration(el)}, eta "
              f"{format_duration(eta) if eta == eta else '?'}" + (f" {note}" if note else ""),
              file=self.stream, flush=True)
