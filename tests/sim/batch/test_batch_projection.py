"""Recording a scheduler's plan must not change what it decides."""

from __future__ import annotations

import pytest

from iolab.specs import parse_spec
from iolab.middleware.policies.batch import TierRates, get_scheduler
from iolab.sim.batch.engine import BatchEngine
from iolab.workloads import load_workload


@pytest.mark.parametrize("scheduler", ["sas", "easy", "fcfs", "conservative", "random-tier"])
@pytest.mark.parametrize("seed", [0, 3])
def test_decisions_do_not_depend_on_projecting_the_plan(scheduler, seed):
    spec = parse_spec({"kind": "batch", "seed": seed,
                       "platform": {"nodes": 32, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "512GB"},
                                    "stage_rate": "5GB/s", "memory_per_node": "16GB"},
                       "scheduler": {"kind": scheduler, "p": 0.5} if scheduler == "random-tier" else scheduler,
                       "workload": {"source": "feitelson", "jobs": 150, "arrival_factor": 200}})
    jobs = load_workload(spec)
    p = spec.platform
    runs = []
    for project in (True, False):
        policy = get_scheduler(scheduler, p=0.5 if scheduler == "random-tier" else None, rng=seed)
        if hasattr(policy, "project"):
            policy.project = project
        rec = BatchEngine(jobs, policy, total_nodes=p.nodes, hps_capacity=p.hps.total_capacity,
                          rates=TierRates(p.lps.rate, p.hps.rate, p.stage_rate),
                          memory_per_node=p.memory_per_node, rows=False, record_plans=True).run()
        runs.append([(s.queued.id, s.start, s.tier) for s in rec.jobs])
    assert runs[0] == runs[1]
