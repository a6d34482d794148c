"""Runtimes for the campaign tests, imported by Ray workers through PYTHONPATH.

- ``counting``: logs the run id to $IOLAB_TEST_EXEC_LOG (one O_APPEND line per
  execution), sleeps $IOLAB_TEST_SLEEP seconds, then simulates: a per-run
  execution counter that a killed driver cannot fake.
- ``failing``: raises inside the task for policy ``stretch``; simulates otherwise.
"""

from __future__ import annotations

import os
import time

from iolab.campaign.runtimes import run_sim


def counting(spec, *, mode, run_id="", workdir=None):
    log = os.environ.get("IOLAB_TEST_EXEC_LOG")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{run_id}\n".encode())
        finally:
            os.close(fd)
    time.sleep(float(os.environ.get("IOLAB_TEST_SLEEP", "0")))
    return run_sim(spec, mode=mode)


class InjectedFailure(RuntimeError):
    pass


def failing(spec, *, mode, run_id="", workdir=None):
    if spec.policy == "stretch":
        raise InjectedFailure(f"injected failure for {spec.name} under policy stretch")
    return run_sim(spec, mode=mode)


def first_app_fails(spec, *, mode, run_id="", workdir=None):
    """A run that ends with its first app ``failed`` in the trace (as a real run whose rank died)."""
    trace = run_sim(spec, mode=mode)
    status = trace.jobs.columns["status"].astype(object)
    status[0] = "failed"
    trace.jobs.columns["status"] = status
    return trace
