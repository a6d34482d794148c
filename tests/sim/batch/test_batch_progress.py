"""A long batch simulation says how far it is; the hook observes and decides nothing."""

from __future__ import annotations

import io

import pytest

from iolab.cli.simulate import SimProgress
from iolab.middleware.policies.batch import driver as engine_mod  # the batch loop calls the hook
from iolab.sim.batch.run import run_batch
from iolab.specs.load import parse_spec


def spec(n=400):
    jobs = [{"id": f"j{i}", "submit": 10.0 * i, "nodes": 1 + i % 7, "walltime": 500.0, "runtime": 100.0 + 37 * (i % 11)}
            for i in range(n)]
    return parse_spec({"kind": "batch", "platform": {"nodes": 16, "lps": {"rate": 1e9}, "hps": {"rate": 15e9, "capacity": 1e12},
                                    "stage_rate": 5e9},
                       "scheduler": "easy", "workload": {"source": "inline", "jobs": jobs}})


def test_progress_is_called_with_growing_counts_and_changes_nothing(monkeypatch):
    monkeypatch.setattr(engine_mod, "PROGRESS_EVERY", 50)
    calls = []
    with_hook = run_batch(spec(), progress=lambda t, done, total: calls.append((t, done, total)))
    without = run_batch(spec())
    assert len(calls) >= 5
    assert all(total == 400 for _, _, total in calls)
    assert [d for _, d, _ in calls] == sorted(d for _, d, _ in calls) and calls[-1][1] <= 400
    assert [t for t, _, _ in calls] == sorted(t for t, _, _ in calls)
    assert [(s.start, s.end) for s in with_hook.jobs] == [(s.start, s.end) for s in without.jobs]


def test_progress_lines_are_throttled_to_the_wall_clock():
    out = io.StringIO()
    p = SimProgress("kth", every=3600.0, stream=out)
    p(10.0, 5, 100)  # an hour has not passed: nothing
    assert out.getvalue() == ""
    p.next = 0.0  # as if the hour had passed
    p(20.0, 50, 100)
    line = out.getvalue()
    assert line.startswith("kth: 50/100 jobs submitted (50 %)") and line.count("\n") == 1


class _DropsCtrlC:
    """A finalizer in which a real SIGINT lands: Python prints "Exception ignored" and drops the
    KeyboardInterrupt, as in an import's module-lock callback."""

    def __del__(self):
        import os
        import signal
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between these bytecodes, within __del__
            pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop is the point
def test_a_batch_run_stops_at_its_next_progress_call_after_a_dropped_ctrl_c(monkeypatch):
    import signal

    from iolab import signals

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's default, as in a terminal
    monkeypatch.setattr(engine_mod, "PROGRESS_EVERY", 50)
    calls = []

    def hook(t, done, total):
        SimProgress("x", every=3600.0, stream=io.StringIO())(t, done, total)
        calls.append(done)
        if len(calls) == 2:
            _DropsCtrlC()  # freed at once: the SIGINT's KeyboardInterrupt is dropped here

    raised = False
    try:
        with signals.ctrl_c_noted():
            try:
                run_batch(spec(), progress=hook)
            except KeyboardInterrupt:
                raised = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert raised and len(calls) == 2  # dropped after the second call, raised by the third
    assert not signals.ctrl_c_came()  # forgotten once the command's scope is left
