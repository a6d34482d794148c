"""Digests of every I/O-level simulation the examples and the quick studies make.

usage: python benchmarks/io_trace_digests.py [--large]

Simulates every I/O spec of examples/ (``*.yaml`` and ``validation/*.yaml`` of ``kind: io``)
under every I/O policy in the event engine (strict and not) and the fixed-step engine (the
spec's ``dt``, and 0.5 strict), every workload of the I/O campaign ``examples/campaigns/quick.yaml``
(``--large``: also ``carretero-policies.yaml``) under every policy in the event engine (the
campaigns' engine; strict and not), and runs the carretero study at its quick
size (every workload, every strategy, as the study does: the event engine without rows).
Prints one line per run, ``name digest``: a SHA-256 of the trace's tables (jobs, phases,
grants; every float by its ``repr``) and the event count, or of the study's per-app outcome.

Run it before and after a change that must not change a decision (a refactoring of the
simulator or the I/O kernel) and compare the two outputs with ``diff``: any differing line
names the run whose trace changed.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from iolab.campaign.expand import load_runs
from iolab.middleware.policies import POLICIES
from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import run_engine
from iolab.sim.io.scenario import Scenario
from iolab.specs import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            p = p.tolist()
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def trace_digest(spec, policy: str, mode: str, dt: float, strict: bool) -> str:
    rec = run_engine(spec, policy=policy, mode=mode, dt=dt, strict=strict)
    t = rec.trace()
    tables = t.as_dict()
    parts = [rec.events]
    for name in sorted(tables):
        for col in sorted(tables[name]):
            parts += [name, col, np.asarray(tables[name][col])]
    return _digest(*parts)


def io_specs(large: bool):
    """(name, spec) of every I/O spec of the examples and the I/O campaigns."""
    for path in sorted(EXAMPLES.glob("*.yaml")) + sorted((EXAMPLES / "validation").glob("*.yaml")):
        spec = load_spec(path)
        if getattr(spec, "kind", "io") == "io":
            yield path.relative_to(EXAMPLES).as_posix(), spec
    for camp in ["quick.yaml"] + (["carretero-policies.yaml"] if large else []):
        _, runs = load_runs(EXAMPLES / "campaigns" / camp)
        seen = set()
        for run in runs:
            spec = run.spec()
            key = spec.model_dump_json(exclude={"policy"})
            if key in seen:  # the policy axis: every policy runs below anyway
                continue
            seen.add(key)
            yield f"campaigns/{camp}:{run.run_id}", spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--large", action="store_true", help="also the carretero-policies campaign (90 runs)")
    args = ap.parse_args()
    for name, spec in io_specs(args.large):
        runs = [("event", None, False), ("event", None, True)]
        if not name.startswith("campaigns/"):  # the campaigns run the event engine
            runs += [("step", spec.sim.dt, False), ("step", 0.5, True)]
        for policy in sorted(POLICIES):
            for mode, dt, strict in runs:
                label = f"{name} {policy} {mode}{'' if dt is None else f' dt={dt:g}'}{' strict' if strict else ''}"
                print(label, trace_digest(spec, policy, mode, dt, strict), flush=True)
    # the carretero study at its quick size: what run_workload simulates, per app
    from iolab.middleware.policies.plan import make_packs, packed_plan
    from iolab.workloads.carretero import generate
    from iolab.studies.carretero import QUICK, STRATEGIES, campaign_params, campaign_runs

    for run in campaign_runs(campaign_params(QUICK, 2020)):
        spec = generate(run["alpha_gen"], run["seed"], QUICK.params)
        alpha = spec.io_load()
        for strategy, (s, policy) in STRATEGIES.items():
            sens = alpha if s is None else s
            packs = make_packs(spec, sens)
            plan = packed_plan(spec, packs, [list(range(len(packs)))], sens)
            rec = EventEngine(Scenario.from_spec(spec, plan), policy, rows=False).run()
            print(f"study carretero quick alpha={run['alpha_gen']:g} k={run['k']} {strategy}",
                  _digest(rec.events, rec.start, rec.end, rec.wait, rec.io_busy), flush=True)


if __name__ == "__main__":
    main()
