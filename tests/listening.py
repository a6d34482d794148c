"""The TCP sockets a process tree listens on (from /proc: /proc/PID/net/tcp{,6} inodes, read in
each process's own network namespace, matched with /proc/PID/fd), for the network-exposure tests
(docs/emulator.md)."""

from __future__ import annotations

import ipaddress
import os
import time
import socket

WILDCARDS = ("0.0.0.0", "::")


def _address(hexaddr: str, v6: bool) -> tuple[str, int]:
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if v6:
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
        return socket.inet_ntop(socket.AF_INET6, raw), int(port, 16)
    return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)


def listening_inodes(pid: int | str = "self") -> dict[int, tuple[str, int]]:
    """inode -> (address, port) of every TCP socket in state LISTEN in ``pid``'s network namespace
    (default: this process's)."""
    out = {}
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == "0A":  # TCP_LISTEN
                        out[int(p[9])] = _address(p[1], v6)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return out


def network_namespace(pid: int | str = "self") -> str:
    """``net:[INODE]``: which network namespace ``pid`` is in ("" if it is gone)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def interfaces(pid: int | str = "self") -> list[str]:
    """The network interfaces ``pid``'s namespace has (``/proc/PID/net/dev``)."""
    with open(f"/proc/{pid}/net/dev") as f:
        return [line.split(":", 1)[0].strip() for line in f if ":" in line]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            ppid = _parent(int(d))
            if ppid is not None:
                children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def state(pid: int) -> str:
    """The process's state letter (``R``, ``S``, ``T`` stopped, ``Z``...), or "" if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def processes(match) -> dict[int, str]:
    """Live processes whose command line ``match(cmd)`` accepts: pid -> state letter."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            cmd = command(int(d))
            if cmd and match(cmd):
                st = state(int(d))
                if st and st != "Z":
                    out[int(d)] = st
    return out


def wait_until_stopped(match, timeout: float = 30.0, poll: float = 0.05) -> dict[int, str]:
    """Wait (polling, up to ``timeout``) until there are processes ``match`` accepts and every one
    is stopped (state ``T``: SIGSTOP, a Slurm suspend); returns them.  Fails the test with their
    states if that does not happen in time."""
    import pytest

    deadline = time.monotonic() + timeout
    while True:
        procs = processes(match)
        if procs and all(st in ("T", "t") for st in procs.values()):
            return procs
        if time.monotonic() > deadline:
            pytest.fail(f"not stopped after {timeout:g} s: {procs or 'no such process'}")
        time.sleep(poll)


def socket_inodes(pid: int) -> set[int]:
    out = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out


def _exiting(pid: int) -> str:
    """The command of a process whose command line is gone (an exiting process reads as empty: seen once in
    CI, a Ray worker on the host's address): its parent's, so marked, or ``?`` if that is gone too."""
    ppid = _parent(pid)
    parent = command(ppid) if ppid else ""
    return f"(exiting, child of) {parent}" if parent else "?"


def listening(root: int) -> list[tuple[int, str, str, int]]:
    """``(pid, command, address, port)`` of every listening socket held by ``root``'s tree, each read
    in the network namespace of the process that holds it."""
    tables: dict[str, dict[int, tuple[str, int]]] = {}
    rows = []
    for pid in process_tree(root):
        ns = network_namespace(pid)
        if ns not in tables:
            tables[ns] = listening_inodes(pid)
        table = tables[ns]
        for inode in socket_inodes(pid):
            if inode in table:
                cmd = command(pid) or _exiting(pid)
                ppid = _parent(pid)
                if ppid and cmd == command(ppid):  # forked, not yet exec'd (Popen): its sockets are its parent's
                    pid = ppid
                rows.append((pid, cmd, *table[inode]))
    return rows


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ``::1``, or 127.x written as an IPv4-mapped IPv6 address (``::ffff:127.0.0.1``:
    how /proc/net/tcp6 shows a dual-stack socket bound to 127.0.0.1, as Ray's servers on loopback)."""
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback
