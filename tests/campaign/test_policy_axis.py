"""Policies of one's own on a campaign's axes, next to built-in names: expanded with their file's hash, run
as Ray tasks like any run, labelled in the results by file and class."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from iolab.campaign.expand import expand, load_campaign
from iolab.middleware.policies.batch.job_table import scheduler_label
from iolab.middleware.policies.io_guard import policy_label
from iolab.sim.io.run import simulate
from iolab.specs.batch import BatchExperiment
from iolab.specs.io import IOExperiment

from policy_files import batch_doc, write

ORDERS = '''
from iolab.policy import IOOrder


class LAS(IOOrder):
    """Least attained service: the app with the least I/O time so far first."""

    def key(self, request, now):
        return request.io_received
'''

SJF = '''
from iolab.policy import BatchScheduler


class SJF(BatchScheduler):
    """Shortest walltime first, each job that fits now."""

    def decide(self, snap):
        free, out = snap.free_nodes, []
        for j in sorted(snap.queue, key=lambda j: (j.walltime, j.submit, j.id)):
            if j.nodes <= free:
                out.append(j.id)
                free -= j.nodes
        return out
'''


def test_an_io_campaign_expands_user_orders_beside_built_ins(tmp_path):
    (tmp_path / "pol").mkdir()
    write(tmp_path / "pol", "orders.py", ORDERS)
    camp = tmp_path / "c.yaml"
    camp.write_text(json.dumps({
        "kind": "campaign", "name": "orders",
        "base": {"platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0},
                 "apps": [{"id": f"A{i}", "nodes": 2, "iterations": 10, "compute": 2.0 + i, "io_volume": 1.0}
                          for i in range(4)]},
        "axes": {"policies": ["fifo", "pol/orders.py:LAS", {"kind": "python", "path": "pol/orders.py",
                                                               "class": "LAS"}], "seeds": [1, 2]}}))
    with pytest.raises(Exception, match="duplicate"):  # the same policy twice, written two ways
        expand(load_campaign(camp), camp)
    data = json.loads(camp.read_text())
    data["axes"]["policies"] = data["axes"]["policies"][:2]
    camp.write_text(json.dumps(data))
    runs = expand(load_campaign(camp), camp)
    assert [r.params["policy"] for r in runs] == ["fifo", "orders.py:LAS"] * 2
    user = runs[1].experiment["policy"]
    assert user["path"] == str(tmp_path / "pol" / "orders.py") and len(user["sha256"]) == 64


def test_an_io_campaigns_policy_column_is_the_traces_policy_attribute(tmp_path):
    """The column and the trace name a policy by one rule (io_guard's policy_label)."""
    write(tmp_path, "orders.py", ORDERS)
    camp = tmp_path / "c.json"
    tbf = {"kind": "tbf", "rules": [{"job": "A*", "rate": 0.5}], "default_rate": 1.0}
    camp.write_text(json.dumps({
        "kind": "campaign", "name": "labels",
        "base": {"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
                 "apps": [{"id": f"A{i}", "nodes": 2, "iterations": 2, "compute": 1.0 + i, "io_volume": 1.0}
                          for i in range(3)]},
        "axes": {"policies": ["fifo", tbf, "orders.py:LAS"]}}))
    runs = expand(load_campaign(camp), camp)
    assert [r.params["policy"] for r in runs] == ["fifo", "tbf", "orders.py:LAS"]
    for r in runs:
        spec = IOExperiment.model_validate(r.experiment)
        assert r.params["policy"] == policy_label(spec.policy) == simulate(spec, strict=True).attrs["policy"]


def test_a_batch_campaigns_policy_column_is_the_traces_scheduler_and_the_options_given(tmp_path):
    """The trace's name for the scheduler (job_table's scheduler_label), then the options given: runs that
    differ in an option differ in the column."""
    write(tmp_path, "sjf.py", SJF)
    camp = tmp_path / "c.json"
    camp.write_text(json.dumps({
        "kind": "campaign", "name": "labels", "base": batch_doc("fcfs"),
        "axes": {"schedulers": ["easy", {"kind": "random-tier", "p": 0.4}, "sjf.py:SJF",
                                {"kind": "python", "path": "sjf.py", "class": "SJF", "options": {"depth": 8}}]}}))
    runs = expand(load_campaign(camp), camp)
    assert [r.params["policy"] for r in runs] == ["easy", "random-tier(p=0.4)", "sjf.py:SJF", "sjf.py:SJF(depth=8)"]
    for r, options in zip(runs, ["", "(p=0.4)", "", "(depth=8)"]):
        spec = BatchExperiment.model_validate(r.experiment, context={"base_dir": tmp_path})
        assert r.params["policy"] == scheduler_label(spec) + options


@pytest.mark.ray
def test_a_batch_campaign_runs_a_user_scheduler_as_ray_tasks(tmp_path):
    write(tmp_path, "sjf.py", SJF)
    camp = tmp_path / "c.json"
    camp.write_text(json.dumps({
        "kind": "campaign", "name": "scheds",
        "base": {"kind": "batch", "platform": {"nodes": 32, "lps": {"rate": "1 GB/s"},
                                               "hps": {"rate": "10 GB/s", "capacity": "1 TB"}, "stage_rate": "1 GB/s"},
                 "scheduler": "fcfs", "workload": {"source": "feitelson", "jobs": 60, "shortest": 60, "longest": 3600,
                                                   "arrival_factor": 100}},
        "axes": {"schedulers": ["easy", "sjf.py:SJF"], "seeds": [1, 2]}}))
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "iolab", "sweep", str(camp), "--workers", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines() if line.strip()]
    runs = [x for x in rows if x.get("status") == "ok"]
    assert sorted(x["params"]["policy"] for x in runs) == ["easy", "easy", "sjf.py:SJF", "sjf.py:SJF"]
    by = {(x["params"]["policy"], x["params"]["seed"]): x["metrics"] for x in runs}
    # the same jobs under two schedulers: their makespans differ on at least one seed
    assert any(by[("easy", s)]["makespan"] != by[("sjf.py:SJF", s)]["makespan"] for s in (1, 2))
    # the report of a batch campaign compares the schedulers on their queues too
    rep = subprocess.run([sys.executable, "-m", "iolab", "report", str(out)], capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stderr
    header = next(line for line in rep.stdout.splitlines() if line.startswith("scheduler"))
    assert "mean turnaround s" in header and "node utilisation" in header
    cols = next(line for line in rep.stdout.splitlines() if line.startswith("sjf.py:SJF")).split()
    tts = [by[("sjf.py:SJF", s)]["mean_turnaround"] for s in (1, 2)]
    assert float(cols[7].replace(",", "")) == pytest.approx((tts[0] * tts[1]) ** 0.5, abs=1)
