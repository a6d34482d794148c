"""What a running emulation shows (:class:`StatusLine`): phases done / total, apps running, elapsed, ETA.

On a terminal the line is rewritten in place; otherwise a line is printed
every ``every`` seconds (logs stay short).  ETA extrapolates the share of
contention-free work done so far (``work_done / work_total``).

The sink interface the emulators call: ``note(message)``, ``update(progress, elapsed)``,
``done()``, and ``show(snapshot)`` when ``live`` is true (a live view, e.g.
:class:`iolab.cli.live.LiveView`): the runtime then asks its actors for a plain
snapshot dict (``ArbiterState.snapshot``, ``BatchEmulation.snapshot``) at each poll.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _hms(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    m, s = divmod(seconds, 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_line(p: dict, elapsed: float) -> str:
    frac = p["work_done"] / p["work_total"] if p.get("work_total") else 0.0
    eta = elapsed * (1 - frac) / frac if frac > 0 else float("nan")
    eta_s = _hms(eta) if eta == eta else "?"
    return (f"phases {p['phases_done']}/{p['phases_total']}  apps running {p['running']}, "
            f"ended {p['ended']}/{p['apps']}  elapsed {_hms(elapsed)}  ETA {eta_s}")


class StatusLine:
    """The status line of a running emulation on stderr: notes, and the progress of its phases.

    (Not :class:`iolab.campaign.progress.Progress`, which counts the finished tasks of a study or a campaign.)"""

    live = False  # True: the runtime passes snapshots to show() at each poll

    def show(self, snapshot: dict) -> None:
        """A live view draws ``snapshot``; the status line has nothing to add."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, every: float = 10.0,
                 prefix: str = "emulate"):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every
        self.prefix = prefix
        self._last = -float("inf")

    def note(self, message: str) -> None:
        if self.enabled:
            if self.tty:
                self.stream.write("\r\033[K")
            self.stream.write(f"[{self.prefix}] {message}\n")
            self.stream.flush()

    def update(self, p: dict, elapsed: float, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        line = f"[{self.prefix}] {progress_line(p, elapsed)}"
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self.stream.flush()
        elif force or now - self._last >= self.every:
            self.stream.write(line + "\n")
            self.stream.flush()
            self._last = now

    def done(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
