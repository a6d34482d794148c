"""The control plane's priority, on /proc: the actors of a local Ray run at the driver's niceness (0), above the
apps (nice 10).

Ray starts its workers at nice 15 by default; under the apps' load an actor then got a few per cent of a core
(a load controller's cycle timed out after 30 s; importing scikit-learn in an actor took 77 s instead of 2)."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.ray


def nice_of(pid: int) -> int:
    """Field 19 of /proc/PID/stat (after the command's closing parenthesis: field 3 is the 1st)."""
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[16])


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

        pid = ray.get(Probe.remote().pid.remote())
        assert pid != os.getpid()
        assert nice_of(pid) == nice_of(os.getpid())  # not Ray's default 15 more than its parent
