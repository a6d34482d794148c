"""A network namespace of its own for a local run: only loopback exists in it, so nothing the run
listens on (Ray's servers, Hydra's control port, the ranks) is reachable from another host.

The command line re-executes itself under ``unshare`` before Ray or MPI start
(:func:`unshare_prefix`: ``unshare --net`` as root, ``unshare --user --map-root-user --net``
otherwise), with :data:`MARKER` set so that the new process does not do it again; the new process
brings ``lo`` up (:func:`loopback_up`, an ioctl: no ``ip`` needed) and runs the command.  ``exec``
keeps the PID, the process group, the terminal and stdin, so signals, ``--live`` and the exit code
are those of the run itself.  :func:`probe` tries the whole thing on a child first (``unshare`` of
this module, which brings ``lo`` up and checks it is alone), so a refusal (no ``unshare``, user
namespaces off, a seccomp filter) is known before anything is replaced.

Run as ``python -m iolab.emulator.netns``: bring ``lo`` up and exit 0 (what :func:`probe` runs
inside a fresh namespace).  Docs: docs/emulator.md, "Network exposure".
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys

__all__ = ["MARKER", "inside", "unshare_prefix", "probe", "loopback_up", "loopback_only"]

MARKER = "IOLAB_NETNS"  # set (to "1") in the environment of a process re-executed in its own namespace

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sh22x"  # struct ifreq: the name, then ifr_flags in the union (40 bytes in all)


def inside() -> bool:
    """Whether this process was re-executed in a namespace of its own (:data:`MARKER` set)."""
    return os.environ.get(MARKER) == "1"


def unshare_prefix() -> list[str] | None:
    """The ``unshare`` words that put a command in a new network namespace, or None when there is
    no ``unshare`` command.  A non-root user needs a user namespace too, mapped to root inside it:
    only a process with ``CAP_NET_ADMIN`` there can bring ``lo`` up (files it creates still belong
    to the user outside)."""
    path = shutil.which("unshare")
    if path is None:
        return None
    if os.geteuid() == 0:
        return [path, "--net", "--"]
    return [path, "--user", "--map-root-user", "--net", "--"]


def probe(timeout: float = 30.0) -> str | None:
    """None if a network namespace with ``lo`` up can be made here (tried on a child), else why not."""
    prefix = unshare_prefix()
    if prefix is None:
        return "no unshare command (util-linux) on PATH"
    try:
        r = subprocess.run([*prefix, sys.executable, "-m", __name__], capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{prefix[0]}: {exc}"
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        return lines[-1][:200] if lines else f"unshare exited {r.returncode}"
    return None


def loopback_up() -> None:
    """Bring the ``lo`` interface of this network namespace up (a new namespace has it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
        flags = struct.unpack(_IFREQ, got)[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def loopback_only() -> bool:
    """Whether this network namespace has no interface but ``lo`` (``/proc/net/dev``)."""
    with open("/proc/net/dev") as f:
        names = [line.split(":", 1)[0].strip() for line in f if ":" in line]
    return names == ["lo"]


if __name__ == "__main__":  # the probe, inside a new namespace
    loopback_up()
    sys.exit(0 if loopback_only() else 3)
