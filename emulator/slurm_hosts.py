"""Where each rank of an app really ran: a coordinator wrapper that notes the host.

The emulator launches every app with ``--coordinator iolab.emulator.slurm_hosts:coordinator``
and a config that holds the real coordinator (``inner``, e.g.
``iolab.middleware.client:coordinator``) and ``hosts_dir``. Each rank, as it builds its
coordinator (before the start gate), writes one file ``HOSTS_DIR/APP.RANK`` (a batch job:
``HOSTS_DIR/JOB.RANK``, from the config's ``job``) with the
name of the node it sees: ``SLURMD_NODENAME`` under ``srun`` (on the local cluster every
virtual node has the same ``hostname``; slurmd tells them apart), the host name
otherwise. Then it hands over to the inner coordinator; nothing else changes.

:func:`read_hosts` turns those files into the trace's ``hosts`` column
(``"n1,n2"``: distinct names in rank order). It is what the ranks saw, not what the
launcher asked for, so a test can check that Slurm placed each app where it was told.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from iolab.apps.coordination import load_coordinator

__all__ = ["coordinator", "wrap_config", "node_name", "read_hosts", "launch_seconds"]

TARGET = "iolab.emulator.slurm_hosts:coordinator"


def node_name() -> str:
    """The node this process runs on: Slurm's node name if under slurmd, else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def wrap_config(inner: str, config: dict[str, Any], hosts_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The config for :func:`coordinator` around the coordinator ``inner`` (``MODULE:FACTORY``)."""
    return {**config, "inner": inner, "hosts_dir": str(hosts_dir)}


def coordinator(config: dict[str, Any], rank: int, size: int):
    """Factory for ``--coordinator``: note this rank's node, then build the inner coordinator."""
    cfg = dict(config)
    inner = cfg.pop("inner", None)
    hosts_dir = cfg.pop("hosts_dir", None)
    if not inner or not hosts_dir:
        raise RuntimeError("iolab.emulator.slurm_hosts: coordinator config needs 'inner' and 'hosts_dir'")
    app = str(cfg.get("app") or cfg.get("job") or "app")  # an I/O app, or a batch job
    path = Path(hosts_dir) / f"{app}.{int(rank)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(node_name() + "\n")
    tmp.replace(path)
    return load_coordinator(inner, cfg, rank, size)


def read_hosts(hosts_dir: str | os.PathLike[str], app: str) -> str:
    """``"n1,n2"``: the distinct nodes the ranks of ``app`` reported, in rank order ("" if none)."""
    d = Path(hosts_dir)
    if not d.is_dir():
        return ""
    ranks = []
    for p in d.glob(f"{app}.*"):
        tail = p.name[len(app) + 1:]
        if tail.isdigit():
            ranks.append((int(tail), p.read_text().strip()))
    seen: list[str] = []
    for _, name in sorted(ranks):
        if name and name not in seen:
            seen.append(name)
    return ",".join(seen)


def launch_seconds(hosts_dir: str | os.PathLike[str], launched: dict[str, float]) -> dict[str, float]:
    """Per app: wall seconds from spawning its launcher (``launched[app]``, ``time.time()``)
    to the moment its last rank noted its host (launcher + Python + MPI start-up; the
    Ray join and the start gate come after). Apps without a note are left out."""
    out: dict[str, float] = {}
    d = Path(hosts_dir)
    for app, t in launched.items():
        stamps = [p.stat().st_mtime for p in d.glob(f"{app}.*") if p.name[len(app) + 1:].isdigit()]
        if stamps:
            out[app] = round(max(stamps) - t, 3)
    return out
