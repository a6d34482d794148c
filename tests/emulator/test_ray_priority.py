"""The control plane's priority, on /proc: the actors of a local Ray run at the driver's niceness (0), above the
apps (nice 10).

Ray starts its workers at nice 15 by default; under the apps' load an actor then got a few per cent of a core
(a load controller's cycle timed out after 30 s; importing scikit-learn in an actor took 77 s instead of 2).
At nice 0, no idle workers may be started ahead: their start-up competed with the first run's apps."""

from __future__ import annotations

import os
import time

import pytest

from listening import command, process_tree

pytestmark = pytest.mark.ray


def nice_of(pid: int) -> int:
    """Field 19 of /proc/PID/stat (after the command's closing parenthesis: field 3 is the 1st)."""
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[16])


def is_worker(cmd: str) -> bool:
    """A Ray worker process: named ``ray::IDLE`` (or ``ray::CLASS`` once it holds an actor, which
    ``ray::...Agent`` are not), or a Python still starting ``default_worker.py``/``setup_worker.py``."""
    words = cmd.split()
    starting = len(words) > 1 and words[1].endswith(("default_worker.py", "setup_worker.py"))
    return starting or (cmd.startswith("ray::") and not words[0].endswith("Agent"))


def test_the_actors_of_a_local_ray_run_at_the_driver_s_priority():
    import ray

    from iolab.emulator.ray_session import RaySession

    if ray.is_initialized():
        pytest.skip("a Ray is already up in this process: its workers keep the niceness it was started with")
    with RaySession.open() as session:
        assert session.owned

        @ray.remote(num_cpus=0)
        class Probe:
            def pid(self):
                return os.getpid()

        # wait for the event, not a fixed time: the pool has started a worker (the probe's), after the
        # ones Ray prestarts at init and for the first driver would have been started
        pid = ray.get(Probe.remote().pid.remote())
        assert pid != os.getpid()
        assert nice_of(pid) == nice_of(os.getpid())  # not Ray's default 15 more than its parent
        # any other worker, named (ray::IDLE) or still starting (python .../default_worker.py), was
        # started ahead
        others = [p for p in process_tree(os.getpid()) if p != pid and is_worker(command(p))]
        assert not others, f"idle workers started ahead, competing with the apps: {[command(p) for p in others]}"
