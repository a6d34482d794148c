"""Batsim's JSON protocol (Batsim 4, the one pybatsim 3.2.1 speaks): the events iolab sends, and a scheduler's
reply read and checked field by field.

A message is ``{"now": t, "events": [{"timestamp", "type", "data"}, ...]}``; iolab (Batsim's side) sends one
whenever something happened, the scheduler answers one.  A reply is held to Batsim's own rules (its
``protocol.cpp`` and ``server.cpp``): a JSON object with a number ``now`` not before the message it answers and
an ``events`` list; each event an object with a number ``timestamp`` (ascending, not after ``now``, not before
the message it answers), a ``type`` and a ``data`` object; the fields of each type as Batsim reads them.  A
broken one raises :class:`BatsimProtocolError` naming the event, its type and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from iolab.invariants import InvariantViolation
from iolab.tiers import TIERS

from iolab.middleware.policies.batsim.intervals import parse_ids

#: what iolab applies (SET_JOB_METADATA and the scheduler's NOTIFY are read and have no effect)
APPLIED = ("EXECUTE_JOB", "REJECT_JOB", "KILL_JOB", "CALL_ME_LATER", "NOTIFY", "SET_JOB_METADATA")
#: Batsim's other scheduler-to-Batsim events: iolab has no dynamic jobs, resource states or queries
NOT_SUPPORTED = ("QUERY", "ANSWER", "REGISTER_JOB", "REGISTER_PROFILE", "SET_RESOURCE_STATE", "CHANGE_JOB_STATE",
                 "TO_JOB_MSG", "SUBMIT_JOB")
TIMESTAMP_SLACK = 1e-9  # relative: a reply's times written with fewer decimals than iolab's are the same time
TIER_KEY = "iolab_tier"  # in EXECUTE_JOB's storage_mapping: the tier, for a client that can only set that


class BatsimProtocolError(InvariantViolation):
    """A scheduler's message broke Batsim's protocol: ``subject`` names the event and field."""

    def __init__(self, t: float, where: str, detail: str):
        super().__init__("batsim-protocol", t, where, detail)

    def __reduce__(self):
        return type(self), (self.time, self.subject, self.detail)


class SchedulerTimeout(InvariantViolation):
    """The scheduler did not answer a message in time (or its socket failed)."""

    def __init__(self, t: float, endpoint: str, detail: str):
        super().__init__("batsim-timeout", t, endpoint, detail)

    def __reduce__(self):
        return type(self), (self.time, self.subject, self.detail)


# ---------------------------------------------------------------- what iolab sends

def event(t: float, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": t, "type": kind, "data": data}


def message(now: float, events: list[dict[str, Any]]) -> str:
    return json.dumps({"now": now, "events": events}, separators=(",", ":"))


BATSIM_CONFIG = {  # SIMULATION_BEGINS.data.config: what a Batsim 4 started without options says
    "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379, "redis-prefix": "default",
    "profiles-forwarded-on-submission": False, "dynamic-jobs-enabled": False, "dynamic-jobs-acknowledged": False,
    "profile-reuse-enabled": False, "sched-config": "", "forward-unknown-events": False,
}


def simulation_begins(nodes: int, workload: str, profiles: dict[str, Any], iolab: dict[str, Any],
                      sched_config: str = "") -> dict[str, Any]:
    """SIMULATION_BEGINS: ``nodes`` compute resources (ids 0..nodes-1, no storage resource: iolab's tiers are in
    the ``iolab`` field), the workload's profiles."""
    resources = [{"id": i, "name": f"node{i}", "state": "idle", "properties": {}, "zone_properties": {}}
                 for i in range(nodes)]
    return event(0.0, "SIMULATION_BEGINS", {
        "nb_resources": nodes, "nb_compute_resources": nodes, "nb_storage_resources": 0,
        "allow_compute_sharing": False, "allow_storage_sharing": True,
        "config": {**BATSIM_CONFIG, "sched-config": sched_config},
        "compute_resources": resources, "storage_resources": [],
        "workloads": {workload: f"iolab:{workload}"}, "profiles": {workload: profiles}, "iolab": iolab})


# ---------------------------------------------------------------- a reply, read

@dataclass
class Reply:
    """What a reply asks, in its order: ``executes`` (event index, job id, node ids, tier), ``rejects`` and
    ``kills`` (event index, job ids), ``calls`` (times to be called at)."""

    now: float
    events: int = 0
    executes: list[tuple[int, str, tuple[int, ...], str]] = field(default_factory=list)
    rejects: list[tuple[int, str]] = field(default_factory=list)
    kills: list[tuple[int, list[str]]] = field(default_factory=list)
    calls: list[float] = field(default_factory=list)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _show(v: Any, n: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= n else text[:n] + "..."


def read_reply(text: str | bytes, asked: float, about: str) -> Reply:
    """The scheduler's reply ``text`` to the message of time ``asked`` (``about`` says what that message held,
    for the errors); raises :class:`BatsimProtocolError`."""
    def bad(where: str, detail: str) -> BatsimProtocolError:
        return BatsimProtocolError(asked, where, f"{detail} (in the reply to {about})")

    try:
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad("the reply", f"not JSON ({exc}): {_show(text)}") from None
    if not isinstance(doc, dict):
        raise bad("the reply", f"not a JSON object: {_show(doc)}")
    now = doc.get("now")
    if not _is_number(now):
        raise bad("the reply's now", f"a finite number, got {_show(now)}")
    slack = TIMESTAMP_SLACK * max(1.0, abs(asked))
    if now < asked - slack:
        raise bad("the reply's now", f"{now:g} is before the message's now {asked:g} (time runs forward)")
    events = doc.get("events")
    if not isinstance(events, list):
        raise bad("the reply's events", f"a list of events, got {_show(events)}")
    out = Reply(float(now), len(events))
    last = -math.inf
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            raise bad(f"event {i}", f"not an object: {_show(ev)}")
        kind = ev.get("type")
        name = kind if isinstance(kind, str) else "?"
        ts = ev.get("timestamp")
        if not _is_number(ts):
            raise bad(f"{name}.timestamp (event {i})", f"a finite number, got {_show(ts)}")
        if ts < asked - slack:
            raise bad(f"{name}.timestamp (event {i})", f"{ts:g} is before the message's now {asked:g}: a decision "
                      "cannot change the past")
        if ts > now + slack:
            raise bad(f"{name}.timestamp (event {i})", f"{ts:g} is after the reply's now {now:g}")
        if ts < last - slack:
            raise bad(f"{name}.timestamp (event {i})", f"{ts:g} is before the event before it ({last:g}): events "
                      "are in time order")
        last = ts
        if not isinstance(kind, str) or kind not in APPLIED:
            known = kind in NOT_SUPPORTED
            raise bad(f"{name}.type (event {i})", f"{_show(kind)} is " + (
                "a Batsim event iolab does not support" if known else "not an event of Batsim's protocol")
                + f"; iolab applies {', '.join(APPLIED)}")
        data = ev.get("data")
        if not isinstance(data, dict):
            raise bad(f"{kind}.data (event {i})", f"an object, got {_show(data)}")
        _read_event(out, i, kind, data, asked, bad)
    return out


def _job_id(data: dict, key: str, where: str, bad) -> str:
    jid = data.get(key)
    if not isinstance(jid, str) or not jid:
        raise bad(where, f"a job id (text), got {_show(jid)}")
    return jid


def _read_event(out: Reply, i: int, kind: str, data: dict, asked: float, bad) -> None:
    at = f" (event {i})"
    if kind == "EXECUTE_JOB":
        jid = _job_id(data, "job_id", f"EXECUTE_JOB.data.job_id{at}", bad)
        alloc = data.get("alloc")
        try:
            ids = parse_ids(alloc)
        except ValueError as exc:
            raise bad(f"EXECUTE_JOB.data.alloc{at}", f"{_show(alloc)}: {exc}") from None
        tier = data.get("tier")
        mapping = data.get("storage_mapping")
        if tier is None and isinstance(mapping, dict):
            tier = mapping.get(TIER_KEY)
        tier = "lps" if tier is None else tier
        if tier not in TIERS:
            raise bad(f"EXECUTE_JOB.data.tier{at}", f"{_show(tier)}; iolab's tiers are {', '.join(TIERS)}")
        for extra in ("mapping", "additional_io_job"):
            if data.get(extra):
                raise bad(f"EXECUTE_JOB.data.{extra}{at}", "iolab runs a job's ranks on its nodes in order and "
                          "models its I/O itself: no executor mapping or additional I/O job")
        out.executes.append((i, jid, ids, tier))
    elif kind == "REJECT_JOB":
        out.rejects.append((i, _job_id(data, "job_id", f"REJECT_JOB.data.job_id{at}", bad)))
    elif kind == "KILL_JOB":
        ids = data.get("job_ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(j, str) and j for j in ids):
            raise bad(f"KILL_JOB.data.job_ids{at}", f"a non-empty list of job ids, got {_show(ids)}")
        out.kills.append((i, list(ids)))
    elif kind == "CALL_ME_LATER":
        t = data.get("timestamp")
        if not _is_number(t):
            raise bad(f"CALL_ME_LATER.data.timestamp{at}", f"a finite number, got {_show(t)}")
        if not t > asked:
            raise bad(f"CALL_ME_LATER.data.timestamp{at}", f"{t:g} is not after the message's now {asked:g} "
                      "(Batsim: 'You asked to be awaken in the past!')")
        out.calls.append(float(t))
    elif kind == "NOTIFY":
        if not isinstance(data.get("type"), str):
            raise bad(f"NOTIFY.data.type{at}", f"a notification type (text), got {_show(data.get('type'))}")
    elif kind == "SET_JOB_METADATA":
        _job_id(data, "job_id", f"SET_JOB_METADATA.data.job_id{at}", bad)


__all__ = ["APPLIED", "BATSIM_CONFIG", "BatsimProtocolError", "NOT_SUPPORTED", "Reply", "SchedulerTimeout",
           "TIER_KEY", "event", "message", "read_reply", "simulation_begins"]
