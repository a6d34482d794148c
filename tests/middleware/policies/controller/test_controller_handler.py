"""The job state handler of dheenadayalan2017 §4.3 on a scripted load."""

import pytest

from iolab.middleware.policies.controller import (RESUME, SUSPEND, ControllerParams, JobStateHandler, JobUsage,
                                                  LoadController, OpenFile)

GB = 1e9


def io_job(job, start, now, volume="hps", size=5 * GB, age=1.0):
    return JobUsage(job, start, (OpenFile(f"/{volume}/{job}.ckpt", volume, size, now - age),))


def cpu_job(job, start):
    return JobUsage(job, start, ())


def kinds(actions):
    return [(a.kind, a.job) for a in actions]


def jobs_at(now, *usages):
    return {u.job: u for u in usages}


def test_suspends_the_newest_keeps_the_oldest_and_resumes_in_queue_order():
    h = JobStateHandler(omega=4000e6)
    now = 1000.0
    running = lambda *ids: jobs_at(now, *[io_job(j, s, now) for j, s in (("a", 0), ("b", 10), ("c", 20), ("d", 30))
                                          if j in ids])
    everyone = running("a", "b", "c", "d")
    # loaded: one suspension per cycle, the newest start first
    assert kinds(h.cycle(now, everyone, {"hps": True})) == [(SUSPEND, "d")]
    assert kinds(h.cycle(now, everyone, {"hps": True})) == [(SUSPEND, "c")]
    assert kinds(h.cycle(now, everyone, {"hps": True})) == [(SUSPEND, "b")]
    # only the oldest runs: it is never suspended
    assert h.cycle(now, everyone, {"hps": True}) == []
    assert h.run["hps"] == ["a"]
    assert h.suspended() == ["d", "c", "b"]
    # not loaded: resumed in the order they were suspended, one per cycle
    assert kinds(h.cycle(now, everyone, {"hps": False})) == [(RESUME, "d")]
    assert kinds(h.cycle(now, everyone, {"hps": False})) == [(RESUME, "c")]
    assert kinds(h.cycle(now, everyone, {"hps": False})) == [(RESUME, "b")]
    assert h.cycle(now, everyone, {"hps": False}) == []
    assert h.run["hps"] == ["a", "b", "c", "d"]


def test_never_suspends_a_lone_job():
    h = JobStateHandler(omega=0)
    now = 500.0
    assert h.cycle(now, jobs_at(now, io_job("a", 0, now)), {"hps": True}) == []
    # a second job on another volume does not make the first one share
    two = jobs_at(now, io_job("a", 0, now), io_job("b", 5, now, volume="lps"))
    assert h.cycle(now, two, {"hps": True, "lps": True}) == []


def test_skips_cpu_only_small_file_and_idle_jobs():
    h = JobStateHandler(omega=4000e6, recent=60)
    now = 1000.0
    jobs = jobs_at(now, io_job("old", 0, now),
                   cpu_job("cpu", 50),  # no file on the volume
                   io_job("small", 40, now, size=100e6),  # below omega
                   io_job("idle", 30, now, age=61.0),  # unchanged for more than 60 s
                   io_job("big", 10, now))
    acts = h.cycle(now, jobs, {"hps": True})
    assert kinds(acts) == [(SUSPEND, "big")]  # the only candidate; the newer ones are skipped
    assert h.candidate(jobs["small"], "hps", now) == "files below omega"
    assert h.candidate(jobs["idle"], "hps", now) == "files unchanged"
    assert h.candidate(jobs["cpu"], "hps", now) == "no file on the volume"
    # nothing else may be suspended: the oldest stays, the rest are not candidates
    assert h.cycle(now, jobs, {"hps": True}) == []


def test_no_resume_for_a_volume_in_the_cycle_that_suspended_there():
    h = JobStateHandler(omega=0)
    now = 100.0
    three = jobs_at(now, io_job("a", 0, now), io_job("b", 1, now), io_job("c", 2, now))
    assert kinds(h.cycle(now, three, {"hps": True})) == [(SUSPEND, "c")]
    # still loaded: b is suspended; c is NOT resumed in this cycle
    assert kinds(h.cycle(now, three, {"hps": True})) == [(SUSPEND, "b")]


def test_ended_jobs_leave_the_queue_and_an_empty_volume_resumes_its_head():
    h = JobStateHandler(omega=0)
    now = 100.0
    two = jobs_at(now, io_job("a", 0, now), io_job("b", 1, now))
    assert kinds(h.cycle(now, two, {"hps": True})) == [(SUSPEND, "b")]
    # a ends; the window is still loaded, but no job runs on the volume: b must not stay stopped
    acts = h.cycle(now, jobs_at(now, two["b"]), {"hps": True})
    assert kinds(acts) == [(RESUME, "b")] and acts[0].reason == "no job runs on the volume"
    # a suspended job that ended is forgotten
    h2 = JobStateHandler(omega=0)
    three = jobs_at(now, io_job("a", 0, now), io_job("b", 1, now), io_job("c", 2, now))
    h2.cycle(now, three, {"hps": True})
    assert h2.suspended() == ["c"]
    h2.cycle(now, jobs_at(now, three["a"], three["b"]), {"hps": False})
    assert h2.suspended() == []


def test_release_all_resumes_every_suspended_job():
    h = JobStateHandler(omega=0)
    now = 100.0
    jobs = jobs_at(now, io_job("a", 0, now), io_job("b", 1, now), io_job("c", 2, now),
                   io_job("x", 0, now, volume="lps"), io_job("y", 3, now, volume="lps"))
    h.cycle(now, jobs, {"hps": True, "lps": True})
    h.cycle(now, jobs, {"hps": True, "lps": True})
    assert sorted(h.suspended()) == ["b", "c", "y"]
    assert sorted(kinds(h.release_all())) == [(RESUME, "b"), (RESUME, "c"), (RESUME, "y")]
    assert h.suspended() == []


def test_load_controller_window_handler_and_sleep_together():
    p = ControllerParams(d=10, ws=1, alpha=0.75, r_threshold=60, t=180, short_sleep=60, omega=0)
    assert p.window == 6
    c = LoadController(p)
    now = 0.0
    jobs = jobs_at(now, io_job("a", 0, now), io_job("b", 1, now))
    for r in [100, 100, 100, 100]:  # 4/6 < 0.75: not yet loaded
        c.observe("hps", r)
    assert c.score("hps") == c.window("hps").score() == 4 / 6  # what the sample rows record
    cy = c.cycle(now, jobs, {"hps": 30.0})
    assert cy.actions == () and cy.loaded == {"hps": False} and cy.sleep == 60
    c.observe("hps", 100)  # 5/6 >= 0.75
    cy = c.cycle(now, jobs, {"hps": 90.0})
    assert kinds(cy.actions) == [(SUSPEND, "b")] and cy.sleep == 180
    for r in [5, 5]:
        c.observe("hps", r)
    cy = c.cycle(now, jobs, {"hps": 10.0})
    assert kinds(cy.actions) == [(RESUME, "b")] and cy.sleep == 60


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        JobStateHandler(omega=-1)
