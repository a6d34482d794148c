"""What both simulation modes record, and how it becomes a trace."""

from __future__ import annotations

import math

from iolab.trace import Trace, TraceBuilder

from iolab.sim.io.scenario import Scenario


class Recorder:
    """Per-app outcome (always) and per-phase / per-grant rows (if ``rows``)."""

    def __init__(self, scenario: Scenario, rows: bool = True):
        n = len(scenario.apps)
        self.scenario = scenario
        self.rows = rows
        self.start = [math.nan] * n
        self.end = [math.nan] * n
        self.wait = [0.0] * n  # time spent waiting for I/O grants
        self.io_busy = [0.0] * n  # time spent transferring
        self.phases: list[tuple] = []
        self.grants: list[tuple] = []
        self.events = 0

    def phase(self, rank: int, index: int, kind: str, start: float, end: float, volume: float) -> None:
        if self.rows:
            app = self.scenario.apps[rank]
            self.phases.append((app.id, index, kind, start, end, volume, app.io_node, ""))

    def grant(self, rank: int, index: int, request: float, grant: float, release: float) -> None:
        self.wait[rank] += grant - request
        self.io_busy[rank] += release - grant
        if self.rows:
            app = self.scenario.apps[rank]
            self.grants.append((app.id, index, app.io_node, request, grant, release))

    def trace(self, **attrs) -> Trace:
        tb = TraceBuilder(**attrs)
        for a in self.scenario.apps:
            status = "ok" if not math.isnan(self.end[a.rank]) else "pending"
            tb.add_job(id=a.id, rank=a.rank, nodes=a.nodes, release=a.release,
                       start=self.start[a.rank], end=self.end[a.rank], io_node=a.io_node,
                       pack=a.pack, status=status, tier="", min_time=a.min_time,
                       compute_time=a.compute_time, io_volume=a.io_volume)
        tb.extend("phases", self.phases)
        tb.extend("grants", self.grants)
        return tb.build()
