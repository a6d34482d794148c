"""A user's batch scheduler, guarded: what it may answer, every rule a broken one is stopped by (named, with the
policy and the time), an exception traced to the user's own line, and calls it asks for (``wake_at``)."""

from __future__ import annotations

import math

import pytest

from iolab.invariants import InvariantViolation, PolicyRaised
from iolab.sim.batch.run import simulate_batch

from policy_files import FOUR, batch_spec, jobs, write

POLICIES = '''
from iolab.policy import BatchScheduler, Decision, PlanEntry, Start


class Raises(BatchScheduler):
    def decide(self, snap):
        if snap.now > 1:
            return helper(snap)
        return []


def helper(snap):
    return 1 / 0                              # line 13


class Unknown(BatchScheduler):
    def decide(self, snap):
        return ["zz"]


class Future(BatchScheduler):
    def decide(self, snap):
        return ["d"]                         # d is submitted at 3


class Twice(BatchScheduler):
    def decide(self, snap):
        j = [q for q in snap.queue if q.nodes <= 2]
        return [snap.start(j[0]), snap.start(j[0])] if j else []


class Running(BatchScheduler):
    def __init__(self):
        self.first = None

    def decide(self, snap):
        if self.first is None and snap.queue:
            self.first = snap.queue[0].id
            return [self.first]
        return [self.first] if snap.now >= 1 else []


class BadTier(BatchScheduler):
    def decide(self, snap):
        return [(snap.queue[0].id, "ssd")]


class BadNodes(BatchScheduler):
    def decide(self, snap):
        q = snap.queue[0]
        return [Start(q.id, "lps", q.nodes + 1, snap.now + q.walltime)]


class Double(BatchScheduler):
    def decide(self, snap):
        return [snap.start(j) for j in snap.queue]


class BusyIds(BatchScheduler):
    def decide(self, snap):
        small = [j for j in snap.queue if j.nodes <= 2]
        return [snap.start(j, node_ids=range(j.nodes)) for j in small[:2]]


class TooMuchHps(BatchScheduler):
    def decide(self, snap):
        return [snap.start(j, "hps") for j in snap.queue if j.nodes <= snap.free_nodes][:1]


class Garbage(BatchScheduler):
    def decide(self, snap):
        return 42


class NoEnd(BatchScheduler):
    def decide(self, snap):
        q = snap.queue[0]
        return [Start(q.id, "lps", q.nodes, math.inf)]


class PastWake(BatchScheduler):
    def decide(self, snap):
        return Decision(snap.now, (), wake_at=snap.now)


class BadPlan(BatchScheduler):
    def decide(self, snap):
        return Decision(snap.now, (), plan=((1, 2, 3),))


class Idle(BatchScheduler):
    def decide(self, snap):
        return []


class IdleWaker(BatchScheduler):
    def decide(self, snap):
        return Decision(snap.now, (), wake_at=snap.now + 1)


import math
'''

RULES = [  # class, rule, time, subject
    ("Raises", "policy-raised", 2.0, "policies.py:Raises"),
    ("Unknown", "unknown-job", 0.0, "zz"),
    ("Future", "start-before-submit", 0.0, "d"),
    ("Twice", "start-not-queued", 1.0, "b"),
    ("Running", "start-not-queued", 1.0, "a"),
    ("BadTier", "tier-illegal", 0.0, "a"),
    ("BadNodes", "start-mismatch", 0.0, "a"),
    ("Double", "node-double-booked", 1.0, "b"),
    ("BusyIds", "node-double-booked", 2.0, "c"),
    ("TooMuchHps", "hps-overcommit", 0.0, "a"),
    ("Garbage", "malformed-decision", 0.0, "policies.py:Garbage"),
    ("NoEnd", "malformed-decision", 0.0, "a"),
    ("PastWake", "malformed-decision", 0.0, "policies.py:PastWake"),
    ("BadPlan", "malformed-decision", 0.0, "policies.py:BadPlan"),
    ("Idle", "never-started", 3.0, "policies.py:Idle"),
    ("IdleWaker", "never-started", None, "policies.py:IdleWaker"),
]

# TooMuchHps: job a asks for more HPS bytes than the tier holds
WORKLOAD = [dict(j, storage="150GB") if j["id"] == "a" else j for j in FOUR]


@pytest.mark.parametrize("cls,rule,t,subject", RULES, ids=[r[0] for r in RULES])
@pytest.mark.parametrize("strict", [False, True])
def test_each_broken_scheduler_is_stopped_with_its_rule(tmp_path, cls, rule, t, subject, strict):
    write(tmp_path, "policies.py", POLICIES)
    spec = batch_spec(tmp_path, f"policies.py:{cls}", WORKLOAD)
    with pytest.raises(InvariantViolation) as ex:
        simulate_batch(spec, strict=strict)
    v = ex.value
    assert v.rule == rule, str(v)
    assert v.subject == subject, str(v)
    if t is not None:
        assert v.time == t
    assert "policies.py" in str(v)  # the policy is named (its file and class)
    # the run stopped where it broke: the trace so far goes with the violation
    assert v.trace.attrs["complete"] is False and v.trace.attrs["stopped"] == str(v)


def test_an_exception_names_the_users_file_and_lines_and_leaves_iolab_out(tmp_path):
    path = write(tmp_path, "policies.py", POLICIES)
    with pytest.raises(PolicyRaised) as ex:
        simulate_batch(batch_spec(tmp_path, "policies.py:Raises"))
    text = str(ex.value)
    assert text.startswith("policy policies.py:Raises raised at t=2: ZeroDivisionError: division by zero")
    assert f"{path}:8 in decide: return helper(snap)" in text
    assert f"{path}:13 in helper: return 1 / 0" in text
    assert "iolab/" not in text.replace(str(path), "") and "/sim/" not in text and "middleware" not in text


@pytest.mark.parametrize("answer", ["ids", "pairs", "starts", "decision", "none_then_ids"])
def test_every_plain_form_of_an_answer_means_the_same_starts(tmp_path, answer):
    write(tmp_path, "fcfs.py", f'''
        from iolab.policy import BatchScheduler, Decision

        class MyFCFS(BatchScheduler):
            def decide(self, snap):
                free, out = snap.free_nodes, []
                for j in snap.queue:
                    if j.nodes > free:
                        break
                    out.append(j)
                    free -= j.nodes
                form = {answer!r}
                if form == "none_then_ids" and not out:
                    return None
                if form in ("ids", "none_then_ids"):
                    return [j.id for j in out]
                if form == "pairs":
                    return [(j.id, "lps") for j in out]
                starts = [snap.start(j) for j in out]
                return starts if form == "starts" else Decision(snap.now, tuple(starts))
        ''')
    mine = simulate_batch(batch_spec(tmp_path, "fcfs.py:MyFCFS"), strict=True)
    builtin = simulate_batch(batch_spec(tmp_path, "fcfs"), strict=True)
    cols = ("id", "start", "end", "tier")
    assert [tuple(r[c] for c in cols) for r in mine.jobs.rows()] == \
        [tuple(r[c] for c in cols) for r in builtin.jobs.rows()]


def test_a_scheduler_is_called_again_when_it_asks_and_its_node_ids_are_kept(tmp_path):
    # starts each job 10 s after its submission (nothing else happens then: only wake_at brings the
    # call), on the highest free node ids
    write(tmp_path, "late.py", '''
        from iolab.policy import BatchScheduler, Decision

        class Late(BatchScheduler):
            def __init__(self, delay=10.0):
                self.delay = delay
                self.calls = []

            def decide(self, snap):
                self.calls.append(snap.now)
                free = list(snap.free_node_ids)
                starts = []
                for j in snap.queue:
                    if snap.now >= j.submit + self.delay and j.nodes <= len(free):
                        ids, free = free[-j.nodes:], free[:-j.nodes]
                        starts.append(snap.start(j, node_ids=ids))
                later = [j.submit + self.delay for j in snap.queue if j.submit + self.delay > snap.now]
                return Decision(snap.now, tuple(starts), wake_at=min(later) if later else None)
        ''')
    work = jobs(("a", 0, 1, 100, 30), ("b", 5, 2, 100, 30), ("c", 7, 1, 100, 30))
    trace = simulate_batch(batch_spec(tmp_path, {"kind": "python", "path": "late.py", "class": "Late",
                                                  "options": {"delay": 10.0}}, work), strict=True)
    rows = {r["id"]: r for r in trace.jobs.rows()}
    assert {j: rows[j]["start"] for j in rows} == {"a": 10.0, "b": 15.0, "c": 17.0}
    assert {j: rows[j]["node_ids"] for j in rows} == {"a": "3", "b": "1-2", "c": "0"}
    assert trace.attrs["policies"]["scheduler"]["options"] == {"delay": 10.0}


def test_a_run_that_can_never_start_its_jobs_stops_instead_of_hanging(tmp_path):
    write(tmp_path, "policies.py", POLICIES)
    with pytest.raises(InvariantViolation) as ex:
        simulate_batch(batch_spec(tmp_path, "policies.py:IdleWaker"))
    assert ex.value.rule == "never-started" and "10000 times in a row" in str(ex.value)
    assert math.isfinite(ex.value.time)
