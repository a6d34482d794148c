"""Sharing policies in the simulator: I/O level (both engines) and batch level (caps in the max-min rates).

- what job-fair and size-fair coincide with: ``shared`` on Table 1 (every stream there is its own job, and
  every app has 8 nodes), to 1e-9;
- a user's Sharing from a file outside the repository: 1/k through the public API gives ``shared``'s
  runs; the step engine follows the event engine under a TBF;
- what a policy is shown (:class:`~iolab.policy.Stream`) and when it is asked;
- a broken answer or an exception stops the run with the rule (``malformed-decision``, ``policy-raised``,
  the user's file and line), in both engines and on the command line (exit 1);
- the batch level: a TBF's caps, size-fair's proportions, a cap left unused.
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from iolab.invariants import InvariantViolation, PolicyRaised
from iolab.middleware.policies.io_order import Sharing
from iolab.sim.batch.run import simulate_batch
from iolab.sim.io.event import EventEngine
from iolab.sim.io.run import simulate
from iolab.sim.io.scenario import Scenario
from iolab.specs import load_spec, parse_spec

from shared_data import REPO

TABLE1 = REPO / "examples" / "carretero-table1.yaml"

POLICIES = '''
import json
import math

from iolab.policy import Sharing


class Equal(Sharing):
    """1/k each, through the public API."""

    def shares(self, streams, now):
        return [1.0 / len(streams)] * len(streams)


class Broken(Sharing):
    """A broken answer: the option says which."""

    def __init__(self, how="negative"):
        self.how = how

    def shares(self, streams, now):
        k = len(streams)
        if self.how == "raise":
            return self.helper(k)
        if k < 2:
            return [1.0]
        return {"negative": [-0.25] + [0.25] * (k - 1), "nan": [math.nan] * k, "over": [0.75] * k,
                "short": [1.0 / k] * (k - 1), "text": ["half"] * k}[self.how]

    def helper(self, k):
        return 1 / (k - k)


class Recorder(Sharing):
    """size-fair, writing down every call: (now, [stream fields]) as JSON lines in ``path``."""

    def __init__(self, path):
        self.path = path

    def shares(self, streams, now):
        with open(self.path, "a") as f:
            f.write(json.dumps([now, [list(s) for s in streams]]) + "\\n")
        total = sum(s.nodes for s in streams)
        return [s.nodes / total for s in streams]
'''


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "elsewhere" / "my_sharing.py"  # outside the repository
    path.parent.mkdir()
    path.write_text(POLICIES)
    return path


def user(file, cls, **options) -> dict:
    return {"kind": "python", "path": str(file), "class": cls, "options": options}


def ends(trace) -> np.ndarray:
    return np.asarray(trace.phases["end"], dtype=float)


def table1(policy, **update):
    return load_spec(TABLE1).model_copy(update={"policy": policy, **update})


# ---------------------------------------------------------------- the I/O level
@pytest.mark.parametrize("name", ["job-fair", "size-fair", "user-fair"])
def test_themisio_policies_coincide_with_shared_on_table1(name):
    """Table 1's apps are one stream each on the I/O node, all of 8 nodes and no user: job-fair, size-fair and
    user-fair all answer 1/k there (docs/sharing.md), so the run is shared's, through the weighted link."""
    shared = simulate(parse_spec({**table1_doc(), "policy": "shared"}, "<t>"), strict=True)
    other = simulate(parse_spec({**table1_doc(), "policy": name}, "<t>"), strict=True)
    assert other.attrs["policy"] == name
    np.testing.assert_allclose(ends(other), ends(shared), rtol=1e-9)


def table1_doc() -> dict:
    import yaml

    return yaml.safe_load(TABLE1.read_text())


def test_size_fair_departs_from_shared_when_sizes_differ():
    doc = table1_doc()
    doc["apps"][0]["nodes"] = 32  # app1 now four times the others
    shared = simulate(parse_spec({**doc, "policy": "shared"}, "<t>"), strict=True)
    size = simulate(parse_spec({**doc, "policy": "size-fair"}, "<t>"), strict=True)
    end = lambda t: dict(zip(t.jobs["id"], t.jobs["end"]))  # noqa: E731
    assert end(size)["app1"] < end(shared)["app1"] - 100  # the big app gets more, ends sooner
    assert end(size)["app3"] > end(shared)["app3"]


@pytest.mark.parametrize("mode", ["event", "step"])
def test_a_users_equal_sharing_from_a_file_is_shared(user_file, mode):
    doc = {**table1_doc(), "sim": {"mode": mode, "dt": 0.5}}
    shared = simulate(parse_spec({**doc, "policy": "shared"}, "<t>"), strict=True)
    mine = simulate(parse_spec({**doc, "policy": user(user_file, "Equal")}, "<t>"), strict=True)
    assert mine.attrs["policy"] == "my_sharing.py:Equal"
    np.testing.assert_allclose(ends(mine), ends(shared), rtol=1e-9)


def test_the_step_engine_follows_the_event_engine_under_a_tbf():
    tbf = {"kind": "tbf", "rules": [{"job": "app[34]", "rate": 0.4}], "default_rate": 0.2}
    doc = {**table1_doc(), "policy": tbf}
    for a in doc["apps"]:
        a["iterations"] //= 10  # a tenth of Table 1: the step engine at dt = 0.01 in a second
    event = simulate(parse_spec(doc, "<t>"), strict=True)
    step = simulate(parse_spec({**doc, "sim": {"mode": "step", "dt": 0.01}}, "<t>"), strict=True)
    e, s = dict(zip(event.jobs["id"], event.jobs["end"])), dict(zip(step.jobs["id"], step.jobs["end"]))
    for app, t in e.items():  # each of its 2 x iterations phases ends at most one step late
        assert t - 1e-6 <= s[app] <= t + 2 * 100 * 0.01 + 1e-6, (app, t, s[app])
    shared = simulate(parse_spec({**doc, "policy": "shared"}, "<t>"), strict=True)
    assert abs(max(e.values()) - max(shared.jobs["end"])) > 50  # and the TBF is not shared's run


class Seen(Sharing):
    """size-fair, keeping what it was shown."""

    def __init__(self):
        self.calls = []

    def shares(self, streams, now):
        self.calls.append((now, list(streams)))
        total = sum(s.nodes for s in streams)
        return [s.nodes / total for s in streams]


def test_a_sharing_is_shown_every_stream_and_asked_only_when_one_joins_or_leaves():
    spec = parse_spec({"name": "seen", "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 2.0},
                       "apps": [{"id": "big", "nodes": 3, "phases": [{"write": 6.0}]},
                                {"id": "small", "nodes": 1, "release": 1.0, "phases": [{"write": 2.0}]}]}, "<t>")
    seen = Seen()
    rec = EventEngine(Scenario.from_spec(spec), seen, strict=True).run()
    times = [now for now, _ in seen.calls]
    # big alone at 2 until 1 (moved 2); then big 1.5 and small 0.5 until big's 4 left are moved (at 1 + 8/3);
    # then small alone at 2
    assert times == pytest.approx([0.0, 1.0, 1 + 8 / 3])
    now, streams = seen.calls[1]
    big, small = streams
    assert (big.id, big.job, big.rank, big.nodes, big.user) == ("big", "big", 0, 3, "")
    assert big.volume == 6.0 and big.moved == pytest.approx(2.0) and big.granted == 0.0
    assert (small.id, small.nodes, small.volume, small.moved, small.granted) == ("small", 1, 2.0, 0.0, 1.0)
    (alone,) = seen.calls[2][1]
    assert alone.id == "small" and alone.moved == pytest.approx(0.5 * 8 / 3)
    assert rec.end == pytest.approx([1 + 8 / 3, 1 + 8 / 3 + (2 - 4 / 3) / 2])


@pytest.mark.parametrize("mode", ["event", "step"])
@pytest.mark.parametrize("how, rule", [("negative", "malformed-decision"), ("nan", "malformed-decision"),
                                       ("over", "malformed-decision"), ("short", "malformed-decision"),
                                       ("text", "malformed-decision"), ("raise", "policy-raised")])
def test_broken_shares_stop_the_simulation_with_the_rule(user_file, mode, how, rule):
    doc = {**table1_doc(), "policy": user(user_file, "Broken", how=how), "sim": {"mode": mode, "dt": 0.5}}
    with pytest.raises(InvariantViolation) as err:
        simulate(parse_spec(doc, "<t>"), strict=False)  # a guard, strict mode or not
    assert err.value.rule == rule
    if how == "raise":
        assert isinstance(err.value, PolicyRaised) and "ZeroDivisionError" in err.value.detail
        # the user's own frames (file and line), none of iolab's; a file of the same content loaded before (by
        # another test) is the module the loader keeps, so the name is checked, not the folder
        frames = re.findall(r"\(?([^ ;()]+\.py):(\d+) in (\w+)", err.value.detail)
        assert [(p.rsplit("/", 1)[-1], f) for p, _, f in frames] == [("my_sharing.py", "shares"),
                                                                     ("my_sharing.py", "helper")]


def test_a_broken_sharing_exits_1_on_the_command_line(user_file, tmp_path, monkeypatch, capsys):
    from iolab.cli import main

    doc = {**table1_doc(), "policy": user(user_file, "Broken", how="over")}
    (tmp_path / "spec.json").write_text(json.dumps(doc))
    monkeypatch.setattr(sys, "argv", ["iolab", "simulate", str(tmp_path / "spec.json")])
    with pytest.raises(SystemExit) as ex:
        main()
    err = capsys.readouterr().err
    assert ex.value.code == 1 and "malformed-decision" in err and "sum to 1.5" in err and "Traceback" not in err


# ---------------------------------------------------------------- the batch level
GB = 1e9


def batch(jobs, policy, *, nodes=4, io_rate="1GB/s", lps="10GB/s"):
    return parse_spec({"kind": "batch", "platform": {
        "nodes": nodes, "memory_per_node": "1GB", "lps": {"rate": lps}, "hps": {"rate": "10GB/s", "capacity": "1TB"},
        "stage_rate": "2GB/s", "io_nodes": 1, "io_node": {"rate": io_rate, "policy": policy}},
        "scheduler": "fcfs", "workload": {"source": "inline", "jobs": jobs}}, "<t>")


def writer(job, nodes=1, runtime=10, output="10GB", **more):
    return {"id": job, "submit": 0, "nodes": nodes, "walltime": 1000, "runtime": runtime, "output": output, **more}


def write_ends(trace) -> dict:
    return {str(j): float(e) for j, k, e in zip(trace.phases["job"], trace.phases["kind"], trace.phases["end"])
            if k == "write"}


def test_batch_tbf_caps_each_part_and_leaves_the_rest_of_the_node_unused():
    # two 1-node jobs write 10 GB each after 9 s of compute (1 s of it alone on LPS at 10 GB/s); the I/O node
    # carries 1 GB/s; the TBF caps every job at 250 MB/s: 40 s each, half the node unused
    jobs = [writer("a"), writer("b")]
    t = simulate_batch(batch(jobs, {"kind": "tbf", "default_rate": "250MB/s"}), strict=True)
    assert write_ends(t) == pytest.approx({"a": 9 + 40, "b": 9 + 40})
    shared = simulate_batch(batch(jobs, "shared"), strict=True)
    assert write_ends(shared) == pytest.approx({"a": 9 + 20, "b": 9 + 20})


def test_batch_size_fair_shares_the_node_by_job_size():
    # a (3 nodes) and b (1 node) write 10 GB at 9 s: a at 0.75 GB/s ends 13.33 s later, b moved 3.33 GB by
    # then and moves its 6.67 GB left alone at 1 GB/s
    t = simulate_batch(batch([writer("a", nodes=3), writer("b")], "size-fair"), strict=True)
    assert write_ends(t) == pytest.approx({"a": 9 + 10 / 0.75, "b": 9 + 10 / 0.75 + (10 - 10 / 3) / 1})


def test_batch_policy_is_shown_the_parts_with_their_jobs_size_and_user(user_file, tmp_path):
    log = tmp_path / "calls.jsonl"
    jobs = [writer("a", nodes=3, user="alice"), writer("b", user="bob")]
    t = simulate_batch(batch(jobs, user(user_file, "Recorder", path=str(log))), strict=True)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c[0] for c in calls] == pytest.approx([9.0, 9 + 10 / 0.75])  # both join at 9; a leaves
    a, b = calls[0][1]
    assert a == ["a@io0", "a", 0, 3, pytest.approx(10 * GB), 0.0, 9.0, "alice"]
    assert b[:4] == ["b@io0", "b", 1, 1] and b[7] == "bob"
    assert calls[1][1][0][0] == "b@io0" and calls[1][1][0][5] == pytest.approx(10 * GB / 3)  # moved so far
    assert write_ends(t) == pytest.approx({"a": 9 + 10 / 0.75, "b": 9 + 10 / 0.75 + (10 - 10 / 3)})
