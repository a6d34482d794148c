"""The fast paths of the batch simulator give exactly what the plain code they shortcut gives.

* ``Profile.from_snapshot`` accumulates the running jobs' releases in one pass; the plain way
  adds each release over ``[end, inf)`` (``Profile.add``).  Same breakpoints, same counts,
  the same floats, on random snapshots with overruns, ties and HPS bytes.
* ``swf._parse_line`` converts a well-formed line in one ``map``; ``swf._check_fields`` is the
  field-by-field parser that names the first bad field.  Same record or the same message.
* FCFS plans by a sweep over the node releases (``fcfs_starts``); the plain way searches the
  profile for each job in turn.  The same decision (starts and plan, float for float) on random
  snapshots with overruns, ties, integer and fractional times, full machines and long queues.
* FCFS with plan tracking re-plans only until its plan joins the previous one (``fcfs_replan``),
  and the kernel re-places node sets only until its replay joins the previous one
  (``replay_in_start_order``): the same plans and sets as planning from scratch, on random
  decision sequences with arrivals, starts, early ends, overruns and cancellations.
* EASY without projections decides by the shadow time and the extra nodes (the textbook rule);
  with a profile search, the same decision on random snapshots.  The quick entries of EASY and FCFS
  (``quick_starts``: no snapshot, the jobs to start) start what the profile search starts.
* Both conservative variants continue the last decision's profile over an arrival-only pass:
  the same decisions as deciding from scratch.
* A profile whose free counts never fall (``Profile.rising``: built from a snapshot and held only
  from its start since) searches by bisection and reads a fit from its first segment; the walk
  gives the same starts, fits and profiles, and the flag is never set on a profile that falls.
  SAS decides on it (and keeps j1's first segment instead of the prefix minima) what it decides
  with every profile walked.
* SWF jobs are built with ``Job.model_construct`` after the parser's checks; ``model_validate``
  of the same fields gives an equal job with the same fields set.
"""

from __future__ import annotations

import math
import random

import pytest

from iolab.middleware.policies.batch.backfill import EASY, FCFS
from iolab.middleware.policies.batch.nodes import lowest, plan_node_sets, replay_in_start_order
from iolab.middleware.policies.batch.profile import Profile
from iolab.middleware.policies.batch.snapshot import HPS, LPS, QueuedJob, RunningJob, Snapshot
from iolab.workloads import swf
from iolab.specs.batch import Job


def _plain(snap: Snapshot) -> Profile:
    prof = Profile(snap.now, snap.free_nodes, float(snap.hps_free or 0.0), 1e-9 * max(1.0, snap.hps_capacity))
    for r in sorted(snap.running, key=lambda r: r.expected_end):
        end = r.expected_end if r.expected_end > snap.now else snap.now + snap.overrun_grace
        prof.add(end, math.inf, -r.nodes, -(r.storage if r.tier == HPS else 0.0))
    return prof


@pytest.mark.parametrize("seed", range(200))
def test_profile_from_snapshot_equals_adding_each_release(seed):
    rng = random.Random(seed)
    now = rng.choice([0.0, 100.0, 1234.5])
    running, used = [], 0
    for i in range(rng.randint(0, 12)):
        n = rng.randint(1, 4)
        end = now + rng.choice([-50.0, -1.0, 0.0, 0.25, 0.5, 1.0, 3.0, 10.0, 10.0, rng.uniform(0, 100)])
        tier = rng.choice([LPS, HPS])
        running.append(RunningJob(f"j{i}", n, end, tier, rng.uniform(0, 1e9) if tier == HPS else 0.0))
        used += n
    held = sum(r.storage for r in running if r.tier == HPS)
    snap = Snapshot(now=now, total_nodes=used + 5, free_nodes=rng.randint(0, 5), running=tuple(running),
                    hps_capacity=held + 1e9, overrun_grace=rng.choice([1.0, 2.0]))
    fast, plain = Profile.from_snapshot(snap), _plain(snap)
    assert (fast.times, fast.nodes, fast.hps) == (plain.times, plain.nodes, plain.hps)


def _random_snapshot(rng: random.Random) -> Snapshot:
    total = rng.choice([4, 8, 16, 32])
    now = rng.choice([0.0, 100.0, 1234.5])
    running, used = [], 0
    while used < total and rng.random() < 0.8:
        n = rng.randint(1, total - used)
        end = now + rng.choice([-50.0, -1.0, 0.0, 0.5, 1.0, 3.0, 10.0, 10.0, float(rng.randint(1, 100)),
                                rng.uniform(0, 100)])
        running.append(RunningJob(f"r{len(running)}", n, end))
        used += n
    free = total - used
    queue = tuple(QueuedJob(f"q{i}", 0.0, rng.randint(1, total),
                            rng.choice([1.0, 2.0, 10.0, float(rng.randint(1, 60)), rng.uniform(0.1, 50)]))
                  for i in range(rng.randint(0, 40)))
    return Snapshot(now=now, total_nodes=total, free_nodes=free, queue=queue, running=tuple(running),
                    overrun_grace=rng.choice([1.0, 2.0]))


def test_fcfs_release_sweep_plans_what_the_profile_search_plans():
    rng = random.Random(11)
    ties = later = 0
    for case in range(600):
        snap = _random_snapshot(rng)
        for project in (False, True):
            fast, plain = FCFS(project)._decide(snap), FCFS(project)._decide_on_profile(snap)
            assert fast == plain, (case, project)
        starts = [e.start for e in plain.plan]  # the projected plan's
        ties += len(starts) - len(set(starts))
        later += sum(t > snap.now for t in starts)
    assert ties > 40 and later > 1000  # shared starts and jobs planned ahead were both exercised


def test_easy_shadow_rule_decides_what_the_profile_search_decides():
    """EASY without projections decides by the shadow time and the extra nodes; the same starts and
    the same plan (the head's reservation included), float for float, as its profile search."""
    rng = random.Random(23)
    backfilled = reserved = 0
    for case in range(1500):
        snap = _random_snapshot(rng)
        fast, plain = EASY(project=False), EASY(project=False)
        shadow = fast._decide_by_shadow(snap)
        assert shadow is not None, case  # every job fits the machine and has a walltime
        assert shadow == plain._decide_on_profile(snap), case
        assert fast.decide(snap) == shadow  # and decide() takes it
        heads = [e for e in shadow.plan if e.start > snap.now]
        reserved += len(heads)
        if heads:
            backfilled += sum(e.start == snap.now for e in shadow.plan[shadow.plan.index(heads[0]):])
    assert reserved > 500 and backfilled > 300  # reservations and backfilling around them were exercised


@pytest.mark.parametrize("depth", [None, 0, 1, 3])
def test_quick_entries_start_what_the_profile_search_starts(depth):
    """The quick entries (``quick_starts``: the queue, the free nodes and the sorted releases in, the jobs
    to start out, no snapshot) of EASY and FCFS without projections start the jobs that their profile
    searches start (``_decide_on_profile``, the plain code), in the decision's order, each until now +
    walltime, on random snapshots with overruns, ties and full machines; with a backfill depth too."""
    rng = random.Random(31 if depth is None else depth)
    started = ahead = 0
    for case in range(800):
        snap = _random_snapshot(rng)
        rel = _with_releases(snap).releases
        for policy in (EASY(project=False), FCFS(project=False)):
            policy.backfill_depth = depth
            assert policy.quick
            plain = type(policy)(project=False)
            plain.backfill_depth = depth
            d = plain._decide_on_profile(snap)
            jobs = policy.quick_starts(snap.now, snap.free_nodes, iter(snap.queue), rel, snap.overrun_grace)
            assert [(j.id, snap.now + j.walltime) for j in jobs] == [(st.job, st.expected_end) for st in d.starts], case
            assert all(st.tier == LPS and st.storage == 0.0 for st in d.starts)
            assert policy.plan() == ()  # the quick entry leaves no plan behind
            started += len(jobs)
            ahead += sum(q.id != st.job for q, st in zip(snap.queue, d.starts))  # a backfill: out of queue order
    assert started > 500 and (depth == 0 or ahead > 50), (started, ahead)


def test_quick_entries_are_off_where_a_plan_is_read():
    """With projections (someone reads the plan) or FCFS's HPS requests the quick entry is off: the runtime
    decides on a snapshot."""
    assert not EASY().quick and not FCFS().quick and not FCFS(project=False, hps_requests=True).quick
    assert EASY(project=False).quick and FCFS(project=False).quick


def test_easy_leaves_to_the_profile_what_the_shadow_rule_does_not_cover():
    """A job larger than the nodes that are up (the profile search refuses it), a walltime of 0 (a checked
    snapshot refuses it; it would hold nothing on the profile) and HPS bytes overcommitted (every
    segment blocked): the profile path decides."""
    big = Snapshot(now=0.0, total_nodes=8, free_nodes=2, running=(RunningJob("r", 4, 10.0),),
                   queue=(QueuedJob("small", 0.0, 2, 5.0), QueuedJob("big", 0.0, 8, 5.0)))
    assert EASY(project=False)._decide_by_shadow(big) is None
    with pytest.raises(RuntimeError, match="8 nodes .* at inf"):
        EASY(project=False).decide(big)
    zero = Snapshot.trusted(now=0.0, total_nodes=4, free_nodes=4, queue=(QueuedJob("z", 0.0, 2, 0.0),), running=())
    assert EASY(project=False)._decide_by_shadow(zero) is None
    assert EASY(project=False).decide(zero) == EASY(project=False)._decide_on_profile(zero)
    over = Snapshot.trusted(now=0.0, total_nodes=4, free_nodes=4, queue=(QueuedJob("a", 0.0, 2, 5.0),),
                            running=(), hps_capacity=1.0, hps_free=-1.0)
    pol = EASY(project=False)
    with pytest.raises(RuntimeError, match="does not fit"):
        pol.decide(over)  # what the profile search does with no HPS room anywhere


def test_fcfs_with_nodes_down_refuses_like_the_profile_search():
    snap = Snapshot(now=0.0, total_nodes=8, free_nodes=2, running=(RunningJob("r", 4, 10.0),),
                    queue=(QueuedJob("small", 0.0, 6, 5.0), QueuedJob("big", 0.0, 8, 5.0)))
    with pytest.raises(RuntimeError, match="8 nodes .* at inf"):
        FCFS()._decide_on_profile(snap)
    with pytest.raises(RuntimeError, match="8 nodes .* at inf"):
        FCFS()._decide(snap)
    # the same refusal when the job that never fits arrives after an arrival-only pass
    pol = FCFS()
    first = Snapshot(now=0.0, total_nodes=8, free_nodes=2, running=snap.running, queue=snap.queue[:1])
    assert pol.decide(first).plan[0].start == 10.0 and pol._swept is not None
    later = Snapshot(now=1.0, total_nodes=8, free_nodes=2, running=snap.running, queue=snap.queue)
    with pytest.raises(RuntimeError, match="8 nodes .* at inf"):
        pol.decide(later)


def _line(rng: random.Random) -> str:
    fields = [str(rng.randint(1, 10**6)), str(rng.choice([0, rng.randint(0, 10**7)]))]
    for name in swf.FIELDS[2:]:
        v = rng.choice([-1, rng.randint(0, 10**5), rng.uniform(0, 1e5)])
        if name in swf._INT_FIELDS and isinstance(v, float):
            v = round(v)
        fields.append(str(v))
    if rng.random() < 0.4:  # break one field in one of many ways
        i = rng.randrange(len(fields))
        fields[i] = rng.choice(["nan", "inf", "-inf", "x", "1e16", "-2e15", "2.5", "-1", "0", "-3", "1e3"])
    if rng.random() < 0.05:
        fields.pop()
    return " ".join(fields)


def test_swf_fast_parse_equals_the_field_by_field_parser():
    rng = random.Random(7)
    kinds = set()
    for lineno in range(1, 5001):
        text = _line(rng)
        fast = swf._parse_line(text, lineno)
        parts = text.split()
        slow = swf._check_fields(parts, lineno) if len(parts) == len(swf.FIELDS) else fast
        assert fast == slow, text
        kinds.add("record" if isinstance(fast, swf.SWFRecord) else fast.split(" (")[0].split(":")[0][:20])
    assert "record" in kinds and len(kinds) > 4, kinds  # both paths and several refusals were exercised


def test_swf_jobs_are_the_jobs_pydantic_would_build(tmp_path):
    path = tmp_path / "t.swf"
    rows = ["1 0 5 100 8 -1 -1 8 200 -1 1 3 1 1 1 1 -1 -1",
            "2 10 -1 -1 -1 -1 -1 4 -1 -1 1 -1 1 1 1 1 -1 -1",   # no run time, no request, no user
            "3 11 0 0 2 -1 -1 -1 50 -1 1 12 1 1 1 1 -1 -1"]
    path.write_text("; MaxNodes: 4\n; MaxProcs: 8\n" + "\n".join(rows) + "\n")
    jobs = swf.swf_jobs(path)
    assert [j.id for j in jobs] == ["1", "2", "3"]
    for j in jobs:
        fields = {k: getattr(j, k) for k in j.model_fields_set}
        again = Job.model_validate(fields)
        assert again == j and again.model_fields_set == j.model_fields_set
        assert all(type(getattr(j, k)) is type(getattr(again, k)) for k in Job.model_fields)
    assert (jobs[0].nodes, jobs[0].walltime, jobs[1].walltime, jobs[1].user) == (4, 200.0, 1.0, "unknown")


def test_place_is_earliest_fit_then_a_checked_reserve():
    """Random jobs with nodes and HPS bytes placed on two copies of a profile, one by
    ``earliest_fit`` + ``reserve`` (which checks the fit first), one by ``place`` (which does not):
    the same start and the same profile throughout; a job that never fits is refused by
    ``reserve`` and left out by ``place`` (``inf``, the profile unchanged)."""
    rng = random.Random(5)
    for case in range(200):
        prof = Profile(0.0, 16, 1e9, 1e-9 * 1e9)
        for _ in range(rng.randint(0, 6)):  # releases of running jobs
            prof.add(rng.choice([1.0, 2.5, 10.0, rng.uniform(0, 50)]), math.inf, -rng.randint(1, 8), -rng.uniform(0, 5e8))
        a, b = prof.copy(), prof.copy()
        for _ in range(15):
            n, w, h = rng.randint(1, 40), rng.choice([1.0, 7.0, rng.uniform(0.5, 30)]), rng.choice([0.0, rng.uniform(0, 2e9)])
            floor = rng.choice([0.0, 3.0])
            t = a.earliest_fit(n, w, h, not_before=floor)
            assert b.place(n, w, h, not_before=floor) == t
            if t == math.inf:
                with pytest.raises(RuntimeError, match="does not fit"):
                    a.reserve(t, w, n, h)
            else:
                a.reserve(t, w, n, h)
            assert (a.times, a.nodes, a.hps) == (b.times, b.nodes, b.hps), case


class _FreshFCFS(FCFS):
    """FCFS that plans every decision from scratch (its memo of the last plan forgotten)."""

    def _decide(self, snap):
        self._swept = None
        return super()._decide(snap)


def _converged(fresh) -> bool:
    return len(fresh) == 2


def test_fcfs_replan_and_node_replay_equal_planning_from_scratch():
    """A sequence of decisions: arrivals, starts as decided, early ends, overruns, jobs cancelled
    from the middle of the queue, time passing.  FCFS re-planning only until it joins its last
    plan (``fcfs_replan``) decides what a fresh sweep decides, and the node-set replay that
    joins its last replay (``replay_in_start_order``) gives every entry the set
    ``plan_node_sets`` gives it, at every step; both joins are taken often."""
    rng = random.Random(21)
    joined = set_joins = steps = 0  # FCFS plans that reused old entries after a start or an end
    for case in range(200):
        memo, fresh = FCFS(), _FreshFCFS()
        snap = _random_snapshot(rng)
        total = snap.total_nodes
        masks, free_ids = {}, (1 << total) - 1
        for r in snap.running:
            masks[r.id] = lowest(free_ids, r.nodes)
            free_ids ^= masks[r.id]
        replayed, previous, roll = None, set(), 0.0
        for step in range(14):
            a, b = memo.decide(snap), fresh.decide(snap)
            assert a == b, (case, step)
            joined += roll >= 0.5 and any(id(e) in previous for e in a.plan)
            previous = {id(e) for e in a.plan}
            running = list(snap.running)
            held = [(r.expected_end, masks[r.id]) for r in running]
            sets, got, replayed = replay_in_start_order(snap.now, free_ids, held, a.plan, replayed,
                                                        snap.overrun_grace)
            want = plan_node_sets(snap.now, free_ids, held, a.plan, snap.overrun_grace)
            assert sets == [want[e.job] for e in a.plan], (case, step)
            steps += 1
            set_joins += _converged(got) and step > 0
            queue, free = list(snap.queue), snap.free_nodes
            now = snap.now
            roll = rng.random()
            if roll < 0.5:  # arrivals only, at a later time before any planned start
                later = [e.start for e in a.plan if e.start > now] + [r.expected_end for r in running
                                                                       if r.expected_end > now]
                now = now + 0.5 * (min(later, default=now + 2.0) - now)
            else:  # the decision's starts run (on the sets planned for them), then something happens
                started = {s.job for s in a.starts}
                for s in a.starts:
                    running.append(RunningJob(s.job, s.nodes, s.expected_end))
                    masks[s.job] = sets[[e.job for e in a.plan].index(s.job)]
                    free_ids ^= masks[s.job]
                    free -= s.nodes
                queue = [q for q in queue if q.id not in started]
                if running and roll < 0.85:  # a job ends, early or on time
                    gone = running.pop(rng.randrange(len(running)))
                    free += gone.nodes
                    free_ids |= masks.pop(gone.id)
                    now = min(max(now, gone.expected_end if rng.random() < 0.3 else now), now + 50.0)
                elif queue and roll < 0.93:  # a waiting job is cancelled, wherever it stands
                    queue.pop(rng.randrange(len(queue)))
                now += rng.choice([0.0, 0.5, 3.0, 20.0, 200.0])  # 200 s: running jobs overrun
            queue += [QueuedJob(f"n{case}-{step}-{i}", now, rng.randint(1, total), float(rng.randint(1, 40)))
                      for i in range(rng.randint(0 if roll >= 0.5 else 1, 3))]
            snap = Snapshot(now=now, total_nodes=total, free_nodes=free, queue=tuple(queue),
                            running=tuple(running), overrun_grace=snap.overrun_grace)
    print(f"{steps} steps: FCFS joined its old plan after a start or an end {joined} times, "
          f"the replay joined its old one {set_joins} times")
    assert joined > steps // 20 and set_joins > steps // 10  # both joins were taken, not only tested


@pytest.mark.parametrize("depth", [None, 0, 3])
@pytest.mark.parametrize("kind", ["conservative", "conservative-reinsert"])
def test_conservative_arrival_only_pass_equals_deciding_from_scratch(kind, depth):
    """Both conservative variants continue the last decision's profile over an arrival-only pass
    (``_KeepsReservations``); a twin that forgets it at every decision decides the same at every
    step of random sequences of arrivals, starts (now and then not carried out), early ends and
    overruns; with a backfill depth too."""
    from iolab.middleware.policies.batch import get_scheduler

    rng = random.Random(kind if depth is None else f"{kind}{depth}")
    kept = steps = 0
    for case in range(150):
        memo, fresh = get_scheduler(kind, backfill_depth=depth), get_scheduler(kind, backfill_depth=depth)
        snap = _random_snapshot(rng)
        for step in range(12):
            fresh._kept = None
            could = memo._arrivals_only(snap) is not None
            a, b = memo.decide(snap), fresh.decide(snap)
            assert a == b, (case, step)
            kept += could
            steps += 1
            queue, running, free, now = list(snap.queue), list(snap.running), snap.free_nodes, snap.now
            roll = rng.random()
            if roll > 0.12:  # the caller starts what the policy starts (now and then it does not)
                started = {s.job for s in a.starts}
                running += [RunningJob(s.job, s.nodes, s.expected_end) for s in a.starts]
                free -= sum(s.nodes for s in a.starts)
                queue = [q for q in queue if q.id not in started]
            if roll < 0.6:  # arrivals only, before any planned start
                later = [e.start for e in a.plan if e.start > now] + [r.expected_end for r in running
                                                                       if r.expected_end > now]
                now = now + 0.5 * (min(later, default=now + 2.0) - now)
            else:
                if running and roll < 0.9:
                    gone = running.pop(rng.randrange(len(running)))
                    free += gone.nodes
                now += rng.choice([0.0, 0.5, 3.0, 20.0, 200.0])
            queue += [QueuedJob(f"n{case}-{step}-{i}", now, rng.randint(1, snap.total_nodes),
                                float(rng.randint(1, 40))) for i in range(rng.randint(1, 3))]
            snap = Snapshot(now=now, total_nodes=snap.total_nodes, free_nodes=free, queue=tuple(queue),
                            running=tuple(running), overrun_grace=snap.overrun_grace)
    assert kept > steps // 15, (kept, steps)  # the arrival-only pass was taken, not only tested


def _with_releases(snap: Snapshot) -> Snapshot:
    """``snap`` carrying its running jobs' releases sorted, as the batch kernel keeps them."""
    rel = sorted((r.expected_end, i, r.nodes, r.storage if r.tier == HPS else 0.0) for i, r in enumerate(snap.running))
    return Snapshot.trusted(now=snap.now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes, queue=snap.queue,
                            running=snap.running, hps_capacity=snap.hps_capacity, hps_free=snap.hps_free,
                            rates=snap.rates, overrun_grace=snap.overrun_grace, releases=rel)


def test_kept_releases_give_the_decisions_and_profiles_of_sorting_the_running_jobs():
    """A snapshot with ``releases`` (the kernel's sorted index) reads only the releases it needs: the
    same EASY decisions (shadow rule and profile search) and the same profiles, float for float."""
    from iolab.middleware.policies.batch import SAS, TierRates

    rng = random.Random(29)
    overran = 0
    for case in range(1500):
        snap = _random_snapshot(rng)
        kept = _with_releases(snap)
        overran += any(r.expected_end <= snap.now for r in snap.running)
        assert EASY(project=False)._decide_by_shadow(kept) == EASY(project=False)._decide_by_shadow(snap), case
        a, b = Profile.from_snapshot(kept), Profile.from_snapshot(snap)
        assert (a.times, a.nodes, a.hps) == (b.times, b.nodes, b.hps), case
        assert EASY().decide(kept) == EASY().decide(snap), case
        if snap.rates is None:
            rates = TierRates(lps=1.0, hps=15.0, stage=5.0)
            snap = Snapshot.trusted(now=snap.now, total_nodes=snap.total_nodes, free_nodes=snap.free_nodes,
                                    queue=snap.queue, running=snap.running, hps_capacity=snap.hps_capacity,
                                    hps_free=snap.hps_free, rates=rates, overrun_grace=snap.overrun_grace)
            kept = _with_releases(snap)
        assert SAS().decide(kept) == SAS().decide(snap), case
    assert overran > 100  # jobs past their expected end were exercised


def _random_tiered_snapshot(rng: random.Random):
    """A snapshot with HPS: running jobs holding bytes, waiting jobs asking for bytes (some more than
    the HPS holds, some none), I/O volumes that make the HPS schedule shorter or longer."""
    from iolab.middleware.policies.batch import TierRates

    total = rng.choice([8, 16, 32])
    cap = rng.choice([100.0, 1000.0])
    now = rng.choice([0.0, 500.0])
    running, used, held = [], 0, 0.0
    while used < total and rng.random() < 0.8:
        n = rng.randint(1, total - used)
        tier = rng.choice([LPS, HPS])
        b = rng.uniform(0, (cap - held) * 0.9) if tier == HPS else 0.0
        held += b
        running.append(RunningJob(f"r{len(running)}", n, now + rng.choice([-5.0, 0.0, 1.0, 10.0, rng.uniform(0, 200)]),
                                  tier, b))
        used += n
    queue = []
    for i in range(rng.randint(1, 40)):
        w = rng.choice([10.0, 50.0, float(rng.randint(1, 300))])
        queue.append(QueuedJob(f"q{i}", now - rng.uniform(0, 100), rng.randint(1, rng.choice([2, total // 2, total])), w,
                               storage=rng.choice([0.0, rng.uniform(1, cap / 3), rng.uniform(cap / 3, cap), cap * 2]),
                               input=rng.uniform(0, w * 3), output=rng.uniform(0, w * 3), data=rng.uniform(0, w * 3)))
    return Snapshot(now=now, total_nodes=total, free_nodes=total - used, queue=tuple(queue), running=tuple(running),
                    hps_capacity=cap, hps_free=cap - held, rates=TierRates(lps=1.0, hps=15.0, stage=5.0),
                    overrun_grace=rng.choice([1.0, 2.0]))


def test_sas_written_out_decides_what_tier_options_and_choose_tier_decide():
    """SAS's backfill pass computes the best schedule inline (no option objects for jobs that do not
    start) and skips candidates whose nodes are not free for their shorter reservation: the same
    decisions as the plain pass over tier_options and choose_tier, on random snapshots with HPS."""
    from iolab.middleware.policies.batch.sas import SAS, _TieredBackfill

    class Plain(SAS):
        def _now_options(self, job, prof, snap, durations, accept=(True, True, None, None)):  # all options
            return _TieredBackfill._now_options(self, job, prof, snap, durations)

    asked = []

    class Counted(SAS):  # the written-out path, counting the candidates it decides and those it refuses
        def _now_options(self, job, prof, snap, durations, accept=(True, True, None, None)):
            got = super()._now_options(job, prof, snap, durations, accept)
            asked.append(bool(got))
            return got

    rng = random.Random(41)
    started_hps = started = 0
    for case in range(1500):
        snap = _random_tiered_snapshot(rng)
        fast, plain = Counted(project=False), Plain(project=False)
        a, b = fast.decide(snap), plain.decide(snap)
        assert a == b, case
        assert SAS().decide(snap) == Plain().decide(snap), case  # with the projected plan
        started += len(a.starts)
        started_hps += sum(s.tier == HPS for s in a.starts)
    assert started > 1000 and started_hps > 200  # starts on both tiers were exercised
    assert sum(asked) > 500 and len(asked) - sum(asked) > 50  # backfill candidates started and refused


def test_sas_projection_written_out_plans_what_choose_and_reserve_plan():
    """SAS projects the waiting jobs it does not start with _choose written out (no option objects, the
    chosen search's segments reused to hold the job): the same plans, float for float, as choosing with
    tier_options and choose_tier and reserving, on random snapshots with HPS, with and without a depth."""
    from iolab.middleware.policies.batch.sas import SAS, choose_tier, tier_options

    class Plain(SAS):
        def _choose(self, job, prof, snap):  # the generic projection: option objects, Profile.reserve
            return choose_tier(job, tier_options(job, prof, snap.rates, snap.now, snap.hps_capacity))

    rng = random.Random(43)
    projected = hps = 0
    for case in range(2000):  # a quarter with tied turnarounds (HPS chosen only if strictly shorter)
        snap = _random_tiered_snapshot(rng) if case % 4 else _tied_tiered_snapshot(rng)
        depth = rng.choice([None, None, 0, 2, 5])
        fast, plain = SAS(), Plain()
        fast.backfill_depth = plain.backfill_depth = depth
        a, b = fast.decide(snap), plain.decide(snap)
        assert a == b, case
        projected += sum(not e.reserved for e in a.plan)
        hps += sum(not e.reserved and e.tier == HPS for e in a.plan)
    assert projected > 5000 and hps > 1000  # projections on both tiers were exercised


def test_prefix_minima_answer_fits_from_now():
    """SAS's backfill pass answers ``with_head.fits(now, d, nodes, bytes)`` from the prefix minima of
    the profile's free nodes and bytes: the same answer on random profiles, durations and demands
    (durations ending on, just before and just after breakpoints included)."""
    import bisect
    import itertools

    rng = random.Random(43)
    for case in range(3000):
        now = rng.choice([0.0, 10.0])
        prof = Profile(now, rng.randint(0, 16), rng.uniform(-1e-10, 100.0), 1e-9 * 100)
        for _ in range(rng.randint(0, 8)):
            t0 = now + rng.choice([0.0, 1.0, 5.0, rng.uniform(0, 50)])
            prof.add(t0, t0 + rng.choice([1.0, 5.0, math.inf]), rng.randint(-4, 4), rng.uniform(-30, 30))
        least_n = list(itertools.accumulate(prof.nodes, min))
        least_b = list(itertools.accumulate(prof.hps, min))
        for _ in range(10):
            d = rng.choice([0.5, 1.0, 4.0, 5.0, 6.0, rng.uniform(0.1, 80)] + [t - now for t in prof.times[1:]])
            if not d > 0:
                continue
            n, b = rng.randint(0, 16), rng.choice([0.0, rng.uniform(0, 100)])
            j = bisect.bisect_left(prof.times, now + d) - 1
            assert (n <= least_n[j] and least_b[j] + prof.eps >= b) == prof.fits(now, d, n, b), case


def _walked(prof: Profile) -> Profile:
    """A copy of ``prof`` that searches by the walk (as if its counts could fall)."""
    p = prof.copy()
    p.rising = False
    return p


def _falls(prof: Profile) -> bool:
    return any(a > b for a, b in zip(prof.nodes, prof.nodes[1:])) or any(a > b for a, b in zip(prof.hps, prof.hps[1:]))


def test_rising_profile_answers_what_the_walk_answers():
    """Random snapshots' profiles (releases with ties, overruns, HPS bytes; kept releases or not),
    then random holds from now (what a pass's starts are), some from later (which end the rising
    state): ``earliest_fit``, ``fits`` and ``place`` give the walk's answers and profiles, float for
    float, and a profile flagged rising never has a count that falls."""
    rng = random.Random(47)
    bisected = 0
    for case in range(1500):
        snap = _random_tiered_snapshot(rng) if rng.random() < 0.5 else _random_snapshot(rng)
        if rng.random() < 0.5:
            snap = _with_releases(snap)
        fast = Profile.from_snapshot(snap)
        assert fast.rising, case
        for _ in range(12):
            slow = _walked(fast)
            assert not (fast.rising and _falls(fast)), case
            n = rng.randint(0, snap.total_nodes + 1)
            d = rng.choice([0.5, 1.0, 10.0, rng.uniform(0.1, 300)] + [t - snap.now for t in fast.times[1:]])
            b = rng.choice([0.0, rng.uniform(0, max(snap.hps_capacity, 1.0)), float(fast.hps[-1]), float(fast.hps[0])])
            floor = rng.choice([None, snap.now, snap.now + rng.uniform(0, 100)])
            if not d > 0:
                continue
            t = fast.earliest_fit(n, d, b, floor)
            assert t == slow.earliest_fit(n, d, b, floor), case
            for start in (snap.now, rng.choice(fast.times), snap.now + rng.uniform(0, 200)):
                assert fast.fits(start, d, n, b) == slow.fits(start, d, n, b), case
            bisected += fast.rising
            if rng.random() < 0.4 and t != math.inf:
                held = t if rng.random() < 0.8 else snap.now + rng.uniform(0, 50)  # mostly from now
                if fast.fits(held, d, n, b):
                    fast.reserve(held, d, n, b)
                    slow.reserve(held, d, n, b)
                    assert (fast.times, fast.nodes, fast.hps) == (slow.times, slow.nodes, slow.hps), case
            elif rng.random() < 0.3:
                a, s2 = fast.place(n, d, b, floor), slow.place(n, d, b, floor)
                assert a == s2 and (fast.times, fast.nodes, fast.hps) == (slow.times, slow.nodes, slow.hps), case
    assert bisected > 3000  # the bisections were exercised, not only the walk


def _tied_tiered_snapshot(rng: random.Random) -> Snapshot:
    """A snapshot with HPS whose times, lengths and bytes are small dyadic numbers (exact floats: the two
    tiers' turnarounds tie, bytes fit exactly) or decimal fractions (whose sums fall just short of the
    amount asked: the byte tolerance decides), and little HPS free now."""
    from iolab.middleware.policies.batch import TierRates

    total, cap, now = 16, 4.0, 8.0
    running, used, held = [], 0, 0.0
    while used < total and rng.random() < 0.85:
        n = rng.randint(1, min(4, total - used))
        b = min(rng.choice([0.0, 0.1, 0.2, 0.25, 0.5, 0.7, 1.0]), cap - held)
        held += b
        running.append(RunningJob(f"r{len(running)}", n, now + rng.choice([1.0, 2.0, 3.0, 4.0, 6.0]),
                                  HPS if b > 0 else LPS, b))
        used += n
    queue = []
    for i in range(rng.randint(1, 30)):
        w = float(rng.randint(1, 12))
        queue.append(QueuedJob(f"q{i}", now - rng.randint(0, 4), rng.randint(1, 4), w,
                               storage=rng.choice([0.0, 0.25, 0.3, 0.5, 0.6, 0.8, 1.0, 2.0, 8.0]),
                               input=float(rng.randint(0, 8)), output=float(rng.randint(0, 8)),
                               data=float(rng.randint(0, 8))))
    hps_free = rng.choice([0.0, 0.1 + 0.2, cap - held])
    return Snapshot(now=now, total_nodes=total, free_nodes=total - used, queue=tuple(queue), running=tuple(running),
                    hps_capacity=cap, hps_free=max(0.0, min(hps_free, cap - held)),
                    rates=TierRates(lps=1.0, hps=2.0, stage=4.0), overrun_grace=1.0)


def test_sas_on_rising_profiles_decides_what_it_decides_on_walked_ones(monkeypatch):
    """SAS and random-tier (with and without the projected plan, with a backfill depth) decide the same
    on random snapshots with HPS whether their profiles search by bisection and SAS reads j1's first
    segment, or every profile is walked and SAS reads the prefix minima (the code before the bisections)."""
    from iolab.middleware.policies.batch.sas import SAS, RandomTier

    plain_build = Profile.from_snapshot.__func__
    rng = random.Random(53)
    started = 0
    for case in range(2400):
        snap = _random_tiered_snapshot(rng) if case % 2 else _tied_tiered_snapshot(rng)
        if rng.random() < 0.5:
            snap = _with_releases(snap)
        depth = rng.choice([None, None, 1, 3])
        seed = rng.randint(0, 99)
        makers = [lambda: SAS(project=False), lambda: SAS(), lambda: SAS(project=False, start_now=True),
                  lambda: RandomTier(0.5, seed, project=False), lambda: RandomTier(0.5, seed)]
        for make in makers:
            decisions = []
            for walk in (False, True):
                with monkeypatch.context() as m:
                    if walk:
                        m.setattr(Profile, "from_snapshot", classmethod(lambda cls, s: _walked(plain_build(cls, s))))
                    policy = make()
                    policy.backfill_depth = depth
                    decisions.append(policy.decide(snap))
            assert decisions[0] == decisions[1], case
            started += len(decisions[0].starts)
    assert started > 3000
