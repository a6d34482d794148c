"""A scheduler that breaks Batsim's protocol stops the run with a named error (the rule, the Batsim event and
field), exit 1, never a hang: one that answers garbage, names an unknown job, books the same resources twice, asks
to be called in the past, sends an alloc that is not an interval set, or does not answer at all (--timeout).  Each
is a real process on a real ZeroMQ socket (``scripted_scheduler.py``)."""

from __future__ import annotations

import math
import time

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.trace import read_trace

from batsim_processes import free_endpoint

SPEC = {"kind": "batch", "name": "w0",
        "platform": {"nodes": 4, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "10 GB/s", "capacity": "100 GB"},
                     "stage_rate": "5 GB/s"},
        "scheduler": "fcfs",
        "workload": [{"id": "a", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 50},
                     {"id": "b", "submit": 0, "nodes": 2, "walltime": 100, "runtime": 80},
                     {"id": "c", "submit": 5, "nodes": 4, "walltime": 10, "runtime": 5}]}


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "w0.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


def _run(spec_file, endpoint, *extra):
    return CliRunner().invoke(cli, ["batsim", str(spec_file), "--socket", endpoint, "--timeout", "2", *extra])


def test_a_scheduler_that_keeps_the_rules_runs_every_job(spec_file, start_scripted, tmp_path):
    s = start_scripted("ok")
    res = _run(spec_file, s.endpoint, "--out", str(tmp_path / "t.h5"), "--json", "--strict")
    assert res.exit_code == 0, res.output
    assert s.wait(10) == 0  # it got SIMULATION_ENDS and left
    assert '"jobs": 3' in res.output and '"messages":' in res.output


def test_rejects_kills_and_calls_are_applied_and_acknowledged(spec_file, start_scripted, tmp_path):
    s = start_scripted("reject-kill")
    res = _run(spec_file, s.endpoint, "--out", str(tmp_path / "t.h5"), "--strict")
    assert res.exit_code == 0, res.output
    assert s.wait(10) == 0
    j = read_trace(tmp_path / "t.h5").jobs
    got = {str(i): (str(st), float(a), float(b)) for i, st, a, b in zip(j["id"], j["status"], j["start"], j["end"])}
    assert got["a"] == ("ok", 0.0, 50.0) and got["b"] == ("killed", 0.0, 5.0)
    assert got["c"][0] == "killed" and math.isnan(got["c"][1])  # rejected: never ran
    heard = s.text().split("\n")
    assert "5 JOB_KILLED" in heard and "7 REQUESTED_CALL" in heard and "50 JOB_COMPLETED" in heard
    assert heard.index("5 JOB_KILLED") < heard.index("7 REQUESTED_CALL") < heard.index("50 JOB_COMPLETED")
    assert "JOB_COMPLETED" not in "".join(h for h in heard if h.startswith("5 "))  # b is killed, not completed


@pytest.mark.parametrize("mode, words", [
    ("garbage", ["batsim-protocol", "the reply", "not JSON", "'this is not JSON'", "JOB_SUBMITTED"]),
    ("unknown", ["unknown-job", "EXECUTE_JOB.data.job_id (event 0)", "'w0!no-such-job'"]),
    ("overlap", ["node-double-booked", "EXECUTE_JOB.data.alloc (event 1)", "resource 0 of w0!b",
                 "alloc of w0!a"]),
    ("past-call", ["batsim-protocol", "CALL_ME_LATER.data.timestamp (event 0)", "not after the message's now 0"]),
    ("bad-alloc", ["batsim-protocol", "EXECUTE_JOB.data.alloc (event 0)", "'0-x'"]),
])
def test_a_broken_reply_is_refused_naming_the_event_and_field(spec_file, start_scripted, mode, words):
    s = start_scripted(mode)
    res = _run(spec_file, s.endpoint)
    assert res.exit_code == 1, res.output
    for w in words:
        assert w in res.output, res.output


def test_a_scheduler_that_does_not_answer_times_out_naming_the_message(spec_file, start_scripted):
    s = start_scripted("silent")
    t0 = time.monotonic()
    res = _run(spec_file, s.endpoint)
    assert res.exit_code == 1, res.output
    assert time.monotonic() - t0 < 10
    for w in ["batsim-timeout", s.endpoint, "did not answer the message of t=0 (2 JOB_SUBMITTED)", "within 2 s"]:
        assert w in res.output, res.output


def test_no_scheduler_at_all_is_found_before_the_run(spec_file, tmp_path):
    res = _run(spec_file, free_endpoint(), "--out", str(tmp_path / "t.h5"))
    assert res.exit_code == 1 and "did not answer the message of t=0 (1 SIMULATION_BEGINS)" in res.output, res.output


@pytest.mark.parametrize("endpoint", ["localhost:28000", "tcp://127.0.0.1", "tcp://127.0.0.1:99999", "udp://x:1"])
def test_an_endpoint_iolab_cannot_connect_to_is_bad_usage(spec_file, endpoint):
    res = _run(spec_file, endpoint)
    assert res.exit_code == 2 and "--socket" in res.output, res.output


def test_a_real_run_in_its_own_network_namespace_asks_for_an_ipc_endpoint(spec_file):
    res = CliRunner(env={"IOLAB_NETNS": "1"}).invoke(cli, ["batsim", str(spec_file), "--socket",
                                                           "tcp://127.0.0.1:28000", "--real"])
    assert res.exit_code == 2 and "ipc://" in res.output and "IOLAB_NETWORK=open" in res.output, res.output
