"""Where a batch run's CPU goes between its decisions and the rest: one spec simulated in this process.

usage: python benchmarks/decision_cost.py SPEC [--phases all|jobs|none]

Prints the run's CPU seconds (``time.process_time``, the simulation only: no start-up, no trace
written), those spent in the kernel's decisions (``BatchKernel.decide``: the snapshot, the policy,
the starts), in the policy's ``decide``, in building its profiles (``Profile.from_snapshot``) and in
keeping the running jobs' profile as they start and end (``KeptReleases.hold`` and ``drop``), each
measured by a timer around the call (no profiler: a call costs about a microsecond more), and the
run's makespan (to check that two builds ran the same schedule).  docs/results.md ("Growth with the
nodes") runs it on the nodes sweep's SAS specs of ``benchmarks/scaling.py``.
"""

from __future__ import annotations

import argparse
import time

from iolab.middleware.policies.batch import profile
from iolab.middleware.policies.batch.kernel import BatchKernel
from iolab.middleware.policies.batch.profile import Profile
from iolab.middleware.policies.batch.snapshot import BatchPolicy
from iolab.runners import runner
from iolab.specs.load import load_spec

SPENT: dict[str, float] = {}


def _timed(owner, name: str, label: str) -> None:
    raw = owner.__dict__[name]
    wrapped_cm = isinstance(raw, classmethod)
    f = raw.__func__ if wrapped_cm else raw

    def timed(*args, **kw):
        t = time.process_time()
        try:
            return f(*args, **kw)
        finally:
            SPENT[label] = SPENT.get(label, 0.0) + time.process_time() - t

    setattr(owner, name, classmethod(timed) if wrapped_cm else timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--phases", choices=["all", "jobs", "none"], default="jobs")
    a = ap.parse_args()
    timed = [(BatchKernel, "decide", "decisions"), (BatchPolicy, "decide", "policy"),
             (Profile, "from_snapshot", "profiles built")]
    kept = getattr(profile, "KeptReleases", None)  # (a build before it: not timed)
    if kept is not None:
        timed += [(kept, "hold", "kept profile"), (kept, "drop", "kept profile")]
    for owner, name, label in timed:
        _timed(owner, name, label)
    spec = load_spec(a.spec, limits={"jobs": 10 ** 8})
    sim = runner("batch", "sim")
    t0 = time.process_time()
    trace = sim.run(spec, phases=a.phases)
    run = time.process_time() - t0
    m = sim.metrics(trace)
    parts = ", ".join(f"{k} {v:.2f}" for k, v in SPENT.items())
    print(f"{a.spec}: run {run:.2f} CPU s; {parts}; {trace.attrs['decisions']} decisions; makespan {m.makespan!r}")


if __name__ == "__main__":
    main()
