"""The network a command that runs things here (``emulate``, ``validate``, ``sweep``, ``study``) runs in.

A local run re-executes the ``iolab`` process in a network namespace of its own, where only
loopback exists (:mod:`iolab.emulator.netns`), before Ray or MPI start; nothing it listens on is
reachable from another host.  Not for runs that span hosts: ``IOLAB_NETWORK=open``, a Slurm
allocation (``SLURM_JOB_ID``: the apps are ``srun`` steps, Ray runs on the allocation's nodes),
``--launcher srun``, or ``--address`` (a Ray that is already up, maybe elsewhere).  Where no
namespace can be made, one line on stderr says so and what stays reachable.  docs/emulator.md,
"Network exposure".
"""

from __future__ import annotations

import os
import sys

import click

from ..emulator import netns
from ..emulator.launchers import network_mode
from ..emulator.ray_session import LOOPBACK_RAY_ENV
from ..errors import IolabError

# Only the ``iolab`` program (``main``) re-executes itself: a command invoked in-process (click's
# CliRunner, a library caller) has no command line of its own to run again.
REEXEC = False

FALLBACK = ("network: this run has no network namespace of its own ({reason}): Ray and the ranks listen on "
            "127.0.0.1 only, but Hydra's control port (mpiexec, hydra_pmi_proxy, inherited by the ranks) "
            "listens on every interface while the run lasts (docs/emulator.md, \"Network exposure\")")


def own_command_line() -> list[str]:
    """This process's command line, to run again: ``python -m iolab ...`` or ``python PATH/iolab ...``."""
    first = sys.argv[0]
    if os.path.basename(first) == "__main__.py" or not os.path.isfile(first):
        return [sys.executable, "-m", "iolab", *sys.argv[1:]]
    return [sys.executable, first, *sys.argv[1:]]


def private_network(address: str | None = None, launcher: str | None = None) -> None:
    """Put this local run in a network namespace of its own: re-execute this process there (this call
    then never returns here), or, in the re-executed process, bring ``lo`` up.  Nothing for a run that
    spans hosts (module docstring), nor when called in-process (:data:`REEXEC` unset)."""
    if netns.inside():
        netns.loopback_up()
        _ray_on_loopback()
        return
    try:
        mode = network_mode()
    except ValueError as exc:
        raise IolabError(str(exc)) from None
    spans_hosts = mode == "open" or address or os.environ.get("SLURM_JOB_ID") or (launcher or "").lower() == "srun"
    if spans_hosts or not REEXEC:
        return
    reason = netns.probe()
    if reason is not None:
        click.echo(FALLBACK.format(reason=reason), err=True)
        _ray_on_loopback()
        return
    cmd = [*netns.unshare_prefix(), *own_command_line()]
    os.environ[netns.MARKER] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)


def _ray_on_loopback() -> None:
    """A local Ray of this process on 127.0.0.1 (before Ray is imported: it reads the variable then)."""
    for key, value in LOOPBACK_RAY_ENV.items():
        os.environ.setdefault(key, value)
