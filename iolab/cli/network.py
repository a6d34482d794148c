"""The network a command that runs things here (``emulate``, ``validate``, ``sweep``, ``study``, ``batsim --real``)
runs in.

A local run re-executes the ``iolab`` process in a network namespace of its own, where only
loopback exists (:mod:`iolab.emulator.netns`), before Ray or MPI start; nothing it listens on is
reachable from another host.  Not for runs that span hosts: ``IOLAB_NETWORK=open``, a Slurm
allocation (``SLURM_JOB_ID``: the apps are ``srun`` steps, Ray runs on the allocation's nodes),
``--launcher srun``, or ``--address`` (a Ray that is already up, maybe elsewhere).  Where no
namespace can be made, one line on stderr says so and what stays reachable.  docs/emulator.md,
"Network exposure".

:func:`private_network` runs in ``main``, on the raw arguments, before the command's module (and
numpy, h5py...) is imported: the re-executed process imports them once, not twice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

NETNS_MARKER = "IOLAB_NETNS"  # iolab.emulator.netns.MARKER, read here without importing it (tests/cli/test_startup.py)

LOCAL_RUNS = frozenset({"emulate", "validate", "sweep", "study"})  # the commands that start Ray or MPI here

FALLBACK = ("network: this run has no network namespace of its own ({reason}): Ray and the ranks listen on "
            "127.0.0.1 only, but Hydra's control port (mpiexec, hydra_pmi_proxy, inherited by the ranks) "
            "listens on every interface while the run lasts (docs/emulator.md, \"Network exposure\")")


def option(args: Sequence[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in ``args`` ("" if it ends them), else None."""
    for i, a in enumerate(args):
        if a == name:
            return args[i + 1] if i + 1 < len(args) else ""
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def spans_hosts(args: Sequence[str]) -> bool:
    """Whether the command in ``args`` (``iolab``'s arguments) runs beyond this host, or runs nothing
    here: not a local-run command, help, ``IOLAB_NETWORK=open`` (or a Slurm allocation of several
    nodes), inside a Slurm allocation, ``--launcher srun``, ``--address``.  Raises ValueError for a
    bad ``IOLAB_NETWORK``."""
    if not runs_here(args):
        return True
    from iolab.emulator.launchers import network_mode  # lazy: the launchers, for a command that runs things here

    if network_mode() == "open" or os.environ.get("SLURM_JOB_ID"):
        return True
    return option(args, "--address") is not None or (option(args, "--launcher") or "").lower() == "srun"


def runs_here(args: Sequence[str]) -> bool:
    """Whether ``iolab ARGS`` is a command that runs things on this host (:data:`LOCAL_RUNS`, not its help)."""
    words = [a for a in args if not a.startswith("-")]
    local = bool(words) and (words[0] in LOCAL_RUNS or (words[0] == "batsim" and "--real" in args))
    return local and "-h" not in args and "--help" not in args


def own_command_line() -> list[str]:
    """This process's command line, to run again: ``python -m iolab ...`` or ``python PATH/iolab ...``."""
    first = sys.argv[0]
    if os.path.basename(first) == "__main__.py" or not os.path.isfile(first):
        return [sys.executable, "-m", "iolab", *sys.argv[1:]]
    return [sys.executable, first, *sys.argv[1:]]


def private_network(args: Sequence[str]) -> None:
    """Put the local run ``iolab ARGS`` in a network namespace of its own: re-execute this process
    there (this call then never returns), or, in the re-executed process, bring ``lo`` up.  Nothing
    for a command that spans hosts or runs nothing here (:func:`spans_hosts`).  Exits 2 on a bad
    ``IOLAB_NETWORK``.  A command that runs nothing here, outside a namespace of its own (``iolab simulate``),
    returns at once, without importing the emulator's modules (socket, subprocess: a few ms of its start)."""
    if os.environ.get(NETNS_MARKER) != "1" and not runs_here(args):
        return
    from iolab.emulator import netns  # lazy: socket, subprocess, for a command that runs things here

    if netns.inside():
        netns.loopback_up()
        _ray_on_loopback()
        return
    try:
        if spans_hosts(args):
            return
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(2)
    reason = netns.probe()
    if reason is not None:
        print(FALLBACK.format(reason=reason), file=sys.stderr, flush=True)
        _ray_on_loopback()
        return
    cmd = [*netns.unshare_prefix(), *own_command_line()]
    os.environ[netns.MARKER] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)


def _ray_on_loopback() -> None:
    """A local Ray of this process on 127.0.0.1 (before Ray is imported: it reads the variable then)."""
    from iolab.emulator.ray_session import LOOPBACK_RAY_ENV  # lazy: as netns, for a command that runs things here

    for key, value in LOOPBACK_RAY_ENV.items():
        os.environ.setdefault(key, value)
