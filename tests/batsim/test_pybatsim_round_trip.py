"""pybatsim 3.2.1's own schedulers, unmodified, decide iolab's simulation of the first 300 jobs of KTH-SP2 over
Batsim's protocol (real processes, real ZeroMQ, strict mode): every job runs, and each scheduler's starts follow
its own rule, checked against iolab's built-ins job for job.  docs/results.md has the whole trace."""

from __future__ import annotations

import json

from click.testing import CliRunner

from iolab.batsim.run import run_batsim
from iolab.cli import cli
from iolab.sim.batch.run import simulate_batch
from iolab.specs.batch import BatchExperiment
from iolab.trace import read_trace

from shared_data import shared_file

JOBS = 300


def kth_doc(scheduler: str, limit: int = JOBS) -> dict:
    return {"kind": "batch", "name": "kth",
            "platform": {"nodes": 100, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                         "stage_rate": "5 GB/s"},
            "scheduler": scheduler,
            "workload": {"source": "swf", "path": str(shared_file("KTH-SP2-1996-2.1-cln.swf.gz")), "limit": limit}}


def kth(scheduler: str, limit: int = JOBS) -> BatchExperiment:
    return BatchExperiment.model_validate(kth_doc(scheduler, limit))


def _jobs(trace):
    j = trace.jobs
    return {str(i): (float(r), float(s), float(e), int(n), str(ids), str(st)) for i, r, s, e, n, ids, st in
            zip(j["id"], j["release"], j["start"], j["end"], j["nodes"], j["node_ids"], j["status"])}


def _ids(text: str) -> set[int]:
    out = set()
    for part in text.replace(",", " ").split():
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def _free(jobs, t: float, total: int = 100) -> set[int]:
    busy = set()
    for r, s, e, n, ids, _ in jobs.values():
        if s <= t < e:
            busy |= _ids(ids)
    return set(range(total)) - busy


def _longest_run(ids: set[int]) -> int:
    best = run = 0
    for i in range(max(ids, default=-1) + 2):
        run = run + 1 if i in ids else 0
        best = max(best, run)
    return best


def test_easy_backfill_runs_every_job_and_differs_from_iolab_easy_only_by_its_contiguous_allocations(start_pybatsim):
    s = start_pybatsim("easyBackfill")
    got = _jobs(run_batsim(kth("easy"), s.endpoint, strict=True, node_ids=True))
    assert s.wait(10) == 0
    assert len(got) == JOBS and {v[5] for v in got.values()} == {"ok"}
    want = _jobs(simulate_batch(kth("easy"), strict=True))
    differ = sorted((min(got[j][1], want[j][1]), j) for j in got if got[j][1] != want[j][1])
    assert differ, "pybatsim's EASY gave every start iolab's EASY gives"
    t, job = differ[0]
    same = [j for j in got if max(got[j][1], want[j][1]) < t]
    assert len(same) > 50  # every start before the first difference is the same
    release, start, _, nodes, _, _ = got[job]
    assert want[job][1] == t < start  # iolab's EASY started it earlier ...
    free = _free(got, t)
    assert len(free) >= nodes > _longest_run(free)  # ... when pybatsim had the nodes, but not in one block


def test_filler_starts_every_job_as_soon_as_it_fits_in_any_order(start_pybatsim, tmp_path):
    s = start_pybatsim("fillerSched")
    out = tmp_path / "filler.h5"
    res = CliRunner().invoke(cli, ["batsim", str(_spec_file(tmp_path)), "--socket", s.endpoint, "--out", str(out),
                                   "--json", "--strict"])
    assert res.exit_code == 0, res.output
    assert s.wait(10) == 0
    b = json.loads(res.output)["batsim"]
    assert b["sent_by_type"]["JOB_SUBMITTED"] == JOBS and b["sent_by_type"]["JOB_COMPLETED"] == JOBS
    assert b["sent_by_type"]["SIMULATION_BEGINS"] == b["sent_by_type"]["SIMULATION_ENDS"] == 1
    got = _jobs(read_trace(out))
    assert {v[5] for v in got.values()} == {"ok"}
    # fillerSched's rule: after each event, no waiting job fits in the free nodes (no head-of-line blocking)
    for t in sorted({v[0] for v in got.values()} | {v[2] for v in got.values()}):
        free = len(_free(got, t))
        waiting = [v[3] for v in got.values() if v[0] <= t < v[1]]
        assert all(n > free for n in waiting), (t, free, waiting)
    # which iolab's FCFS breaks: it holds a job behind a head that does not fit
    fcfs = _jobs(simulate_batch(kth("fcfs"), strict=True))
    assert any(any(v[3] <= len(_free(fcfs, t)) for v in fcfs.values() if v[0] <= t < v[1])
               for t in sorted({v[0] for v in fcfs.values()}))


def _spec_file(tmp_path):
    path = tmp_path / "kth.json"
    path.write_text(json.dumps(kth_doc("fcfs")))
    return path
