"""A real batch run whose jobs' I/O goes through arbitrated I/O nodes (real MPI, Ray, files).

Every run here has small one-node (or four-node) Jacobi jobs that compute briefly, then write a large
output (on LPS) at the same time.  The I/O node's rate (1 GB/s spec, 1 MB/s wall at the scales below)
is well under the tier's, so the I/O node is the bottleneck.  Besides the trace (grant and phase
rows), a thread measures the world: the bytes in every job's LPS directory every 40 ms, so we see
which job's files grow while the other waits.

- under ``fifo`` on one I/O node two jobs' write phases are granted one after the other (grant rows
  never overlap, the second job's request waits) and on disk one job's files grow while the other's
  stay empty; under ``shared`` both grow at once; under ``size-fair`` (a sharing policy: a token-bucket lane
  per part) a 3-node job's files grow three times as fast as a 1-node job's while both write, and each
  write lasts what the simulator says;
- a job on two I/O nodes gets one grant per I/O node per I/O phase, and one phase row per part;
- ``allocation: io-aware`` reaches the real run through the kernel: the second writer goes behind the
  idle I/O node (the simulator with ``lowest`` puts both behind I/O node 0) and nobody waits;
- a job SIGSTOPped while it holds the I/O node releases it and asks again at resume;
- a job killed (SIGKILL of its mpiexec) while it holds the I/O node lets the waiting job finish;
- the same code without ``platform.io_nodes`` is the batch run as before: covered by
  ``tests/emulator/batch/test_batch_emulation.py::test_sas_run_stages_for_real_and_matches_the_simulated_tiers``
  (its phase rows carry ``io_node = -1``, no grant rows).

The state the actor wraps is tested without Ray at the end (a planted double grant, suspension).
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from pathlib import Path

import pytest

from iolab.invariants import InvariantViolation
from iolab.specs.batch import BatchExperiment
from polling import wait_until

BS = 1e-5  # bytes scale: 100 GB of spec bytes are 1 MB on disk
TS = 0.01  # time scale: 100 spec s are 1 s of wall time
GB = 10**9


def spec(jobs: list[dict], *, policy: str = "fifo", nodes: int = 2, io_nodes: int = 1, per: int | None = None,
         ranks="nodes") -> BatchExperiment:
    platform = {"nodes": nodes, "memory_per_node": "8GB", "lps": {"rate": "20 GB/s"},
                "hps": {"rate": "20 GB/s", "capacity": "1 TB"}, "stage_rate": "20 GB/s",
                "io_nodes": io_nodes, "io_node": {"rate": "1 GB/s", "policy": policy}}
    if per is not None:
        platform["nodes_per_io_node"] = per
    return BatchExperiment.model_validate({
        "name": "io-nodes-real", "platform": platform, "scheduler": "fcfs", "workload": jobs,
        "emulator": {"time_scale": TS, "bytes_scale": BS, "ranks_per_job": ranks, "chunk_bytes": 64 * 1024},
    })


def writer(job: str, runtime: float, output: str, nodes: int = 1, **more) -> dict:
    return {"id": job, "submit": 0, "nodes": nodes, "walltime": 4 * runtime + 2000, "runtime": runtime,
            "output": output, **more}


class Sampler:
    """Bytes of the files under every job's LPS directory (``WORK/lps/jobs/<job>``; these jobs have no
    input), every ``every`` wall seconds."""

    def __init__(self, work: Path, every: float = 0.04):
        self.root, self.every = work / "lps" / "jobs", every
        self.samples: list[tuple[float, dict[str, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            sizes: dict[str, int] = {}
            try:
                for d in self.root.iterdir():
                    total = 0
                    for dirpath, _, files in os.walk(d):
                        for f in files:  # rank files and their temporaries (``.rank-*.h5.tmpPID``)
                            try:
                                total += os.stat(os.path.join(dirpath, f)).st_size
                            except OSError:
                                pass
                    sizes[d.name] = total
            except OSError:
                pass
            self.samples.append((time.time(), sizes))
            time.sleep(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def growing(self, job: str) -> list[float]:
        """Wall times of the samples at which ``job``'s bytes had grown since the previous sample."""
        out, last = [], 0
        for t, sizes in self.samples:
            n = sizes.get(job, 0)
            if n > last:
                out.append(t)
            last = max(last, n)
        return out


def run(sp: BatchExperiment, tmp_path: Path, on_launch=None):
    from iolab.emulator.batch.run import run_batch_emulation

    work = tmp_path / "w"
    with Sampler(work) as sampler:
        trace = run_batch_emulation(sp, work_dir=work, on_launch=on_launch, strict=True)
    return trace, sampler


def grants(trace, node: int = 0) -> list[dict]:
    return sorted((r for r in trace.grants.rows() if r["io_node"] == node), key=lambda r: r["grant"])


def wall(trace, t: float) -> float:
    return float(trace.attrs["t0"]) + t * trace.attrs["time_scale"]


# --------------------------------------------------------------------- fifo and shared on one I/O node
TWO_WRITERS = [writer("a", 100, "300GB"), writer("b", 100, "300GB")]


def live_view():
    """A live view (``--live``: a snapshot every half wall second) that keeps its snapshots in ``seen``."""
    from iolab.emulator.progress import StatusLine

    class Snapshots(StatusLine):
        live = True

        def __init__(self):
            super().__init__(False)
            self.seen: list[dict] = []

        def show(self, snapshot: dict) -> None:
            self.seen.append(snapshot)

    return Snapshots()


@pytest.fixture(scope="module")
def fifo_run(tmp_path_factory):
    """The two writers under ``fifo``, run for real once with the disk sampler and the live view on: the
    trace, the sampler and the view's snapshots (two tests read this one run)."""
    from iolab.emulator.batch.run import run_batch_emulation

    work = tmp_path_factory.mktemp("fifo") / "w"
    view = live_view()
    with Sampler(work) as sampler:
        trace = run_batch_emulation(spec(TWO_WRITERS, policy="fifo"), work_dir=work, strict=True, progress=view)
    return trace, sampler, view


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_fifo_grants_one_job_at_a_time_and_the_other_waits_on_disk_too(fifo_run):
    trace, sampler, _ = fifo_run
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: r["status"] for j, r in jobs.items()} == {"a": "ok", "b": "ok"}
    g = grants(trace)
    assert len(g) == 2 and {r["job"] for r in g} == {"a", "b"}  # one write phase each, one part each
    first, second = g
    assert first["release"] <= second["grant"] + 1e-9  # never two grants at once on the I/O node
    assert second["request"] < first["release"]  # the second job asked while the first transferred: it waited
    assert second["grant"] - second["request"] > 50  # ... for a good part of the first one's 300 s
    # the phase rows name the I/O node; each part's end is its grant's release
    writes = [r for r in trace.phases.rows() if r["kind"] == "write"]
    assert sorted(r["io_node"] for r in writes) == [0, 0]
    for w in writes:
        rel = next(x["release"] for x in g if x["job"] == w["job"])
        assert w["end"] == pytest.approx(rel, abs=1e-6)
        assert w["volume"] == pytest.approx(300 * GB, rel=1e-3)
    # the world: while the first job's files grow, the second's stay empty
    one, two = first["job"], second["job"]
    grow1, grow2 = sampler.growing(one), sampler.growing(two)
    assert len(grow1) >= 10 and len(grow2) >= 10
    assert max(grow1) <= min(grow2) + 0.1  # (one sample of slack)
    assert min(grow2) >= wall(trace, second["grant"]) - 0.1


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_shared_grants_both_at_once_and_both_jobs_write_together(tmp_path):
    trace, sampler = run(spec(TWO_WRITERS, policy="shared"), tmp_path)
    assert {r["id"]: r["status"] for r in trace.jobs.rows()} == {"a": "ok", "b": "ok"}
    first, second = grants(trace)
    assert second["grant"] < first["release"]  # both parts hold the I/O node at once
    assert second["grant"] - second["request"] < 1.0  # nobody waits under shared
    ga, gb = sampler.growing("a"), sampler.growing("b")
    both = [t for t in ga if min(gb) <= t <= max(gb)]
    assert len(both) >= 5  # on disk, both jobs' files grow in the same interval


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_size_fair_shares_the_io_node_by_job_size_on_disk_and_as_simulated(tmp_path):
    from iolab.sim.batch.run import simulate_batch

    sp = spec([writer("a", 100, "300GB", nodes=3), writer("b", 100, "300GB")], policy="size-fair", nodes=4)
    trace, sampler = run(sp, tmp_path)
    assert {r["id"]: r["status"] for r in trace.jobs.rows()} == {"a": "ok", "b": "ok"}
    sim = simulate_batch(sp, strict=True)
    # the writes: a at 3/4 of the I/O node until its 300 GB are out (400 s); b at 1/4 meanwhile (100 GB), then
    # alone at 1 GB/s (200 s more)
    w = {r["job"]: r["end"] - r["start"] for r in sim.phases.rows() if r["kind"] == "write"}
    assert w == pytest.approx({"a": 400, "b": 600}, rel=0.02)
    real = {r["job"]: r["end"] - r["start"] for r in trace.phases.rows() if r["kind"] == "write"}
    for job in w:  # as long for real, to 10 %
        assert real[job] == pytest.approx(w[job], rel=0.10), (real, w)
    # the world: while both write, a's files grow three times as fast as b's
    g = grants(trace)
    both = (wall(trace, max(r["grant"] for r in g)) + 0.5, wall(trace, min(r["release"] for r in g)) - 0.5)
    inside = [(t, s) for t, s in sampler.samples if both[0] <= t <= both[1]]
    assert len(inside) >= 20
    (t0, s0), (t1, s1) = inside[0], inside[-1]
    ratio = (s1.get("a", 0) - s0.get("a", 0)) / (s1.get("b", 0) - s0.get("b", 0))
    assert ratio == pytest.approx(3.0, rel=0.15), ratio


# --------------------------------------------------------------------- one job on two I/O nodes
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_on_two_io_nodes_has_one_grant_per_io_node_and_phase(tmp_path):
    job = {**writer("w", 100, "40GB", nodes=4), "input": "20GB"}
    trace, _ = run(spec([job], nodes=4, io_nodes=2, per=2), tmp_path)
    assert [r["status"] for r in trace.jobs.rows()] == ["ok"]
    g = trace.grants.rows()
    by_phase: dict[int, list[int]] = {}
    for r in g:
        by_phase.setdefault(r["phase"], []).append(r["io_node"])
    io_phases = sorted({r["index"] for r in trace.phases.rows() if r["kind"] in ("read", "write")})
    assert len(io_phases) == 2  # the input read and the output write
    assert {p: sorted(n) for p, n in by_phase.items()} == {p: [0, 1] for p in io_phases}
    for p in io_phases:
        rows = [r for r in trace.phases.rows() if r["index"] == p]
        assert sorted(r["io_node"] for r in rows) == [0, 1]
        assert len({r["start"] for r in rows}) == 1  # the phase's start; each part's own end
        total = 20 * GB if rows[0]["kind"] == "read" else 40 * GB
        assert sum(r["volume"] for r in rows) == pytest.approx(total, rel=1e-3)
        assert [r["volume"] for r in rows] == pytest.approx([total / 2] * 2, rel=1e-3)  # 2 of 4 ranks each


# --------------------------------------------------------------------- io-aware allocation, through the kernel
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_io_aware_allocation_puts_the_second_writer_behind_the_idle_io_node(tmp_path):
    from iolab.sim.batch.run import simulate_batch

    jobs = [writer("a", 100, "300GB"), {**writer("b", 100, "300GB"), "submit": 5}]
    sp = spec(jobs, nodes=4, io_nodes=2, per=2).model_copy(deep=True)
    aware = BatchExperiment.model_validate({**sp.model_dump(), "allocation": "io-aware"})
    lowest = {r["job"]: r["io_node"] for r in simulate_batch(sp).grants.rows()}
    assert lowest == {"a": 0, "b": 0}  # lowest ids (n0, n1): both behind I/O node 0
    trace, _ = run(aware, tmp_path)
    jobs_ = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: (r["status"], r["hosts"]) for j, r in jobs_.items()} == {"a": ("ok", "n0"), "b": ("ok", "n2")}
    g = {r["job"]: r for r in trace.grants.rows()}
    assert (g["a"]["io_node"], g["b"]["io_node"]) == (0, 1)
    assert g["b"]["grant"] - g["b"]["request"] < 1.0  # nobody waits: each job has its own I/O node
    assert g["b"]["grant"] < g["a"]["release"]  # ... and both write at once


# --------------------------------------------------------------------- a killed job lets go of its I/O node
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_job_killed_while_holding_the_io_node_lets_the_waiting_job_finish(tmp_path):
    # k writes 800 GB (8 s wall) almost at once; a computes 150 s (1.5 s wall) first, then waits for k
    jobs = [writer("k", 10, "800GB"), writer("a", 150, "50GB")]
    killed: dict[str, float] = {}
    work = tmp_path / "w"

    def on_launch(job, proc):
        if job != "k":
            return

        def kill_midway():  # once half of k's bytes are on disk (k holds the I/O node then)
            d = work / "lps" / "jobs" / "k"
            deadline = time.time() + 60
            while time.time() < deadline and proc.poll() is None:
                try:
                    size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) if d.is_dir() else 0
                except OSError:  # a temporary renamed under our feet
                    size = 0
                if size >= 0.5 * 800 * GB * BS:
                    os.kill(proc.pid, signal.SIGKILL)
                    killed["k"] = time.time()
                    return
                time.sleep(0.02)

        threading.Thread(target=kill_midway, daemon=True).start()

    trace, _ = run(spec(jobs), tmp_path, on_launch=on_launch)
    jobs_ = {r["id"]: r for r in trace.jobs.rows()}
    assert "k" in killed
    assert jobs_["k"]["status"] == "failed" and jobs_["a"]["status"] == "ok"
    g = {r["job"]: r for r in grants(trace)}
    kill_t = (killed["k"] - float(trace.attrs["t0"])) / TS
    assert g["k"]["grant"] < kill_t <= g["k"]["release"]  # k held the I/O node until it was dropped
    assert g["a"]["request"] < kill_t <= g["a"]["grant"]  # a waited for it, and got it after the kill
    assert g["a"]["grant"] == pytest.approx(g["k"]["release"], abs=1e-6) or g["a"]["grant"] > g["k"]["release"]
    a_write = next(r for r in trace.phases.rows() if r["job"] == "a" and r["kind"] == "write")
    assert a_write["io_node"] == 0 and a_write["volume"] == pytest.approx(50 * GB, rel=1e-3)


# --------------------------------------------------------------------- strict mode inside a real run
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_strict_mode_stops_a_real_run_whose_io_node_actor_grants_twice(tmp_path, monkeypatch):
    """The actor's test hook plants a double grant in its arbiters (the same spec runs clean under strict
    mode in test_fifo_grants_one_job_at_a_time...): b's request is granted while a transfers."""
    from iolab.emulator.batch.run import run_batch_emulation
    from iolab.middleware.io_node_actor import FAULT_ENV
    from iolab.trace import read_trace

    monkeypatch.setenv(FAULT_ENV, "double-grant")
    procs: dict[str, object] = {}
    out = tmp_path / "run.h5"
    with pytest.raises(InvariantViolation) as err:
        run_batch_emulation(spec(TWO_WRITERS), out=out, work_dir=tmp_path / "w", strict=True,
                            on_launch=lambda job, proc: procs.setdefault(job, proc))
    assert err.value.rule == "exclusive-io" and err.value.subject == "I/O node 0"
    assert err.value.detail in ("grants job b while a transfers", "grants job a while b transfers")
    assert sorted(procs) == ["a", "b"]
    assert all(p.poll() is not None for p in procs.values())  # no mpiexec left running
    trace = read_trace(out)  # the partial trace of the stopped run
    assert not trace.attrs["complete"]
    jobs = {r["id"]: r for r in trace.jobs.rows()}
    assert sorted(jobs) == ["a", "b"]
    assert {r["status"] for r in jobs.values()} <= {"killed", "failed"}
    assert any(r["status"] == "killed" for r in jobs.values())
    assert {f["reason"] for f in trace.attrs["failures"].values()} == {"strict invariant exclusive-io"}


# --------------------------------------------------------------------- a suspended job lets go of its grant
@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_a_suspended_job_lets_go_of_the_io_node_and_asks_again_at_resume(tmp_path, monkeypatch):
    """What the load controller's lever does (SIGSTOP of the job's process tree, then the I/O nodes'
    hook), done here by hand while k holds the I/O node: a gets it meanwhile, k finishes after.  The
    stop and the continue run on the batch loop's thread, as the controller's do (one thread per
    process makes Ray calls: docs/emulator.md)."""
    from iolab.emulator.batch.run import BatchEmulation
    from iolab.emulator.suspension import Suspender, TreeLever

    todo: queue.Queue = queue.Queue()
    check_io = BatchEmulation._check_io

    def on_loop(self, force=False):  # the loop's thread runs what the test thread asks
        while not todo.empty():
            todo.get()(self)
        return check_io(self, force)

    monkeypatch.setattr(BatchEmulation, "_check_io", on_loop)
    jobs = [writer("k", 10, "400GB"), writer("a", 150, "100GB")]
    work = tmp_path / "w"
    times: dict[str, float] = {}

    def bytes_of(job: str) -> int:
        d = work / "lps" / "jobs" / job
        try:
            return sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) if d.is_dir() else 0
        except OSError:
            return 0

    def in_loop(action) -> None:
        done = threading.Event()
        todo.put(lambda run: (action(run), done.set()))
        done.wait(30)

    def on_launch(job, proc):
        if job != "k":
            return
        sus: list[Suspender] = []

        def stop(run):
            sus.append(Suspender(on_suspend=run.io.suspend, on_resume=run.io.resume, lever=TreeLever()))
            times["suspend"] = time.time()
            if not sus[0].suspend("k", proc.pid):
                times.pop("suspend")

        def cont(run):
            times["resume"] = time.time()
            sus[0].resume("k")

        def suspend_midway():
            deadline = time.time() + 60
            while time.time() < deadline and bytes_of("k") < 0.25 * 400 * GB * BS:
                time.sleep(0.02)
            in_loop(stop)
            if "suspend" in times:
                try:  # a (1 s of I/O) writes meanwhile: its files grow, then its directory goes at its end
                    wait_until("a to write its output and end while k is stopped",
                               lambda: sampler.growing("a") and not (work / "lps" / "jobs" / "a").exists(), timeout=60)
                finally:
                    in_loop(cont)

        threading.Thread(target=suspend_midway, daemon=True).start()

    with Sampler(work) as sampler:
        from iolab.emulator.batch.run import run_batch_emulation

        trace = run_batch_emulation(spec(jobs), work_dir=work, on_launch=on_launch, strict=True)
    assert set(times) == {"suspend", "resume"}
    assert {r["id"]: r["status"] for r in trace.jobs.rows()} == {"k": "ok", "a": "ok"}
    t = {k: (v - float(trace.attrs["t0"])) / TS for k, v in times.items()}
    g = grants(trace)
    k1, k2 = [r for r in g if r["job"] == "k"]
    (a,) = [r for r in g if r["job"] == "a"]
    assert k1["grant"] < t["suspend"] <= k1["release"] < t["suspend"] + 50  # released at the suspension
    assert t["resume"] <= k2["request"] < t["resume"] + 50  # asked again at resume
    assert k1["release"] <= a["grant"] and a["release"] <= k2["grant"] + 1e-9  # a had the I/O node meanwhile
    k_write = next(r for r in trace.phases.rows() if r["job"] == "k" and r["kind"] == "write")
    assert k_write["end"] == pytest.approx(k2["release"], abs=1e-6)
    assert k_write["volume"] == pytest.approx(400 * GB, rel=1e-3)  # every byte, across the two grants
    # on disk: k's files did not grow while it was stopped; a's did
    stopped = [x for x in sampler.growing("k") if times["suspend"] + 0.2 < x < times["resume"]]
    assert stopped == []
    assert any(times["suspend"] < x < times["resume"] for x in sampler.growing("a"))


# --------------------------------------------------------------------- the state, without Ray
def _state(policy: str = "fifo", strict: bool = True):
    from iolab.middleware.io_node_state import IONodesState

    from iolab.workloads.steps import Step

    st = IONodesState(2, policy=policy, rate=1.0, rates={"lps": 10.0, "hps": 10.0, "stage": 10.0}, strict=strict)
    st.start(0.0)
    steps = [Step("compute", 1.0), Step("write", 100.0, "lps")]
    for rank, job in enumerate(("a", "b")):
        st.add_job(job, rank, {0: {"ranks": [0], "bytes": [0, 100]}}, steps, [0, 1], 0.0, 0.0)
    return st


def test_strict_mode_catches_a_planted_double_grant_on_an_exclusive_io_node(monkeypatch):
    from iolab.middleware.policies import IONodeArbiter

    st = _state("fifo")
    st.request("a", 0, 1, "write", 100, 1.0)
    st.request("b", 0, 1, "write", 100, 1.0)

    def greedy(self, now):  # the bug: grant every waiting request, though the policy is a list policy
        granted = list(self._waiting.values())
        self._waiting.clear()
        for r in granted:
            self.active[r.app] = r
        return granted

    monkeypatch.setattr(IONodeArbiter, "dispatch", greedy)
    with pytest.raises(InvariantViolation) as err:
        st.dispatch(2.0)
    assert err.value.rule == "exclusive-io" and "I/O node 0" in str(err.value)
    with pytest.raises(InvariantViolation):  # the run is stopped: every later call says so
        st.book("a", 0, 10, 2.1)


def test_a_suspended_job_lets_go_of_its_grant_and_asks_again_for_the_bytes_left():
    st = _state("fifo")
    st.request("a", 0, 1, "write", 100, 1.0)
    st.request("b", 0, 1, "write", 100, 1.5)
    assert st.dispatch(1.0) == [("a", 0, 1)]
    st.book("a", 0, 40, 1.1)
    st.suspend("a", 2.0)
    assert st.dispatch(2.0) == [("b", 0, 1)]  # the I/O node went to b
    assert st.book("a", 0, 10, 2.1) is None  # a's ranks (continued) wait for a new grant
    st.resume("a", 3.0)
    assert st.parts[("a", 0)].req.volume == pytest.approx(60.0)  # asks again for the 60 B it had not moved
    assert st.parts[("a", 0)].req.io_time == pytest.approx(60.0)  # at the I/O node's 1 B/s (the tier's is 10)
    assert st.dispatch(3.0) == []  # b still transfers (fifo: exclusive)
    assert st.part_done("b", 0, 1, 0, 4.0)
    assert st.dispatch(4.0) == [("a", 0, 1)]
    assert st.part_done("a", 0, 1, 0, 5.0)
    rows = sorted(st.records()["grants"])
    assert rows == [("a", 1, 0, 1.0, 1.0, 2.0), ("a", 1, 0, 3.0, 4.0, 5.0), ("b", 1, 0, 1.5, 2.0, 4.0)]


def test_a_dropped_job_frees_its_io_node_and_its_ranks_are_told():
    from iolab.middleware.io_node_state import JobGone

    st = _state("fifo")
    st.request("a", 0, 1, "write", 100, 1.0)
    st.request("b", 0, 1, "write", 100, 1.0)
    assert [g[0] for g in st.dispatch(1.0)] == ["a"]
    assert st.drop("a", "killed", 2.0)
    assert st.dispatch(2.0) == [("b", 0, 1)]
    with pytest.raises(JobGone):
        st.book("a", 0, 10, 2.5)
    assert st.records()["grants"][0][2:] == (0, 1.0, 1.0, 2.0)  # a's grant row ends at the drop


@pytest.mark.long
@pytest.mark.ray
@pytest.mark.mpi
def test_the_live_view_of_a_real_run_shows_who_holds_the_io_node_and_who_waits(fifo_run):
    """``--live``'s snapshots (every half wall second) of the two ``fifo`` writers, against the trace's
    grant rows: at a snapshot's time the job whose grant row covers it holds the I/O node, the job whose
    request is pending waits (snapshots near a row's ends are left out: the snapshot's clock is read
    before the actor answers).  The run is the one test_fifo_grants_one_job_at_a_time... reads."""
    trace, _, view = fifo_run
    rows = grants(trace)
    assert [r["job"] for r in rows] in (["a", "b"], ["b", "a"])
    edges = [x for r in rows for x in (r["request"], r["grant"], r["release"])]
    margin = 20.0  # spec s (0.2 s wall)
    both = 0
    for snap in view.seen:
        t = snap["time"]
        assert snap["io_policy"] == "fifo" and [n["node"] for n in snap["io_nodes"]] == [0]
        if any(abs(t - e) < margin for e in edges):
            continue
        node = snap["io_nodes"][0]
        assert node["grant"] == [r["job"] for r in rows if r["grant"] <= t < r["release"]], (t, node, rows)
        assert node["waiting"] == [r["job"] for r in rows if r["request"] <= t < r["grant"]], (t, node, rows)
        assert node["held"] == []
        both += bool(node["grant"] and node["waiting"])
    assert both >= 2  # the view showed one writer holding the I/O node while the other waited


# --------------------------------------------------------------------- the live view's data
@pytest.mark.parametrize("policy", ["shortest-io", "fifo"])
def test_the_snapshot_names_who_holds_each_io_node_and_who_waits_in_the_order_they_are_granted(policy):
    """Four writers on I/O node 0 (the first takes it), one on I/O node 1, suspended while it waits: the
    snapshot's queue is the order in which the arbiter then really grants them (the reference)."""
    from iolab.middleware.io_node_state import IONodesState
    from iolab.workloads.steps import Step

    st = IONodesState(2, policy=policy, rate=1.0, rates={"lps": 10.0, "hps": 10.0, "stage": 10.0}, strict=True)
    st.start(0.0)
    volumes = {"a": 50, "b": 300, "c": 100, "d": 200, "e": 70}
    for rank, (job, v) in enumerate(volumes.items()):
        node = 1 if job == "e" else 0
        st.add_job(job, rank, {node: {"ranks": [0], "bytes": [0, v]}}, [Step("compute", 1.0), Step("write", v, "lps")],
                   [0, 1], 0.0, 0.0)
    st.request("a", 0, 1, "write", 50, 1.0)
    assert st.dispatch(1.0) == [("a", 0, 1)]
    for i, job in enumerate(("b", "c", "d")):  # arrive in this order, in the order of no size
        st.request(job, 0, 1, "write", volumes[job], 2.0 + i)
    st.request("e", 1, 1, "write", 70, 2.0)
    st.suspend("e", 2.5)
    snap = st.snapshot(6.0)
    assert snap["policy"] == policy and snap["suspended"] == ["e"]
    n0, n1 = snap["io_nodes"]
    assert (n0["node"], n0["grant"], n0["held"]) == (0, ["a"], [])
    assert (n1["node"], n1["grant"], n1["waiting"], n1["held"]) == (1, [], [], ["e"])
    granted, holder, t = [], "a", 7.0
    while True:  # release the holder, see whom the arbiter grants next
        st.book(holder, 0, volumes[holder], t)
        st.part_done(holder, 0, 1, 0, t)
        nxt = st.dispatch(t)
        if not nxt:
            break
        holder = nxt[0][0]
        granted.append(holder)
        t += 1.0
    assert n0["waiting"] == granted
    assert granted == (["c", "d", "b"] if policy == "shortest-io" else ["b", "c", "d"])
    assert st.snapshot(t)["io_nodes"][0] == {"node": 0, "grant": [], "waiting": [], "held": []}


def test_under_shared_the_snapshot_shows_every_granted_part_and_waiting_ones_in_arrival_order():
    st = _state("shared")
    st.request("b", 0, 1, "write", 100, 2.0)
    st.request("a", 0, 1, "write", 100, 3.0)
    assert st.snapshot(3.0)["io_nodes"][0] == {"node": 0, "grant": [], "waiting": ["b", "a"], "held": []}
    assert sorted(st.dispatch(3.0)) == [("a", 0, 1), ("b", 0, 1)]
    assert st.snapshot(3.0)["io_nodes"][0] == {"node": 0, "grant": ["a", "b"], "waiting": [], "held": []}
