"""The storage load controller's small real batch runs, shared by the local tests
(``tests/emulator/batch/test_batch_controller.py``: jobs under ``mpiexec``) and the Slurm ones
(``tests/slurm/test_batch_srun.py``: jobs as srun steps): the spec, the trace's suspensions, the
jobs' results, and a thread that kills the controller actor once a job is really stopped."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Callable

from iolab.emulator.suspension import process_state
from iolab.specs.batch import BatchExperiment


def spec(tier: str = "lps", runtime: float = 600, **controller) -> BatchExperiment:
    """Three checkpointing jobs on ``tier``'s volume (on HPS: each holds 5 GB of it, asked for)."""
    hps = tier == "hps"
    return BatchExperiment.model_validate({
        "name": "controller-small",
        "platform": {"nodes": 3, "memory_per_node": "1GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "10 GB/s", "capacity": "20 GB"}, "stage_rate": "1 GB/s"},
        "scheduler": {"kind": "fcfs", "hps_requests": hps},
        "workload": [{"id": j, "submit": i, "nodes": 1, "walltime": 2000, "runtime": runtime, "data": "4GB",
                      **({"storage": "5GB"} if hps else {})} for i, j in enumerate("abc")],
        "emulator": {"time_scale": 0.02, "bytes_scale": 1e-4, "max_wall": 600},
        "controller": {"d": 50, "ws": 150, "alpha": 0.6, "r_threshold": 1e-6, "t": 50, "short_sleep": 50,
                       "omega": "500MB", "recent": 1e6, "p": "10MB", "volumes": [tier], **controller},
    })


def intervals(trace):
    return [(r["job"], r["suspend"], r["resume"]) for r in trace.actions.rows()]


def summaries(work):
    return {j: json.loads((work / "apps" / j / f"{j}.summary.json").read_text())
            if (work / "apps" / j / f"{j}.summary.json").exists() else None for j in "abc"}


def all_stopped(pids) -> bool:
    """Every one of ``pids`` is stopped (state T on /proc), and there is at least one."""
    return bool(pids) and all(process_state(p) in ("T", "t") for p in pids)


KILL_CONTROLLER = """
import json, sys, time
import ray
ray.init(address=sys.argv[1], log_to_driver=False)
for a in ray.util.list_named_actors(all_namespaces=True):
    if a["name"].startswith("controller-"):
        ray.kill(ray.get_actor(a["name"], namespace=a["namespace"]), no_restart=True)
        print(json.dumps({"at": time.time()}), flush=True)
        break
ray.shutdown()
"""


def kill_controller_when(stopped: Callable[[], list[str]], killed: dict, ready: Callable[[], bool] = lambda: True,
                         timeout: float = 200.0) -> threading.Thread:
    """A daemon thread that kills the run's controller actor (``controller-*``, any namespace) as soon
    as ``stopped()`` names a job whose processes are really stopped and ``ready()`` holds; it fills
    ``killed`` with ``at`` (wall time) and ``stopped`` (those jobs).

    The kill comes from a driver process of its own that joins the run's Ray: a thread of the run's
    driver that looks up an actor while the run waits on results can deadlock inside Ray (seen in CI:
    a thread stuck unpickling an actor class held Ray's lock, and the calls waiting on that lock
    hung until pytest-timeout stopped their tests)."""
    import ray

    def run():
        deadline = time.time() + timeout
        while time.time() < deadline:
            jobs = stopped()
            if jobs and ready() and ray.is_initialized():
                out = subprocess.run([sys.executable, "-c", KILL_CONTROLLER, ray.get_runtime_context().gcs_address],
                                     capture_output=True, text=True, timeout=120)
                lines = out.stdout.strip().splitlines()
                if lines:
                    killed.update(json.loads(lines[-1]), stopped=jobs)
                    return
            time.sleep(0.1)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
