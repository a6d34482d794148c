"""One spec with I/O nodes in both runtimes: the same parts, the same grant order per I/O node, the same
jobs waiting (real MPI, Ray and files against the simulator).

Four nodes behind two FIFO I/O nodes (two nodes each), a fast LPS so that the I/O nodes are the
bottleneck, three writers whose compute steps end far apart (so the order of their requests does not
hang on process start-up): ``a`` (node 0) writes first on I/O node 0; ``b`` (nodes 1 and 2) asks both
I/O nodes while ``a`` holds node 0, so its part there waits and its part on node 1 goes at once; ``c``
(node 3) asks I/O node 1 while ``b``'s part holds it, and waits.
"""

from __future__ import annotations

import pytest

from iolab.specs.batch import BatchExperiment

GB = 10**9
TS, BS = 0.02, 1e-5  # 100 spec s = 2 wall s; 100 GB = 1 MB on disk


def the_spec() -> BatchExperiment:
    def writer(job, nodes, runtime, output):
        return {"id": job, "submit": 0, "nodes": nodes, "walltime": 5000, "runtime": runtime, "output": output}
    return BatchExperiment.model_validate({
        "name": "io-nodes-both", "scheduler": "fcfs",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 2, "nodes_per_io_node": 2, "io_node": {"rate": "1 GB/s", "policy": "fifo"}},
        "workload": [writer("a", 1, 100, "600GB"), writer("b", 2, 400, "600GB"), writer("c", 1, 550, "600GB")],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "chunk_bytes": 64 * 1024},
    })


def parts(trace) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list] = {}
    for r in trace.phases.rows():
        if r["kind"] == "write":
            out.setdefault(r["job"], []).append((r["io_node"], round(r["volume"] / GB, 3)))
    return {j: sorted(p) for j, p in out.items()}


def order(trace) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for r in sorted(trace.grants.rows(), key=lambda r: r["grant"]):
        out.setdefault(r["io_node"], []).append(r["job"])
    return out


def waits(trace) -> dict[tuple[str, int], float]:
    return {(r["job"], r["io_node"]): r["grant"] - r["request"] for r in trace.grants.rows()}


def both_runs(sp: BatchExperiment, tmp_path, jobs: int):
    """The spec simulated and run for real, both in strict mode; every real job ended ok."""
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    sim = simulate_batch(sp, strict=True)
    real = run_batch_emulation(sp, work_dir=tmp_path / "w", strict=True)
    assert [r["status"] for r in real.jobs.rows()] == ["ok"] * jobs
    return sim, real


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_one_spec_means_the_same_io_nodes_in_both_runtimes(tmp_path):
    sim, real = both_runs(the_spec(), tmp_path, 3)

    # the model's parts: b's 600 GB split over its two I/O nodes by its nodes there
    assert parts(sim) == {"a": [(0, 600.0)], "b": [(0, 300.0), (1, 300.0)], "c": [(1, 600.0)]}
    assert parts(real) == parts(sim)
    assert order(sim) == {0: ["a", "b"], 1: ["b", "c"]}
    assert order(real) == order(sim)

    # who waited: b on I/O node 0 (behind a), c on I/O node 1 (behind b); nobody else
    ws, wr = waits(sim), waits(real)
    assert ws[("b", 0)] == pytest.approx(300, abs=1) and ws[("c", 1)] == pytest.approx(150, abs=1)
    for key, w in ws.items():
        if w > 1:
            assert wr[key] > w / 2, f"{key} waited {w:.0f} s simulated, {wr[key]:.0f} s for real"
        else:
            assert wr[key] < 60, f"{key} did not wait in the simulator, {wr[key]:.0f} s for real"
    # every part moves at its I/O node's rate in both (a process's launch, seconds of wall time on a loaded
    # machine, shifts the real run's ends; a transfer's length does not depend on it)
    held = {(r["job"], r["io_node"]): r["release"] - r["grant"] for r in sim.grants.rows()}
    assert held == pytest.approx({("a", 0): 600, ("b", 0): 300, ("b", 1): 300, ("c", 1): 600}, abs=1)
    for r in real.grants.rows():
        assert r["release"] - r["grant"] == pytest.approx(held[(r["job"], r["io_node"])], rel=0.1), r


# ---------------------------------------------------------------- a job on two I/O nodes, a tier with a law
R_LPS = 1 * GB  # bytes per spec second
F2 = 0.5  # the law's f(2): 1 / (1 + 1 x (2 - 1))
PART = 100 * GB  # each of the job's two parts


def split_spec() -> BatchExperiment:
    """One job on two nodes behind two I/O nodes (one node each), fast I/O nodes, LPS at 1 GB/s under a
    law that halves it with two streams."""
    return BatchExperiment.model_validate({
        "name": "io-nodes-split", "scheduler": "fcfs",
        "platform": {"nodes": 2, "memory_per_node": "8GB",
                     "lps": {"rate": "1 GB/s", "interference": {"gamma": 1.0, "knee": 1}},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 2, "nodes_per_io_node": 1, "io_node": {"rate": "20 GB/s", "policy": "fifo"}},
        "workload": [{"id": "s", "submit": 0, "nodes": 2, "walltime": 5000, "runtime": 10, "output": "200GB"}],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "chunk_bytes": 16 * 1024},
    })


def two_streams(g0: float, g1: float) -> dict[int, float]:
    """The reference: two parts of ``PART`` bytes on one tier, each its own stream, granted at ``g0`` and
    ``g1`` (I/O nodes not limiting): alone a part gets the whole rate, together each gets R f(2) / 2.
    Returns each part's transfer length (release - grant)."""
    lag = abs(g1 - g0)
    if lag * R_LPS >= PART:  # the first is done before the second starts: each alone
        return {0: PART / R_LPS, 1: PART / R_LPS}
    # the first moves lag x R alone; then both move at the fair share until the first is done, the
    # second having moved as much as the first then; the second's last lag x R bytes go alone
    both = (PART - lag * R_LPS) / (R_LPS * F2 / 2)
    return {0: lag + both, 1: both + lag}


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_on_two_io_nodes_is_two_streams_on_its_tier_in_both_runtimes(tmp_path):
    """Each part is one stream on the tier in both runtimes: two parts of 100 GB granted together share
    LPS's 1 GB/s x f(2) = 0.5 GB/s, so each lasts 400 s (one stream per job would give ~200 s).  A real
    job's ranks reach the phase a fraction of a second apart, so its first part runs alone for that
    long (L s): the real run is held against the same reference with its own grant times (the phase
    then lasts 400 - 2L s)."""
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.sim.batch.run import simulate_batch

    sp = split_spec()
    sim = simulate_batch(sp, strict=True)
    assert parts(sim) == {"s": [(0, 100.0), (1, 100.0)]}
    held = {r["io_node"]: r["release"] - r["grant"] for r in sim.grants.rows()}
    assert two_streams(0.0, 0.0) == {0: 400.0, 1: 400.0}
    assert held == pytest.approx(two_streams(0.0, 0.0), rel=1e-6)

    real = run_batch_emulation(sp, work_dir=tmp_path / "w", strict=True)
    assert [r["status"] for r in real.jobs.rows()] == ["ok"]
    assert parts(real) == parts(sim)
    grants = {r["io_node"]: r for r in real.grants.rows()}
    got = {n: r["release"] - r["grant"] for n, r in grants.items()}
    lag = abs(grants[1]["grant"] - grants[0]["grant"])
    assert lag < 50, f"the real job's parts were granted {lag:.0f} s apart"
    expect = two_streams(grants[0]["grant"], grants[1]["grant"])
    # the phase's transfer, from its first grant to its last release, within 5 % of the reference; each
    # part within 10 % (how the overlap is split between the job's two parts follows its ranks' scheduling)
    first = min(r["grant"] for r in grants.values())
    span = max(r["release"] for r in grants.values()) - first
    span_expect = max(r["grant"] + expect[n] for n, r in grants.items()) - first
    why = f"real {got}, the reference {expect} (grants {lag:.1f} s apart)"
    assert span == pytest.approx(span_expect, rel=0.05), why
    assert got == pytest.approx(expect, rel=0.1), why


# ---------------------------------------------------------------- shared I/O nodes with a law
def shared_spec() -> BatchExperiment:
    """Four nodes behind two `shared` I/O nodes of 1 GB/s under a law that halves them with two streams,
    a fast LPS.  ``a`` (node 0, 400 GB) and ``c`` (node 3, 500 GB) start writing at once, each alone on its
    I/O node; ``b`` (nodes 1 and 2, 100 GB) writes later on both, its 50 GB parts each sharing an I/O node
    with a long writer whose transfer spans all of it (so a process's launch, which shifts when ``b``
    comes, does not change any transfer's length)."""
    def writer(job, nodes, runtime, output):
        return {"id": job, "submit": 0, "nodes": nodes, "walltime": 5000, "runtime": runtime, "output": output}
    return BatchExperiment.model_validate({
        "name": "io-nodes-shared", "scheduler": "fcfs",
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 2, "nodes_per_io_node": 2,
                     "io_node": {"rate": "1 GB/s", "policy": "shared", "interference": {"gamma": 1.0, "knee": 1}}},
        "workload": [writer("a", 1, 100, "400GB"), writer("b", 2, 250, "100GB"), writer("c", 1, 100, "500GB")],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "chunk_bytes": 16 * 1024},
    })


def overlaps(trace) -> set[tuple[str, str, int]]:
    """Pairs of grants held at once on one I/O node (job, job, I/O node)."""
    g = sorted(trace.grants.rows(), key=lambda r: (r["io_node"], r["job"]))
    return {(x["job"], y["job"], x["io_node"]) for i, x in enumerate(g) for y in g[i + 1:]
            if x["io_node"] == y["io_node"] and x["grant"] < y["release"] and y["grant"] < x["release"]}


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_shared_io_nodes_with_a_law_mean_the_same_in_both_runtimes(tmp_path):
    sim, real = both_runs(shared_spec(), tmp_path, 3)

    assert parts(sim) == {"a": [(0, 400.0)], "b": [(0, 50.0), (1, 50.0)], "c": [(1, 500.0)]}
    assert parts(real) == parts(sim)
    # shared: nobody waits, and b's parts overlap the long writers, one on each I/O node
    assert all(w < 1 for w in waits(sim).values())
    assert all(w < 20 for w in waits(real).values()), waits(real)
    assert overlaps(sim) == {("a", "b", 0), ("b", "c", 1)}
    assert overlaps(real) == overlaps(sim)
    # the reference, by hand: alone a part gets 1 GB/s; two parts on an I/O node get 1 x f(2) = 0.5 GB/s in
    # all, 0.25 each.  b's 50 GB parts: 200 s each; a and c lose 150 GB of progress over those 200 s
    held = {(r["job"], r["io_node"]): r["release"] - r["grant"] for r in sim.grants.rows()}
    assert held == pytest.approx({("a", 0): 400 + 150, ("b", 0): 200, ("b", 1): 200, ("c", 1): 500 + 150},
                                 rel=1e-6)
    for r in real.grants.rows():
        assert r["release"] - r["grant"] == pytest.approx(held[(r["job"], r["io_node"])], rel=0.1), r


# ---------------------------------------------------------------- more ranks than nodes
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_with_more_ranks_than_nodes_is_split_by_its_nodes_in_both_runtimes(tmp_path):
    """One job on two nodes behind two FIFO I/O nodes (one node each) with three ranks: two run on its first
    node, one on its second, so by ranks its 200 GB would cross I/O node 0 as 133 GB and I/O node 1 as 67 GB.
    Both runtimes split it by nodes: 100 GB per I/O node, each part 100 s at the I/O node's 1 GB/s."""
    sp = BatchExperiment.model_validate({
        "name": "io-nodes-ranks", "scheduler": "fcfs",
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                     "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                     "io_nodes": 2, "nodes_per_io_node": 1, "io_node": {"rate": "1 GB/s", "policy": "fifo"}},
        "workload": [{"id": "r", "submit": 0, "nodes": 2, "walltime": 5000, "runtime": 10, "output": "200GB"}],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "ranks_per_job": 3, "chunk_bytes": 16 * 1024},
    })
    sim, real = both_runs(sp, tmp_path, 1)
    assert parts(sim) == {"r": [(0, 100.0), (1, 100.0)]}
    assert parts(real) == parts(sim)
    held = {r["io_node"]: r["release"] - r["grant"] for r in sim.grants.rows()}
    assert held == pytest.approx({0: 100.0, 1: 100.0})
    got = {r["io_node"]: r["release"] - r["grant"] for r in real.grants.rows()}
    assert got == pytest.approx(held, rel=0.1), got  # by ranks, I/O node 0's part would last 133 s
