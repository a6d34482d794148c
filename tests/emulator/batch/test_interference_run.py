"""Real batch runs on a paced tier with an interference law: k writers get rate x f(k) in total.

Each run is real: MPI Jacobi jobs write their output or checkpoints (HDF5, 128 KiB bookings) to the LPS tier's
directory, paced by the storage manager actor's token bucket under the tier's law.  What is
measured comes from the trace's phase rows (and the files on disk); the references are the
law itself and a processor-sharing replay of the measured write starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.middleware.policies.interference import law_of
from iolab.sim.fairshare import FairShareLink
from iolab.specs.batch import BatchExperiment

GB = 1e9
RATE = 1e9  # LPS, spec bytes/s
BS, TS = 1e-4, 0.01  # bytes scale, time scale
CHUNK = 128 * 1024  # real bytes per booking: a file of 20 MB is 160 of them (a writer can be one chunk ahead)

pytestmark = [pytest.mark.long, pytest.mark.ray, pytest.mark.mpi]


def spec(law, outputs) -> BatchExperiment:
    return BatchExperiment.model_validate({
        "name": "interference", "scheduler": "fcfs",
        "platform": {"nodes": len(outputs), "memory_per_node": "1GB",
                     "lps": {"rate": RATE, "interference": law},
                     "hps": {"rate": "1 GB/s", "capacity": "10 GB"}, "stage_rate": "1 GB/s"},
        "workload": [{"id": f"w{i}", "submit": 0, "nodes": 1, "walltime": 10_000, "runtime": out / RATE + 10,
                      "output": out} for i, out in enumerate(outputs)],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "ranks_per_job": 1, "chunk_bytes": CHUNK}})


def emulate(s, work: Path):
    from iolab.emulator.batch.run import run_batch_emulation

    trace = run_batch_emulation(s, out=work / "run.h5", work_dir=work / "w")
    assert set(trace.jobs["status"].tolist()) == {"ok"}
    writes = sorted(((r["start"], r["end"], r["volume"], r["job"]) for r in trace.phases.rows()
                     if r["kind"] == "write"), key=lambda w: w[1])
    assert len(writes) == len(s.workload.jobs)
    return writes


def replay(writes, law):
    """Ends of the same writes, started when they really started, on a link of RATE under ``law``."""
    link = FairShareLink(RATE, law)
    pending = sorted((w[0], w[2], w[3]) for w in writes)
    ends = {}
    while pending or len(link):
        nxt = link.next_completion()
        if pending and pending[0][0] <= nxt:
            t, v, job = pending.pop(0)
            link.add(job, v, t)
        else:
            for job in link.pop_finished(nxt):
                ends[job] = nxt
    return ends


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    work = tmp_path_factory.mktemp("three")
    s = spec({"table": {3: 0.5}}, [200 * GB] * 3)
    return s, emulate(s, work), work


def test_three_writers_on_a_tier_whose_law_halves_them_get_half_the_rate(three):
    s, writes, work = three
    law = law_of(s.platform.lps.interference)
    assert law.factor(3) == 0.5
    first, last = min(w[0] for w in writes), max(w[1] for w in writes)
    total = sum(w[2] for w in writes)
    aggregate = total / (last - first)  # spec bytes/s
    # the halved total: 600 GB in ~1200 s, not the lossless 600 s.  The writers start up to tens of
    # s apart (process launch on a loaded machine), alone or in two at the law's 1 and 0.75 meanwhile:
    # the reference is the law replayed from the measured starts (0.50-0.55 x the rate)
    ends = replay(writes, law)
    expected = total / (max(ends.values()) - first)
    assert 0.5 * RATE <= expected < 0.6 * RATE
    assert aggregate == pytest.approx(expected, rel=0.03)
    for start, end, _, job in writes:
        assert end - start == pytest.approx(ends[job] - start, rel=0.05), job
    lossless = replay(writes, None)
    assert max(lossless.values()) - first < 0.55 * (last - first)
    # the bytes are on disk: each job's output file holds its output x bytes_scale bytes
    on_disk = {}
    for job in ("w0", "w1", "w2"):
        d = work / "w" / "lps" / "outputs" / job
        on_disk[job] = sum(f.stat().st_size for f in d.iterdir() if f.is_file())
    assert on_disk == {j: pytest.approx(200 * GB * BS, rel=0.01) for j in on_disk}
    # and they came at half the wall rate: real bytes over the real (wall) span of the writes
    wall_rate = sum(on_disk.values()) / ((last - first) * TS)
    assert wall_rate == pytest.approx(expected * BS / TS, rel=0.03)


def rows_spec(law, volumes, memory=10 * GB) -> BatchExperiment:
    """Writers whose bytes are checkpoints of ``memory`` each, back to back (no compute between): one
    phase row per checkpoint, so the rows say how many bytes each writer moved by when."""
    return BatchExperiment.model_validate({
        "name": "interference-k", "scheduler": "fcfs",
        "platform": {"nodes": len(volumes), "memory_per_node": memory,
                     "lps": {"rate": RATE, "interference": law},
                     "hps": {"rate": "1 GB/s", "capacity": "10 GB"}, "stage_rate": "1 GB/s"},
        "workload": [{"id": f"w{i}", "submit": 0, "nodes": 1, "walltime": 10_000, "runtime": v / RATE,
                      "data": v} for i, v in enumerate(volumes)],
        "emulator": {"time_scale": TS, "bytes_scale": BS, "ranks_per_job": 1, "chunk_bytes": CHUNK}})


def aggregate_per_k(phases):
    """Spec bytes/s moved while exactly k writers were in their write phases, from the phase rows.

    k changes only where a writer's span (its first write's start to its last write's end) begins or
    ends.  Between two such instants each writer's rate is its bytes over its time in the rows that lie
    wholly inside (a row that straddles a change moved its bytes at two rates; spreading them evenly
    over it would charge the new k with the old one's rate); the aggregate is the sum of the writers'
    rates, weighted by the length of the interval when k is the same in several.  Time between a
    writer's rows (its switch from one checkpoint file to the next) moves nothing and is not counted.
    The count starts once every writer has written its first checkpoint: a writer's first row holds
    one-off costs (the first HDF5 file, the layout's probe) that are not a k's rate, and the writers'
    launches are staggered on a loaded machine, so the last one's first row can fall well inside the
    window where all k write (a short one: the first writer ends after ten checkpoints)."""
    rows: dict[str, list] = {}
    for r in phases:
        if r["kind"] == "write":
            rows.setdefault(r["job"], []).append((r["start"], r["end"], r["volume"]))
    span = {j: (min(w[0] for w in ws), max(w[1] for w in ws)) for j, ws in rows.items()}
    begin = max(min(w[1] for w in ws) for ws in rows.values())  # every writer's first row has ended
    cuts = sorted({begin} | {t for s, e in span.values() for t in (s, e) if t >= begin})
    moved, length = {}, {}
    for a, b in zip(cuts, cuts[1:]):
        active = [j for j, (s, e) in span.items() if s <= a and b <= e]
        inside = [[w for w in rows[j] if a <= w[0] and w[1] <= b] for j in active]
        if not active or not all(inside):
            continue  # no writer, or too short for a whole row of every writer
        rate = sum(sum(w[2] for w in ws) / sum(w[1] - w[0] for w in ws) for ws in inside)
        k = len(active)
        moved[k] = moved.get(k, 0.0) + rate * (b - a)
        length[k] = length.get(k, 0.0) + (b - a)
    return {k: moved[k] / length[k] for k in length}


def test_the_measure_per_k_charges_each_k_its_own_rate():
    # two writers: b joins at 10 and leaves at 30; a writes at 1 alone, 0.5 with b (the law's f(2) = 1);
    # a's row from 5 to 15 straddles b's arrival (5 bytes at 1, then 2.5 at 0.5), so it is not counted
    rows = [{"kind": "write", "job": "a", "start": s, "end": e, "volume": v}
            for s, e, v in [(0, 5, 5), (5, 15, 7.5), (15, 25, 5), (25, 30, 2.5), (30, 40, 10)]]
    rows += [{"kind": "write", "job": "b", "start": s, "end": e, "volume": v}
             for s, e, v in [(10, 20, 5), (20, 30, 5)]]
    rows.append({"kind": "compute", "job": "a", "start": 40, "end": 50, "volume": 0})
    assert aggregate_per_k(rows) == {1: pytest.approx(1.0), 2: pytest.approx(1.0)}
    # before b's first write, a was alone at a tenth of the rate: not counted (the writers' start)
    rows[0]["volume"] = 0.5
    assert aggregate_per_k(rows) == {1: pytest.approx(1.0), 2: pytest.approx(1.0)}
    # b's first row, slowed by its one-off costs, ends at 20: not counted either (a's rows from 20 on are)
    rows[5]["volume"] = 1
    assert aggregate_per_k(rows) == {1: pytest.approx(1.0), 2: pytest.approx(1.0)}
    # what is counted is measured: a slower second row of b lowers k = 2's rate
    rows[6]["volume"] = 2.5
    assert aggregate_per_k(rows) == {1: pytest.approx(1.0), 2: pytest.approx(0.75)}


@pytest.mark.parametrize("law", [{"gamma": 0.25, "knee": 1}, {"table": {2: 0.9, 3: 0.75, 4: 0.6}}],
                         ids=["parametric", "table"])
def test_k_writers_get_rate_times_f_of_k(law, tmp_path):
    # four writers of 100, 200, 300, 400 GB (10 GB checkpoints) start together: 4 write until the
    # first ends, then 3, 2, 1
    from iolab.emulator.batch.run import run_batch_emulation

    s = rows_spec(law, [100 * GB, 200 * GB, 300 * GB, 400 * GB])
    trace = run_batch_emulation(s, out=tmp_path / "run.h5", work_dir=tmp_path / "w")
    assert set(trace.jobs["status"].tolist()) == {"ok"}
    measured = aggregate_per_k(list(trace.phases.rows()))
    f = law_of(s.platform.lps.interference)
    print({k: round(measured[k] / RATE, 4) for k in sorted(measured)}, {k: round(f.factor(k), 4) for k in sorted(measured)})
    assert sorted(measured) == [1, 2, 3, 4]
    # every k, one writer alone included: its own costs between checkpoints (the file's layout, its
    # rename, the manifest) overlap the bytes the link carries (79-87 % of the rate when they did not)
    for k in (1, 2, 3, 4):
        assert measured[k] == pytest.approx(RATE * f.factor(k), rel=0.05), (k, measured)
