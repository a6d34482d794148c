"""A Ray cluster inside a Slurm allocation: head on the first node, a worker on each other.

    with SlurmRay.start(["n1", "n2", "n3"], log_dir=work / "logs") as ray_cluster:
        session = ray_cluster.session          # joined: gcs_address, namespace, close()

Each Ray node is one long-lived ``srun --nodes=1 --ntasks=1 --overlap -w NODE ray start
--block ...`` step (command lines from :func:`iolab.emulator.launchers.ray_start_commands`,
started by :func:`iolab.emulator.shell.spawn`); ``--overlap`` keeps these control steps from
holding CPUs the apps' steps need. Killing a step's ``srun`` ends that node's Ray (Slurm
kills the step's whole process tree; measured: nothing is left behind).

What this machine taught (docs/cluster.md, "Running on a Slurm cluster"):

- The head must be told, and everyone must use, the address Ray really binds to. A head
  given ``--node-ip-address=127.0.0.1`` under srun still announced the machine's routable
  address. :func:`head_address` takes the head node's ``NodeAddr`` from ``scontrol show
  node``, and, when that is a loopback address (all virtual nodes are this host), the
  address Ray itself picks for this host.
- The head port must lie outside Ray's worker port range (10002-19999): 6390 by default,
  the next free one if taken.
- ``ray start`` of a *worker* does not turn token authentication on by itself when a
  token exists (``ray start --head`` and ``ray.init`` do), so a worker would be refused
  with ``InvalidAuthToken``: worker steps get ``RAY_AUTH_MODE=token`` (or the caller's
  ``RAY_AUTH_MODE``). ``ray.init(address=...)`` with an explicit address does not turn
  it on either (only a local or ``"auto"`` cluster does), and setting the variable in a
  process that has already imported ``ray`` is not enough (Ray caches its config):
  :func:`enable_driver_auth` uses Ray's own switch, which also sets the variable for the
  apps the driver spawns. On a real cluster the token (``~/.ray/auth_token``) must be on
  every node: a shared home does it.
- Ray listens on all interfaces whatever address it is given: private networks only.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from iolab.errors import RunError

from iolab.emulator.launchers import ray_start_commands
from iolab.emulator.ray_session import PRIORITY_ENV, RaySession
from iolab.emulator.shell import execute_wait, kill_tree, spawn

__all__ = ["SlurmRay", "head_address", "free_port", "auth_env", "node_env", "priority_env", "enable_driver_auth"]

DEFAULT_PORT = 6390  # outside Ray's worker port range 10002-19999


def auth_env() -> dict[str, str]:
    """The Ray auth setting every process of the run must share (see the module doc)."""
    return {"RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "token")}


def priority_env() -> dict[str, str]:
    """The actors above the apps (Ray starts its workers at nice 15 by default; the apps run at nice 10),
    and no idle workers started ahead to compete with the apps at that priority (the local Ray's too:
    :class:`~iolab.emulator.ray_session.RaySession`; docs/emulator.md)."""
    return {k: os.environ.get(k, v) for k, v in PRIORITY_ENV.items()}


def node_env() -> dict[str, str]:
    """The environment of every ``ray start``: the auth setting and :func:`priority_env`."""
    return {**auth_env(), **priority_env()}


def enable_driver_auth() -> None:
    """Turn Ray token auth on in this process (and its children) when a token exists and
    ``RAY_AUTH_MODE`` is unset, as ``ray.init()`` does for a local cluster."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    # Ray has no public call for this (``ray.init`` and ``ray start`` call the private one below
    # themselves, for a cluster they start); with ray_session.without_dashboard, one of the two places
    # iolab reaches into ``ray._private``, and a Ray that moves it leaves token auth to RAY_AUTH_MODE.
    try:
        from ray._private.authentication.authentication_token_setup import (  # lazy: Ray only when a run joins
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token auth
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return addr == "localhost"


def head_address(node: str, node_addr: str | None = None) -> str:
    """The address workers, driver and apps use for the head running on ``node``.

    ``node_addr`` is Slurm's ``NodeAddr`` of that node (looked up with ``scontrol show
    node`` if None). A loopback or missing address means the node is this host as seen
    by Slurm, so the answer is the address Ray would bind on this host.
    """
    if node_addr is None:
        node_addr = _node_addr(node)
    if node_addr and not _is_loopback(node_addr):
        return node_addr
    from ray.util import get_node_ip_address  # lazy: Ray only when a cluster starts

    return get_node_ip_address()


def _node_addr(node: str) -> str | None:
    try:
        rc, out, _ = execute_wait(["scontrol", "show", "node", "-o", node], timeout=30)
    except (FileNotFoundError, RuntimeError):
        return None
    if rc != 0:
        return None
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    return fields.get("NodeAddr")


def free_port(host: str, start: int = DEFAULT_PORT, tries: int = 10) -> int:
    """The first port from ``start`` on which nothing answers at ``host``."""
    for port in range(start, start + tries):
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((host, port)) != 0:
                return port
    raise RunError(f"no free port for the Ray head in {start}..{start + tries - 1} on {host}")


@dataclass
class SlurmRay:
    """A running Ray cluster made of srun steps, and the driver's session joined to it."""

    nodes: list[str]
    address: str                      # head_ip:port, as given to workers
    session: RaySession
    steps: list = field(default_factory=list)  # Popen of each srun, head first
    seconds: float = 0.0              # bring-up time (head + every worker joined)

    @classmethod
    def start(cls, nodes: Sequence[str], *, log_dir: str | os.PathLike[str], head_ip: str | None = None,
              port: int | None = None, num_cpus: int = 1, timeout: float = 120.0,
              namespace: str | None = None, concurrent: bool = False) -> "SlurmRay":
        """Start the head on ``nodes[0]``, a worker on each other node, join as driver.

        Workers start one after the other unless ``concurrent``: raylets of one *host*
        started at once race for the same socket names in the shared session directory
        (measured here: two of three died with ``bind: Address already in use``); on a
        real cluster each node has its own ``/tmp`` and ``concurrent=True`` is safe.

        Raises RunError (after stopping whatever started) if the head does not listen or
        the workers have not all joined within ``timeout`` seconds; the step logs are in
        ``log_dir/ray-NODE.log``.
        """
        nodes = list(nodes)
        if not nodes:
            raise RunError("a Ray cluster needs at least one node")
        t0 = time.monotonic()
        ip = head_ip or head_address(nodes[0])
        port = port or free_port(ip)
        env = node_env()
        head_cmd = ray_start_commands(nodes[:1], head_ip=ip, port=port, num_cpus=num_cpus,
                                      extra=["--include-dashboard=false", "--disable-usage-stats"])[0]
        worker_cmds = ray_start_commands(nodes, head_ip=ip, port=port, num_cpus=num_cpus,
                                         extra=["--disable-usage-stats"])[1:]
        logs = Path(log_dir)
        steps = [spawn(head_cmd, env=priority_env(),
                       log_path=logs / f"ray-{nodes[0]}.log")]
        try:
            deadline = t0 + timeout
            _wait_listening(ip, port, steps[0], deadline, logs / f"ray-{nodes[0]}.log")
            enable_driver_auth()
            session = RaySession.open(f"{ip}:{port}", namespace=namespace)
            try:
                if concurrent:
                    steps += [spawn(cmd, env=env, log_path=logs / f"ray-{n}.log")
                              for cmd, n in zip(worker_cmds, nodes[1:])]
                    _wait_nodes(len(nodes), steps, deadline, logs)
                else:  # one after the other: raylets sharing a host race for socket names
                    for i, (cmd, n) in enumerate(zip(worker_cmds, nodes[1:])):
                        steps.append(spawn(cmd, env=env, log_path=logs / f"ray-{n}.log"))
                        _wait_nodes(i + 2, steps, deadline, logs)
            except BaseException:
                session.close()
                raise
        except BaseException:
            for p in reversed(steps):
                kill_tree(p, grace=5.0)
            raise
        return cls(nodes, f"{ip}:{port}", session, steps, time.monotonic() - t0)

    def close(self) -> None:
        """Leave Ray (driver), then end the worker steps and the head step."""
        self.session.close()
        for p in reversed(self.steps):
            kill_tree(p, grace=10.0)
        self.steps = []

    def __enter__(self) -> "SlurmRay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "<no log>"


def _wait_listening(ip: str, port: int, step, deadline: float, log: Path) -> None:
    while True:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((ip, port)) == 0:
                return
        if step.poll() is not None:
            raise RunError(f"the Ray head step exited with code {step.returncode} before listening on "
                           f"{ip}:{port}; last lines of {log}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RunError(f"the Ray head did not listen on {ip}:{port} in time; last lines of {log}:\n{_tail(log)}")
        time.sleep(0.2)


def _wait_nodes(want: int, steps, deadline: float, logs: Path) -> None:
    import ray  # lazy: Ray only when a cluster starts

    while True:
        alive = sum(1 for n in ray.nodes() if n.get("Alive"))
        if alive >= want:
            return
        dead = [p for p in steps if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = "a Ray step exited" if dead else "timed out"
            tails = "\n".join(f"--- {p.name}:\n{_tail(p)}" for p in sorted(logs.glob("ray-*.log")))
            raise RunError(f"Ray cluster under srun: {alive} of {want} nodes joined ({why}).\n{tails}")
        time.sleep(0.5)
