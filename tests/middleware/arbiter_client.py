"""One app of test_arbiter_actor.py, as its own process (an app rank is a process, never a thread of the
driver: Ray's driver can deadlock when several threads look up an actor while others wait on results, and
a stuck thread holding Ray's lock can hang later Ray calls of the session).

    python arbiter_client.py GCS NAMESPACE ACTOR APP PHASES HOLD NBYTES

prints one JSON line: ``{"spans": [[app, granted_at, end], ...]}`` or ``{"error": "..."}``."""

from __future__ import annotations

import json
import sys
import time


def main(gcs: str, namespace: str, actor: str, app: str, phases: int, hold: float, nbytes: int) -> dict:
    from iolab.middleware.client import RayCoordinator

    c = RayCoordinator({"address": gcs, "namespace": namespace, "actor": actor, "app": app}, 0, 1)
    spans = []
    for p in range(phases):
        g = c.begin_io(p, "write", 1)
        if nbytes:
            c.throttle(nbytes)
            c.throttle(0)  # the file's end: wait until the link has carried the bytes
        time.sleep(hold)
        spans.append((app, g.granted_at, time.time()))
        c.end_io(p, 1)
        c.report(p, "write", g.granted_at, time.time(), 1)
    c.finish(True)
    c.close()
    return {"spans": spans}


if __name__ == "__main__":
    gcs, ns, actor, app, phases, hold, nbytes = sys.argv[1:]
    try:
        out = main(gcs, ns, actor, app, int(phases), float(hold), int(nbytes))
    except Exception as exc:  # reported to the test, which fails on it
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out), flush=True)
