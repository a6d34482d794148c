"""The ``slurm`` scheduler on hand-made queues where slurmctld decides otherwise than textbook EASY or
conservative backfilling, and its node rules (cons_tres's best fit, the will-run groups, the backfill map).

Each run is the simulator on an inline spec (8 nodes, jobs submitted at given seconds), strict."""

from __future__ import annotations

import pytest

from iolab.middleware.policies.batch.slurm import slurm_limit
from iolab.middleware.policies.batch.slurm_nodes import NodeSpace, best_fit, will_run
from iolab.specs.load import parse_spec
from iolab.specs.slurm_conf import SlurmConf
from iolab.errors import IolabError
from iolab.sim.batch.run import simulate_batch


def ids(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def starts(jobs, scheduler, nodes=8) -> dict[str, float]:
    spec = parse_spec({"kind": "batch", "platform": {"nodes": nodes, "lps": {"rate": "1 GB/s"},
                                                      "hps": {"rate": "15 GB/s", "capacity": "1TB"},
                                                      "stage_rate": "5 GB/s"},
                       "scheduler": scheduler, "workload": {"source": "inline", "jobs": jobs}})
    t = simulate_batch(spec, strict=True)
    return dict(zip(t.jobs.columns["id"], t.jobs.columns["start"]))


def job(id, submit, nodes, walltime, runtime):
    return {"id": id, "submit": submit, "nodes": nodes, "walltime": walltime, "runtime": runtime}


def test_best_fit_takes_the_tightest_run_else_the_largest_first():
    free = 0b1110_0110_1111  # runs: 0-3 (4), 5-6 (2), 9-11 (3)
    assert ids(best_fit(free, 2)) == [5, 6]  # the tightest run that holds it
    assert ids(best_fit(free, 3)) == [9, 10, 11]
    assert ids(best_fit(free, 4)) == [0, 1, 2, 3]
    assert ids(best_fit(free, 6)) == [0, 1, 2, 3, 5, 6]  # the largest run, then the tightest for the rest
    assert best_fit(free, 10) is None


def test_will_run_starts_at_the_end_of_the_last_job_of_the_group_it_fits_after():
    # 4 nodes, all busy: jobs end at 100 (node 0), 140 (node 1), 200 (nodes 2-3).  The first group ends at
    # 100 rounded up to 120 plus 30 s: 100 and 140 go together; a 2-node job fits after that group, and
    # Slurm reports the group's last end, 140, though it fits at 100 already
    running = [(100.0, 0b0001), (140.0, 0b0010), (200.0, 0b1100)]
    start, mask = will_run(2, 0b1111, 0, running, 0.0)
    assert (start, ids(mask)) == (140.0, [0, 1])
    # the groups are aligned on the wall clock: with the run's 0 at 20 s on it, 100 is 120 on the clock,
    # the barrier 150 (130 in the run) and the first group ends by 160: 140 is still in it
    start, _ = will_run(2, 0b1111, 0, running, 0.0, epoch=20.0)
    assert start == 140.0
    start, _ = will_run(2, 0b1111, 0, [(100.0, 0b0001), (165.0, 0b0010), (300.0, 0b1100)], 0.0, epoch=20.0)
    assert start == 165.0  # 165 > 160: a group of its own (in the doubled window)
    start, mask = will_run(3, 0b1111, 0, running, 0.0)
    assert (start, ids(mask)) == (200.0, [0, 1, 2])  # a second, doubled window: 200 > 150


def test_node_space_reserves_and_reports_the_next_boundary():
    space = NodeSpace(0.0, 1000.0, 0b1111, 60.0)
    space.reserve(120.0, 240.0, 0b0011)
    assert [s[:2] for s in space.segs] == [[0.0, 120.0], [120.0, 240.0], [240.0, 1000.0]]
    # overlaps the reservation: nodes 2-3 only; more are free after the reservation's end, 240
    avail, later = space.avail(0b1111, 30.0, 150.0)
    assert (ids(avail), later) == ([2, 3], 240.0)
    avail, later = space.avail(0b1111, 0.0, 100.0)
    assert ids(avail) == [0, 1, 2, 3]
    assert space.overlaps(0b0001, 100.0, 130.0) and not space.overlaps(0b0100, 100.0, 130.0)
    space.reserve(0.0, 10.0, 0b1000)  # shorter than the resolution: one resolution long
    assert ids(space.avail(0b1111, 0.0, 50.0)[0]) == [0, 1, 2]


def test_time_limits_are_whole_minutes_rounded_up():
    assert [slurm_limit(w) for w in (1, 60, 61, 119.5, 3600)] == [60, 60, 120, 120, 3600]


QUEUE_MAIN = [job("a", 0, 4, 120, 100), job("b", 0, 4, 120, 20), job("c", 1, 8, 60, 10), job("d", 2, 2, 60, 10)]


def test_a_job_end_starts_only_the_priority_prefix_the_backfill_pass_the_rest():
    # b ends at 20: c (8 nodes) heads the queue and cannot start; EASY backfills d at once (it ends long
    # before c's reservation); Slurm's main scheduler stops at c and d waits for the backfill pass at 30
    # (every bf_interval from the first one at 0)
    assert starts(QUEUE_MAIN, "easy")["d"] == 20
    assert starts(QUEUE_MAIN, "conservative")["d"] == 20
    assert starts(QUEUE_MAIN, "slurm")["d"] == 30
    assert starts(QUEUE_MAIN, {"kind": "slurm", "conf": {"SchedulerParameters": "bf_interval=7"}})["d"] == 21
    # sched/builtin has no backfill pass: a and b start at the background loop's pass half a second after
    # their submission, as above, and d waits behind c
    builtin = starts(QUEUE_MAIN, {"kind": "slurm", "conf": {"SchedulerType": "sched/builtin"}})
    assert (builtin["a"], builtin["c"], builtin["d"]) == (0.5, 100.5, 110.5)


QUEUE_RES = [job("A", 0, 4, 100, 100), job("B", 0, 2, 300, 300),
             job("J", 1, 6, 120, 30), job("C", 2, 1, 60, 10)]


def slurm_res(resolution: int, epoch: float) -> dict:
    return {"kind": "slurm", "conf": {"SchedulerParameters": f"bf_interval=30,bf_resolution={resolution}",
                                      "epoch": epoch}}


def test_a_reservation_rounded_down_to_bf_resolution_keeps_a_narrow_job_waiting():
    # A and B start at 0.5 (the background loop's pass for their submission; the backfill pass at 0 does
    # not see jobs of its own second).  A (nodes 0-3, limit 2 minutes) is expected to end at 120.5; J (6
    # nodes) gets a reservation from then on
    # nodes 0-3 and 6-7; C (1 node, 1 minute) asks at the pass at 30 for [30, 90].  Textbook backfilling
    # starts C at its submission (it ends before J's reservation); Slurm at its first pass, 30, when the
    # reservation starts at 120 on the run's clock.  With the run's time 0 at 45 s past a minute on the
    # wall clock, J's reservation at 165.5 s is rounded down to 120 on the wall clock, 75 in the run: C's
    # window overlaps it, the free nodes 6-7 are reserved, and C waits for J to end (130.5) although
    # bf_resolution=1 still starts it at 30
    assert starts(QUEUE_RES, "easy")["C"] == 2 and starts(QUEUE_RES, "conservative")["C"] == 2
    assert starts(QUEUE_RES, slurm_res(60, 0))["C"] == 30
    assert starts(QUEUE_RES, slurm_res(1, 45))["C"] == 30
    coarse = starts(QUEUE_RES, slurm_res(60, 45))
    assert coarse["J"] == 100.5 and coarse["C"] == 130.5


def test_conf_is_slurm_conf_and_refuses_unknown_keys():
    c = SlurmConf(SchedulerParameters="bf_interval=5,bf_continue,bf_yield_interval=100",
                  PriorityMaxAge="1-0", PriorityCalcPeriod=1, PriorityFavorSmall="YES")
    sp = c.SchedulerParameters
    assert (sp.bf_interval, sp.bf_continue, sp.ignored) == (5, True, ("bf_yield_interval",))
    assert (c.PriorityMaxAge, c.PriorityCalcPeriod, c.PriorityFavorSmall) == (86400, 60, True)
    assert sp.line() == "bf_interval=5,bf_continue"
    with pytest.raises(IolabError, match="scheduler.conf.SchedulerParameters.*bf_intreval"):
        parse_spec({"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": 1}, "hps": {"rate": 1, "capacity": 1},
                                                  "stage_rate": 1},
                    "scheduler": {"kind": "slurm", "conf": {"SchedulerParameters": "bf_intreval=5"}},
                    "workload": {"source": "inline", "jobs": [job("a", 0, 1, 60, 1)]}})


def test_the_record_of_a_real_replay_is_predicted_to_the_second():
    # tests/data/slurm/replay-8nodes.jobcomp: the local cluster's job completion log of a replay of 10
    # jobs on 8 nodes (default SchedulerParameters), whose backfill cycles ran at :12 and :42 past the
    # minute (sdiag); textbook EASY backfills two narrow jobs 28 and 36 s early.  From the records' whole
    # seconds alone the model's starts are a second early where the background loop's pass for the first
    # submissions came in the next second (its phase is not recorded: it waits half a turn)
    from pathlib import Path
    from iolab.validation.slurm_replay import compare
    from iolab.workloads.slurm_accounting import read_jobcomp, wall_seconds

    acc = read_jobcomp(Path(__file__).resolve().parents[3] / "data" / "slurm" / "replay-8nodes.jobcomp")
    r = compare(acc.kept, 8, SlurmConf(bf_cycle_at=wall_seconds("2026-12-06T18:46:12")))
    by = {p.policy: p for p in r.results}
    assert by["slurm"].max_abs <= 1 and abs(by["slurm"].makespan_error) <= 0.02
    assert by["easy"].max_abs == 36 and by["easy"].makespan_error < -0.1
    # without the cycle's phase the cycles start at the first submission: errors within the interval
    r = compare(acc.kept, 8, SlurmConf())
    assert r.slurm.share == 1.0 and 0 < r.slurm.max_abs <= 30


QUEUE_PRIO = [job("a", 0, 4, 60, 50), job("x", 3, 1, 60, 20), job("y", 4, 4, 60, 20)]


@pytest.mark.parametrize("conf, first", [
    ({}, "x"),  # priority/basic: submit order
    ({"PriorityType": "priority/multifactor", "PriorityWeightJobSize": 1000}, "y"),  # larger first
    ({"PriorityType": "priority/multifactor", "PriorityWeightJobSize": 1000, "PriorityFavorSmall": "YES"}, "x"),
    ({"PriorityType": "priority/multifactor", "PriorityWeightAge": 1000, "PriorityMaxAge": "0:10",
      "PriorityCalcPeriod": 1}, "x"),  # age only: the older job
])
def test_the_priority_order_decides_who_takes_the_nodes_at_a_job_end(conf, first):
    s = starts([dict(j) for j in QUEUE_PRIO], {"kind": "slurm", "conf": {**conf, "SchedulerType": "sched/builtin"}},
               nodes=4)
    other = "y" if first == "x" else "x"
    assert s[first] == s["a"] + 50 and s[other] == s[first] + 20, s
