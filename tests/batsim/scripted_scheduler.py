"""A Batsim scheduler that breaks the protocol on purpose (``python scripted_scheduler.py ENDPOINT MODE``): a REP
socket bound at ENDPOINT, as pybatsim's; it answers SIMULATION_BEGINS with nothing, then, at the first message
that submits jobs, as MODE says:

- ``garbage``: a reply that is not JSON;
- ``unknown``: EXECUTE_JOB of a job the workload does not have;
- ``overlap``: EXECUTE_JOB of the first two jobs on the same resources;
- ``silent``: no answer at all;
- ``past-call``: CALL_ME_LATER at the message's own time;
- ``bad-alloc``: an alloc that is not an interval set;
- ``ok``: FCFS, each job on the lowest free resources (a scheduler that keeps the rules);
- ``reject-kill``: ``ok``, except that when job ``c`` is submitted it rejects it, kills job ``b`` and asks to be
  called 2 s later.

It prints every event it receives (``time type``) on its standard output.
"""

from __future__ import annotations

import json
import sys
import time

import zmq


def main(endpoint: str, mode: str) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.bind(endpoint)
    free, waiting, held, nodes = [], [], {}, 0
    while True:
        msg = json.loads(sock.recv())
        now, out = msg["now"], []
        submitted = [e["data"]["job"] for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        for e in msg["events"]:
            print(f"{e['timestamp']:g} {e['type']}", flush=True)
            if e["type"] == "SIMULATION_BEGINS":
                nodes = e["data"]["nb_compute_resources"]
                free = list(range(nodes))
            elif e["type"] == "JOB_COMPLETED":
                free = sorted(free + held.pop(e["data"]["job_id"]))
            elif e["type"] == "JOB_KILLED":
                for j in e["data"]["job_ids"]:
                    free = sorted(free + held.pop(j))
            elif e["type"] == "SIMULATION_ENDS":
                sock.send_string(json.dumps({"now": now, "events": []}))
                return
        if submitted and mode not in ("ok", "reject-kill"):
            first = submitted[0]["id"]
            if mode == "garbage":
                sock.send_string("this is not JSON")
                continue
            if mode == "silent":
                time.sleep(60)
                return
            wl = first.split("!")[0]
            out = {"unknown": [("EXECUTE_JOB", {"job_id": f"{wl}!no-such-job", "alloc": "0"})],
                   "overlap": [("EXECUTE_JOB", {"job_id": j["id"], "alloc": "0-1"}) for j in submitted[:2]],
                   "past-call": [("CALL_ME_LATER", {"timestamp": now})],
                   "bad-alloc": [("EXECUTE_JOB", {"job_id": first, "alloc": "0-x"})]}[mode]
            sock.send_string(json.dumps({"now": now, "events": [{"timestamp": now, "type": t, "data": d}
                                                                 for t, d in out]}))
            continue
        if mode == "reject-kill" and any(j["id"].endswith("!c") for j in submitted):
            wl = submitted[0]["id"].split("!")[0]
            out += [{"timestamp": now, "type": "REJECT_JOB", "data": {"job_id": f"{wl}!c"}},
                    {"timestamp": now, "type": "KILL_JOB", "data": {"job_ids": [f"{wl}!b"]}},
                    {"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": now + 2}}]
            submitted = [j for j in submitted if not j["id"].endswith("!c")]
        waiting += submitted
        while waiting and waiting[0]["res"] <= len(free):
            job = waiting.pop(0)
            held[job["id"]], free = free[:job["res"]], free[job["res"]:]
            out.append({"timestamp": now, "type": "EXECUTE_JOB",
                        "data": {"job_id": job["id"], "alloc": " ".join(map(str, held[job["id"]]))}})
        sock.send_string(json.dumps({"now": now, "events": out}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
