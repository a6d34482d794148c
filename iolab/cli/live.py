"""``--live``: a terminal view of a running emulation or sweep (rich), drawn from plain snapshots.

The runtimes produce the data (``ArbiterState.snapshot`` for an I/O emulation,
``BatchEmulation.snapshot`` for a batch one, the sweep loop's run counts); this
module only draws it.  :class:`LiveView` has the sink interface the emulators
call (``note``/``update``/``done`` of :class:`~iolab.emulator.progress.StatusLine`,
plus ``show(snapshot)``); :class:`SweepView` the one of a sweep
(``step`` of :class:`~iolab.campaign.progress.Progress`, plus ``show``).

On a terminal the view is redrawn in place below the notes (no alternate
screen; the cursor is hidden while it runs and shown again by ``done``, also
after Ctrl-C).  When the stream is not a terminal (Slurm logs, pipes) both
fall back to the plain periodic lines of their parent class.
"""

from __future__ import annotations

import math
import sys
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from iolab.emulator.progress import StatusLine, _hms
from iolab.campaign.progress import Progress

SUSPENDED_NONE = "-"
QUIET_STATES = ("future", "done", "failed", "killed")  # counted in the head line, no row each
MAX_ROWS = 40  # job rows drawn at most (a terminal's height)


def _size(nbytes: float) -> str:
    if nbytes is None or nbytes != nbytes:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(nbytes) < 1000 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} TB"


def _suspended(snap: dict) -> Text:
    sus = snap.get("suspended") or []
    return Text(f"suspended by the controller: {', '.join(sus) if sus else SUSPENDED_NONE}")


def _io_nodes(snap: dict, title: str = "I/O nodes") -> Table:
    """Per I/O node: who holds a grant, who waits (policy order), who is held by a suspension."""
    nodes = Table(title=title, expand=False)
    for c in ("I/O node", "grant", "waiting (policy order)", "held (suspended)"):
        nodes.add_column(c)
    for n in snap.get("io_nodes", []):
        nodes.add_row(str(n["node"]), ", ".join(n["grant"]) or "idle", ", ".join(n["waiting"]) or "-",
                      ", ".join(n.get("held", [])) or "-")
    return nodes


def render_io(snap: dict) -> Group:
    """I/O emulation: per I/O node its grant and queue (policy order), per app its phase and progress."""
    p = snap.get("progress") or {}
    head = Text(f"t={snap.get('time', 0.0):.1f} s (spec)  elapsed {_hms(snap.get('elapsed', 0.0))}  "
                f"policy {snap.get('policy', '?')}  phases {p.get('phases_done', '?')}/{p.get('phases_total', '?')}")
    nodes = _io_nodes(snap)
    apps = Table(title="apps", expand=False)
    for c in ("app", "status", "I/O node", "phase", "progress"):
        apps.add_column(c)
    for a in snap.get("apps", []):
        what = a["phase"]
        if a.get("suspended"):
            what = f"{what} (suspended)"
        elif a.get("waiting"):
            what = f"{what} (waiting)"
        elif a.get("transferring"):
            what = f"{what} (granted)"
        apps.add_row(a["id"], a["status"], str(a["io_node"]), what or "-",
                     f"{a['phases_done']}/{a['phases_total']}")
    return Group(head, nodes, apps, _suspended(snap))


def render_batch(snap: dict) -> Group:
    """Batch emulation: per tier used and free capacity, per I/O node (if the platform has them) its
    grants and queue, per job its state and progress."""
    head = Text(f"t={snap.get('time', 0.0):.1f} s (spec)  elapsed {_hms(snap.get('elapsed', 0.0))}  "
                f"scheduler {snap.get('scheduler', '?')}")
    tiers = Table(title="tiers", expand=False)
    for c in ("tier", "used", "free", "capacity", "waiting"):
        tiers.add_column(c)
    for t in snap.get("tiers", []):
        fmt = str if t["tier"] == "nodes" else _size
        tiers.add_row(t["tier"], fmt(t["used"]), fmt(t["free"]), fmt(t["capacity"]),
                      ", ".join(t.get("waiting", [])) or "-")
    jobs = Table(title="jobs", expand=False)
    for c in ("job", "state", "tier", "nodes", "step", "elapsed / walltime"):
        jobs.add_column(c)
    counts: dict[str, int] = {}
    for j in snap.get("jobs", []):
        counts[j["state"]] = counts.get(j["state"], 0) + 1
    head.append("  jobs " + ", ".join(f"{n} {st}" for st, n in counts.items()))
    shown = [j for j in snap.get("jobs", []) if j["state"] not in QUIET_STATES]
    for j in shown[:MAX_ROWS]:
        el = j.get("elapsed", math.nan)
        jobs.add_row(j["id"], j["state"], j.get("tier") or "-", str(j["nodes"]),
                     f"{j['step'] + 1}/{j['steps']}" if j.get("steps") and j.get("step", -1) >= 0 else "-",
                     f"{el:.0f}/{j['walltime']:.0f} s" if el == el else "-")
    more = [Text(f"... {len(shown) - MAX_ROWS} more jobs")] if len(shown) > MAX_ROWS else []
    io = [_io_nodes(snap, f"I/O nodes ({snap.get('io_policy', '?')})")] if snap.get("io_nodes") else []
    return Group(head, tiers, *io, jobs, *more, _suspended(snap))


def render_sweep(snap: dict) -> Group:
    """Sweep: runs done / running / failed, throughput, ETA, and what each worker slot runs."""
    done, total = snap["done"], snap["total"]
    rate = done / snap["elapsed"] if snap["elapsed"] > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else math.nan
    head = Text(f"{snap.get('name', 'sweep')}: done {done}/{total} ({snap['failed']} failed), running "
                f"{len(snap['running'])}, {snap.get('skipped', 0)} done earlier  elapsed {_hms(snap['elapsed'])}  "
                f"throughput {rate * 60:.1f} runs/min  ETA {_hms(eta) if eta == eta else '?'}")
    slots = Table(title="workers", expand=False)
    for c in ("slot", "run", "for"):
        slots.add_column(c)
    for r in snap["running"]:
        slots.add_row(str(r["slot"]), r["run"], _hms(r["seconds"]))
    return Group(head, slots)


RENDER = {"io": render_io, "batch": render_batch, "sweep": render_sweep}


def render(snap: dict) -> Group:
    return RENDER[snap.get("kind", "io")](snap)


class _Screen:
    """The rich Live display on a terminal stream: started at the first snapshot, stopped by ``stop``."""

    def __init__(self, stream: TextIO):
        self.console = Console(file=stream, force_terminal=True, highlight=False)
        self.live: Live | None = None

    def show(self, snap: dict) -> None:
        if self.live is None:
            self.live = Live(console=self.console, auto_refresh=False, screen=False, transient=False,
                             redirect_stdout=False, redirect_stderr=False)
            self.live.start()
        self.live.update(render(snap), refresh=True)

    def note(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)  # above the live region

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()  # last frame stays; cursor shown again
            self.live = None


class LiveView(StatusLine):
    """The emulators' sink with a live view on a terminal (plain status lines otherwise)."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, every: float = 10.0,
                 prefix: str = "emulate"):
        super().__init__(enabled, stream, every, prefix)
        self.live = self.tty
        self.screen = _Screen(self.stream) if self.tty else None

    def note(self, message: str) -> None:
        if self.screen is None:
            return super().note(message)
        self.screen.note(f"[{self.prefix}] {message}")

    def update(self, p: dict, elapsed: float, force: bool = False) -> None:
        if self.screen is None:
            super().update(p, elapsed, force)  # the snapshot carries the progress on a terminal

    def show(self, snapshot: dict) -> None:
        if self.screen is not None:
            self.screen.show(snapshot)

    def done(self) -> None:
        if self.screen is not None:
            self.screen.stop()


class SweepView(Progress):
    """A sweep's sink with a live view on a terminal (``[done/total]`` lines otherwise)."""

    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, every: float = 1.0):
        super().__init__(total, label, stream=stream or sys.stderr, every=every)
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.live = tty
        self.screen = _Screen(self.stream) if tty else None

    def step(self, note: str = "") -> None:
        if self.screen is None:
            return super().step(note)
        self.done += 1

    def show(self, snapshot: dict) -> None:
        if self.screen is not None:
            self.screen.show(snapshot)

    def close(self) -> None:
        if self.screen is not None:
            self.screen.stop()
