"""A user's batch scheduler and a user's I/O order, from files outside the repository, in both runtimes:
the same start order and the same grant order (real MPI jobs, Ray actors and files against the simulator).

Three 1-node jobs behind one I/O node, and a 3-node job, all submitted at 0 on 3 nodes.  The user's
scheduler starts the shortest walltime first (what fits, in that order): ``z`` (3 nodes, the shortest) runs
alone first, then ``y``, ``x`` and ``h`` together; FCFS would start ``h``, ``x``, ``y`` and ``z`` last.  The
user's I/O order grants the highest system id first: ``h`` writes first (alone), ``x`` and ``y`` ask while
it holds the I/O node, and ``y`` goes before ``x`` (FIFO would grant ``x`` first).
"""

from __future__ import annotations

import pytest

from iolab.specs.batch import BatchExperiment

SCHEDULER = '''
from iolab.policy import BatchScheduler


class ShortestFirst(BatchScheduler):
    """Start the waiting jobs in order of walltime, each that fits in what is left."""

    def decide(self, snap):
        free, out = snap.free_nodes, []
        for job in sorted(snap.queue, key=lambda j: (j.walltime, j.submit, j.id)):
            if job.nodes <= free:
                out.append(snap.start(job))
                free -= job.nodes
        return out
'''

ORDER = '''
from iolab.policy import IOOrder


class NewestJobFirst(IOOrder):
    """The highest system id (the job submitted last) is granted first."""

    def key(self, request, now):
        return -request.rank
'''

TS, BS = 0.02, 1e-5  # 100 spec s = 2 wall s; 100 GB = 1 MB on disk


def the_spec(folder) -> BatchExperiment:
    (folder / "sched.py").write_text(SCHEDULER)
    (folder / "order.py").write_text(ORDER)

    def job(jid, nodes, walltime, runtime, output="0GB"):
        return {"id": jid, "submit": 0, "nodes": nodes, "walltime": walltime, "runtime": runtime, "output": output}
    return BatchExperiment.model_validate({
        "name": "user-policies", "scheduler": "sched.py:ShortestFirst",
        "platform": {"nodes": 3, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 1, "nodes_per_io_node": 3,
                     "io_node": {"rate": "1 GB/s", "policy": "order.py:NewestJobFirst"}},
        # x and y ask 300 and 400 spec s (6 and 8 wall s) after their start, h at 10: launches staggered by a
        # loaded machine (seconds, three MPI jobs started back to back) still leave h first; h holds the I/O
        # node until ~1010 s, after both have asked
        "workload": [job("h", 1, 9000, 10, "1000GB"), job("x", 1, 8000, 300, "100GB"),
                     job("y", 1, 7000, 400, "100GB"), job("z", 3, 100, 50)],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "chunk_bytes": 64 * 1024},
    }, context={"base_dir": folder})


def start_order(trace) -> list[list[str]]:
    """The jobs grouped by start time (within 1 spec s), in time order; each group sorted."""
    rows = sorted(trace.jobs.rows(), key=lambda r: r["start"])
    groups: list[list[str]] = []
    last = None
    for r in rows:
        if last is None or r["start"] - last > 20:
            groups.append([])
        groups[-1].append(r["id"])
        last = r["start"]
    return [sorted(g) for g in groups]


def grant_order(trace) -> list[str]:
    return [r["job"] for r in sorted(trace.grants.rows(), key=lambda r: r["grant"])]


def test_the_simulator_follows_both_user_policies(tmp_path):
    from iolab.sim.batch.run import simulate_batch

    sim = simulate_batch(the_spec(tmp_path), strict=True)
    assert start_order(sim) == [["z"], ["h", "x", "y"]]
    assert grant_order(sim) == ["h", "y", "x"]
    assert sim.attrs["policies"]["scheduler"]["class"] == "ShortestFirst"
    assert sim.attrs["policies"]["platform.io_node.policy"]["class"] == "NewestJobFirst"


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_both_runtimes_make_the_same_decisions_with_user_policies(tmp_path):
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    spec = the_spec(tmp_path)
    sim = simulate_batch(spec, strict=True)
    real = run_batch_emulation(spec, work_dir=tmp_path / "w", strict=True)
    assert [r["status"] for r in real.jobs.rows()] == ["ok"] * 4
    assert start_order(real) == start_order(sim) == [["z"], ["h", "x", "y"]]
    assert grant_order(real) == grant_order(sim) == ["h", "y", "x"]
    assert real.attrs["policies"] == sim.attrs["policies"]
