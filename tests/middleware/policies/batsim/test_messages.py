"""Batsim's interval sets and a reply's rules, read without a socket (what the adapter holds a scheduler to)."""

from __future__ import annotations

import json

import pytest

from iolab.middleware.policies.batsim import BatsimProtocolError, format_ids, parse_ids
from iolab.middleware.policies.batsim.messages import read_reply


@pytest.mark.parametrize("text, ids, canonical", [
    ("0-3 7", (0, 1, 2, 3, 7), "0-3 7"), ("5 2-2 7 1-3", (1, 2, 3, 5, 7), "1-3 5 7"), ("1-2 1-3", (1, 2, 3), "1-3"),
    ("42", (42,), "42"),
])
def test_any_representation_is_read_and_the_canonical_one_written(text, ids, canonical):
    assert parse_ids(text) == ids and format_ids(ids) == canonical and parse_ids(canonical) == ids


@pytest.mark.parametrize("text", ["", "3-1", "a", "1,2", "-1", "0-99999999999"])
def test_what_is_not_an_interval_set_is_refused(text):
    with pytest.raises(ValueError):
        parse_ids(text)


def _reply(now, *events):
    return json.dumps({"now": now, "events": [{"timestamp": t, "type": k, "data": d} for t, k, d in events]})


@pytest.mark.parametrize("text, where", [
    (_reply(9, (10, "NOTIFY", {"type": "x"})), "the reply's now"),
    (_reply(12, (11, "NOTIFY", {"type": "x"}), (10.5, "NOTIFY", {"type": "x"})), "NOTIFY.timestamp (event 1)"),
    (_reply(12, (13, "NOTIFY", {"type": "x"})), "NOTIFY.timestamp (event 0)"),
    (_reply(10, (10, "REGISTER_JOB", {})), "REGISTER_JOB.type (event 0)"),
    (_reply(10, (10, "EXECUTE_JOB", {"job_id": "w!1", "alloc": "0", "tier": "ssd"})), "EXECUTE_JOB.data.tier (event 0)"),
    (_reply(10, (10, "KILL_JOB", {"job_ids": []})), "KILL_JOB.data.job_ids (event 0)"),
    (json.dumps({"now": 10}), "the reply's events"),
    (json.dumps([1, 2]), "the reply"),
])
def test_a_reply_that_breaks_batsims_rules_names_where(text, where):
    with pytest.raises(BatsimProtocolError) as err:
        read_reply(text, 10.0, "the message of t=10")
    assert err.value.subject == where, str(err.value)
    assert "the message of t=10" in str(err.value)


def test_a_later_now_and_the_tier_are_read():
    r = read_reply(_reply(10.005, (10.005, "EXECUTE_JOB", {"job_id": "w!1", "alloc": "2-3",
                                                           "storage_mapping": {"iolab_tier": "hps"}}),
                          (10.005, "CALL_ME_LATER", {"timestamp": 30})), 10.0, "m")
    assert r.executes == [(0, "w!1", (2, 3), "hps")] and r.calls == [30.0]
