"""What a partial trace is missing: the trace of a run cut short (Ctrl-C, SIGTERM, ``scancel``).

An interrupted emulation writes its trace with ``complete = False``; the apps (jobs) still going
were killed, those not yet started never ran.  :func:`cut_short` says when the run was stopped and
which apps or jobs it cut, so that reports and exports say so instead of printing the metrics of a
complete run (a makespan of ``nan``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolab.trace import Trace

CUT_STATES = ("killed", "pending", "queued", "future")  # states a job is left in by an interruption


@dataclass(frozen=True)
class CutShort:
    at: float  # trace seconds at which the run was stopped (nan when the trace does not say)
    total: int  # apps or jobs in the trace
    finished: int  # of them, ended on their own (ok or failed before the interruption)
    cut: list[tuple[str, str]] = field(default_factory=list)  # (id, state) of those the interruption cut
    killed_at: dict[str, float] = field(default_factory=dict)  # id -> when a started, killed one was stopped

    def describe(self, what: str = "apps", limit: int = 8) -> str:
        """``interrupted at t = 4.0 s: 2 of 2 apps cut short (A killed, B killed)``."""
        when = f" at t = {self.at:,.1f} s" if math.isfinite(self.at) else ""
        names = ", ".join(f"{i} {st}" for i, st in self.cut[:limit])
        if len(self.cut) > limit:
            names += f", ... {len(self.cut) - limit} more"
        return (f"the run was interrupted{when}: a partial trace; {len(self.cut)} of {self.total} {what} cut short"
                + (f" ({names})" if names else "") + f", {self.finished} ended on their own")


def is_complete(trace: Trace) -> bool:
    c = trace.attrs.get("complete", True)
    return not (c is False or str(c) == "False")


def cut_short(trace: Trace) -> CutShort | None:
    """None for a complete trace; else when the run stopped and what it cut (see the module doc)."""
    if is_complete(trace):
        return None
    j = trace.jobs
    failures = trace.attrs.get("failures") or {}
    ids = [str(x) for x in j["id"]]
    status = [str(x) for x in j["status"]]
    start = [float(x) for x in j["start"]]
    end = [float(x) for x in j["end"]]
    killed_at: dict[str, float] = {}
    cut = []
    for i, s, st, en in zip(ids, status, start, end):
        if s in CUT_STATES or (s != "ok" and not math.isfinite(en)):
            cut.append((i, s if math.isfinite(st) or s != "killed" else "never started"))
            f = failures.get(i) if isinstance(failures, dict) else None
            t = float(f["time"]) if isinstance(f, dict) and "time" in f else en
            if math.isfinite(st) and s == "killed" and math.isfinite(t):
                killed_at[i] = t
    times = [float(f["time"]) for f in (failures.values() if isinstance(failures, dict) else [])
             if isinstance(f, dict) and f.get("status") == "killed" and "time" in f]
    if not times:  # the latest end recorded (of a job or a phase)
        ends = [e for e in end if math.isfinite(e)]
        if len(trace.phases):
            ends += [float(e) for e in trace.phases["end"] if math.isfinite(float(e))]
        times = [max(ends)] if ends else []
    at = max(times) if times else math.nan
    return CutShort(at=at, total=len(ids), finished=len(ids) - len(cut), cut=cut, killed_at=killed_at)


__all__ = ["CUT_STATES", "CutShort", "cut_short", "is_complete"]
