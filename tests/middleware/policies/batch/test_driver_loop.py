"""The batch driver's loop under two clocks: the simulator's (none: it jumps to its next event) and a polled one.

``Polled`` is a runtime written here the way the real run is built: it learns of a job's end only when it
polls (a poll is its own event, every ``poll`` seconds), and its clock may hand back a later time than the
one asked for (a wall clock that woke late).  With polls on the jobs' own grid and a clock on time, it must
take every decision the simulator takes, at the same times; with a late clock, every stamp of an instant is
the instant's and never goes back (the kernel's checker, strict, sees every change).
"""

from __future__ import annotations

import math

import pytest

from iolab.middleware.policies.batch.checker import BatchChecker
from iolab.middleware.policies.batch.driver import BatchDriver, BatchLoop
from iolab.middleware.policies.batch.kernel import FUTURE, BatchKernel
from iolab.sim.batch.run import run_batch
from iolab.specs.batch import BatchExperiment
from iolab.workloads import load_workload


class Polled(BatchLoop):
    def __init__(self, kernel: BatchKernel, poll: float, late: float = 0.0):
        self.kernel, self.driver = kernel, BatchDriver(kernel, self)
        self.state, self.links, self.controller = kernel.jobs, {}, None
        self.poll, self.late = poll, late
        self.clock = self._clock
        self.asked: list[tuple[float, float]] = []  # (time asked for, the instant's time)
        self.ends: dict[int, float] = {}  # job index -> when its processes would exit
        self.polls = 0

    def _clock(self, t: float) -> float:
        now = max(t + self.late, self.asked[-1][1] if self.asked else 0.0)
        self.asked.append((t, now))
        return now

    def _start(self) -> None:
        self.push_poll(0.0)

    def begin(self, s, t: float) -> None:
        self.ends[s.index] = t + float(s.job.runtime)

    def halt(self, s, t, state, message) -> None:
        pass

    def pause(self, s, t) -> bool:
        return False

    def unpause(self, s, t) -> bool:
        return False

    def _poll(self, t: float) -> None:
        self.polls += 1
        k = self.kernel
        for s in list(k.running.values()):
            if self.ends[s.index] <= t:
                self.driver.end(s, t)
        if any(s.state == FUTURE for s in self.state) or k.queue or k.running:
            self.push_poll(t + self.poll)
        else:
            self._heap.clear()


def experiment(scheduler: str) -> BatchExperiment:
    jobs = [{"id": f"j{i}", "submit": 7 * i, "nodes": 1 + (5 * i) % 8, "walltime": 400 + 30 * (i % 5),
             "runtime": 40 + (37 * i) % 300} for i in range(40)]
    return BatchExperiment.model_validate({
        "name": "loop", "platform": {"nodes": 8, "lps": {"rate": "1 GB/s"},
                                     "hps": {"rate": "15 GB/s", "capacity": "100 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": scheduler, "workload": jobs})


def polled(spec: BatchExperiment, poll: float, late: float = 0.0) -> Polled:
    k = BatchKernel.from_spec(spec, load_workload(spec), observer=BatchChecker())
    run = Polled(k, poll, late)
    run.loop()
    return run


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "conservative"])
def test_a_polled_runtime_on_time_takes_the_simulators_decisions(scheduler):
    spec = experiment(scheduler)
    sim = {s.queued.id: (s.start, s.end, s.status) for s in run_batch(spec).jobs}
    run = polled(spec, poll=1.0)  # every submit and runtime is a whole second: an end is seen when it happens
    assert {s.queued.id: (s.start, s.end, s.status) for s in run.state} == sim
    assert len({st for st, _, _ in sim.values()}) > 10  # the schedule is not trivial: starts at many times
    assert all(now == t for t, now in run.asked)


def test_a_late_clock_stamps_each_instant_once_and_never_goes_back():
    spec = experiment("easy")
    sim = {s.queued.id: (s.start, s.end) for s in run_batch(spec).jobs}
    run = polled(spec, poll=2.0, late=0.25)
    instants = [now for _, now in run.asked]
    assert instants == sorted(instants) and all(now >= t for t, now in run.asked)
    got = {s.queued.id: (s.start, s.end) for s in run.state}
    assert all(s.status == "ok" for s in run.state)
    for job, (start, end) in got.items():
        assert start in instants and end in instants, job  # stamped with an instant's time
        assert end - start >= float(spec.workload.jobs[int(job[1:])].runtime)  # seen ended at a poll after its end
        assert end - start <= float(spec.workload.jobs[int(job[1:])].runtime) + 2.0 + 0.25 + 1e-9, job
    # late polls delay the ends, so later jobs start later than in the simulator, never earlier (FCFS order)
    assert max(e for _, e in got.values()) > max(e for _, e in sim.values())


def test_the_loop_ends_when_the_runtime_has_nothing_left():
    spec = experiment("fcfs")
    run = polled(spec, poll=5.0)
    last = max(s.end for s in run.state)
    assert run.asked[-1][1] == pytest.approx(math.ceil(last / 5.0) * 5.0)  # the poll that saw the last end
    assert not run._heap
