"""carretero2020 §3's single-vs-multiple experiment, in either runtime.

One I/O node under ``shared`` whose interference law is a preset (or any law the spec takes);
identical apps each compute 0.5 s, then write ``units`` units once.  *Single*: one app alone;
*multiple*: ``apps`` of them released together (the paper's 4, each on its own file).  The paper's
loss ``d = 1 - sum(BW_multi) / BW_single``: ``BW_single`` the lone app's bandwidth (its bytes over
its write phase), ``sum(BW_multi)`` the apps' aggregate (their bytes over the span from the first
write's start to the last one's end), both from a trace's write phases.  The simulator gives
``1 - f(apps)``; a real run (``iolab emulate``'s machinery) measures what the arbiter's token bucket
under the law gives.  ``benchmarks/interference_single_multi.py`` prints both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from iolab.sim.io.run import simulate
from iolab.specs import parse_spec

__all__ = ["SingleMulti", "UNITS", "single_multi_spec", "single_vs_multiple", "write_bandwidth"]

UNITS = 40.0  # units each app writes (4 MiB each: 160 MiB per app for real)


def single_multi_spec(apps: int, interference: Any, units: float = UNITS):
    """The experiment's I/O spec with ``apps`` identical apps on one ``shared`` I/O node of bandwidth 1."""
    return parse_spec({
        "name": f"single-multi-{apps}", "policy": "shared", "mapping": "none",
        "platform": {"io_nodes": 1, "nodes_per_io_node": 16, "bandwidth": 1.0, "interference": interference},
        "apps": [{"id": f"app{i}", "nodes": 1, "phases": [{"compute": 0.5}, {"write": units}]} for i in range(apps)],
        "emulator": {"time_scale": 0.1, "unit_bytes": 4 << 20, "chunk_bytes": 1 << 20, "ranks_per_app": 1,
                     "grid": 32, "lease": 60},
    })


def write_bandwidth(trace) -> tuple[float, float, float]:
    """``(aggregate units/s, span, units)`` of a trace's write phases: their volume over the span from the
    first write's start to the last one's end."""
    w = [r for r in trace.phases.rows() if r["kind"] == "write"]
    if not w:
        raise ValueError("the trace has no write phase")
    t0, t1 = min(r["start"] for r in w), max(r["end"] for r in w)
    vol = sum(r["volume"] for r in w)
    return vol / (t1 - t0), t1 - t0, vol


@dataclass(frozen=True)
class SingleMulti:
    """One single-vs-multiple measurement (units/s of the spec; ``d`` as the paper defines it)."""

    single: float  # BW_single
    multi: float  # sum(BW_multi)
    single_span: float
    multi_span: float
    apps: int

    @property
    def d(self) -> float:
        return 1.0 - self.multi / self.single


def single_vs_multiple(interference: Any, apps: int = 4, run: Callable | None = None,
                       out_dir: Path | None = None, units: float = UNITS) -> SingleMulti:
    """Run the experiment: the spec with one app, then with ``apps``, through ``run(spec, path) -> trace``
    (default: the simulator); ``out_dir`` receives the traces (``single.h5``, ``multi.h5``) when given."""
    if run is None:
        def run(spec, path):
            return simulate(spec)
    out_dir = Path(out_dir) if out_dir is not None else Path(".")
    one, s_span, _ = write_bandwidth(run(single_multi_spec(1, interference, units), out_dir / "single.h5"))
    many, m_span, _ = write_bandwidth(run(single_multi_spec(apps, interference, units), out_dir / "multi.h5"))
    return SingleMulti(single=one, multi=many, single_span=s_span, multi_span=m_span, apps=apps)
