"""Command-line builders for MPI apps, Ray and Slurm — they run nothing.

Parsl's launcher layer in miniature: every function here returns an argument list
(``list[str]``) and has no side effect, so tests check the exact text and the
emulator hands the list to :mod:`iolab.emulator.shell`, the single place where processes
start. Arguments are validated here, on the caller's side, with errors that name
the bad value — a typo fails before anything is submitted.

* :func:`mpiexec_command` — local runs with MPICH's Hydra ``mpiexec`` (the one the
  PyPI ``mpich`` wheel puts next to the Python interpreter), the ranks' MPI
  traffic kept on the loopback interface unless the network is opened
  (:func:`network_mode`, docs/emulator.md "Network exposure").
* :func:`srun_command` — one app as one job step inside a Slurm allocation, ranks
  wired by PMI2 (``--mpi=pmi2``; see docs/slurm.md for why not pmix), with MPICH's
  libfabric device (:data:`PMI2_SRUN_ENV`: Slurm's PMI-1 server reads a request in one
  1024-byte read, and the UCX device's address lines come close enough to overflow it).
* :func:`ray_start_commands` — a Ray head on the first node of an allocation and a
  worker on each other node, each as a one-task ``srun`` step.
* :func:`scontrol_command` — suspend/resume a job (the load controller's lever).
* :func:`scancel_signal_command` — signal one job step (``scontrol suspend`` takes
  whole jobs only; a step is stopped/continued with SIGSTOP/SIGCONT).
* :func:`expand_hostlist`, :func:`partition_nodes` — turn ``SLURM_JOB_NODELIST``
  into node names, and node names into I/O partitions.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path

__all__ = [
    "MpiexecNotFound",
    "find_mpiexec",
    "mpiexec_command",
    "network_mode",
    "LOOPBACK_ENV",
    "srun_command",
    "PMI2_SRUN_ENV",
    "ray_start_commands",
    "scontrol_command",
    "scancel_signal_command",
    "scancel_step_command",
    "listpids_command",
    "expand_hostlist",
    "partition_nodes",
]

SCONTROL_ACTIONS = ("suspend", "resume")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JOB_ID = re.compile(r"[1-9][0-9]*(_[0-9]+)?\Z")
_STEP_ID = re.compile(r"[1-9][0-9]*(_[0-9]+)?\.([0-9]+|batch|extern)\Z")
_SIGNAL = re.compile(r"(SIG)?[A-Z][A-Z0-9]*\Z|[1-9][0-9]?\Z")
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


NETWORK_MODES = ("loopback", "open")
# What keeps an MPICH rank's own listening sockets on 127.0.0.1: the mpich wheel's
# ch4 device uses UCX (UCX_NET_DEVICES) or libfabric (FI_*_IFACE); both are named.
LOOPBACK_ENV = {"FI_SOCKETS_IFACE": "lo", "FI_TCP_IFACE": "lo", "UCX_NET_DEVICES": "lo"}


def network_mode() -> str:
    """``loopback`` (the default) or ``open``: the ``IOLAB_NETWORK`` environment variable,
    else ``open`` inside a Slurm allocation of several nodes (``SLURM_NNODES`` > 1: Hydra
    then spreads the ranks over them), else ``loopback``."""
    mode = os.environ.get("IOLAB_NETWORK", "").strip().lower()
    if mode:
        if mode not in NETWORK_MODES:
            raise ValueError(f"IOLAB_NETWORK must be one of {', '.join(NETWORK_MODES)}, got {mode!r}")
        return mode
    nnodes = os.environ.get("SLURM_NNODES", "1")
    return "open" if nnodes.isdigit() and int(nnodes) > 1 else "loopback"


class MpiexecNotFound(FileNotFoundError):
    """No ``mpiexec`` next to the interpreter nor on PATH."""


# ---------------------------------------------------------------- validation

def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, (str, bytes)):
        raise TypeError(f"argv must be a list of arguments, not a string: {argv!r}")
    out = [os.fspath(a) for a in argv]
    if not out:
        raise ValueError("argv is empty: nothing to launch")
    if out[0].startswith("-"):
        # The launcher would take it for one of its own options.
        raise ValueError(f"argv[0] must be a program, not an option: {out[0]!r}")
    return out


def _strings(name: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of strings, not a string: {values!r}")
    return [str(v) for v in values]


def _node_names(name: str, nodes: str | Sequence[str]) -> list[str]:
    """A hostlist string or a sequence of names -> checked list of names."""
    names = expand_hostlist(nodes) if isinstance(nodes, str) else [str(n) for n in nodes]
    for n in names:
        if not _NODE_NAME.match(n):
            raise ValueError(f"{name}: bad node name {n!r}")
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"{name}: node names repeat: {', '.join(dupes)}")
    return names


# ---------------------------------------------------------------- mpiexec

def find_mpiexec() -> str:
    """The ``mpiexec`` to use: the one next to ``sys.executable`` (the venv's, from
    the ``mpich`` wheel, matching the mpi4py build), else the first on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpiexec")
    if found:
        return found
    raise MpiexecNotFound(
        f"no mpiexec next to {sys.executable} nor on PATH; "
        "install the MPI wheel (`pip install mpich`) or pass mpiexec=..."
    )


def mpiexec_command(
    nprocs: int,
    argv: Sequence[str],
    *,
    mpiexec: str | None = None,
    env: Mapping[str, str] | None = None,
    hosts: str | Sequence[str] | None = None,
    network: str | None = None,
) -> list[str]:
    """``mpiexec [-hosts H1,H2] [-genv K V]... -n NPROCS ARGV...`` (MPICH Hydra).

    ``env`` is passed to every rank with ``-genv`` (sorted by name, for a stable
    line). ``hosts`` (names or a hostlist string) spreads the ranks round-robin over
    those hosts; without it all ranks run here. Hydra wants its global options
    (``-hosts``, ``-genv``) before the per-executable ``-n``.  ``network``:
    ``loopback`` adds :data:`LOOPBACK_ENV` (the ranks listen on 127.0.0.1 only),
    ``open`` does not; default: ``open`` with ``hosts``, else :func:`network_mode`.
    """
    n = _positive_int("nprocs", nprocs)
    args = _argv(argv)
    if network is None:
        network = "open" if hosts is not None else network_mode()
    if network not in NETWORK_MODES:
        raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}, got {network!r}")
    if network == "loopback":
        if hosts is not None:
            raise ValueError("network='loopback' keeps the ranks on this host: it cannot go with hosts")
        env = {**LOOPBACK_ENV, **(env or {})}
    cmd = [mpiexec if mpiexec is not None else find_mpiexec()]
    if hosts is not None:
        names = _node_names("hosts", hosts)
        if not names:
            raise ValueError("hosts is empty")
        cmd += ["-hosts", ",".join(names)]
    for key, value in _env_items(env):
        cmd += ["-genv", key, value]
    return cmd + ["-n", str(n)] + args


def _env_items(env: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """``env`` as sorted ``(name, value)`` strings (a stable command line); bad names refused."""
    items = sorted((str(k), str(v)) for k, v in (env or {}).items())
    for key, _ in items:
        if not _ENV_NAME.match(key):
            raise ValueError(f"env: bad variable name {key!r}")
    return items


# ---------------------------------------------------------------- srun

# Slurm's mpi/pmi2 plugin serves MPICH's PMI-1 wire protocol with a single read of at
# most 1024 bytes per request (src/plugins/mpi/pmi2/pmi1.c, "TODO: read until
# newline", Slurm 22.05 to current).  MPICH cuts PMI values to the server's
# vallen_max=1024 without counting the ``cmd=put kvsname=... key=... value=`` around
# them, and the UCX device's address exchange (9 segments of worker addresses, heap
# pointers and all) makes lines of 900-1000 bytes whose length varies with the
# addresses: one launch in many overflowed, Slurm split the line and the step hung in
# MPI_Init.  The libfabric device exchanges ~60-byte lines.  Measured by
# tests/slurm/test_local_cluster.py (longest PMI line of a real step).
PMI2_SRUN_ENV = {"MPIR_CVAR_CH4_NETMOD": "ofi"}

def srun_command(
    ntasks: int,
    argv: Sequence[str],
    *,
    nodes: int,
    nodelist: str | Sequence[str] | None = None,
    mpi: str | None = "pmi2",
    overcommit: bool = False,
    job_name: str | None = None,
    env: Mapping[str, str] | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """``srun --nodes=N --ntasks=T [--nodelist=...] [--mpi=...] [--overcommit]
    [--job-name=...] [--export=ALL,K=V,...] EXTRA... ARGV...``.

    ``nodelist`` (names or a hostlist string) must name exactly ``nodes`` nodes:
    Slurm would otherwise silently add nodes or refuse the step. ``mpi=None`` leaves
    the plugin to ``MpiDefault``. ``overcommit`` lets more tasks than CPUs share a
    node (one CPU per node is still charged); ``extra`` goes verbatim before argv.
    ``env`` is added to the tasks' environment (``--export=ALL,...``, sorted by name);
    with ``mpi='pmi2'`` it starts from :data:`PMI2_SRUN_ENV`, which ``env`` may override.
    """
    n_nodes = _positive_int("nodes", nodes)
    n_tasks = _positive_int("ntasks", ntasks)
    if n_tasks < n_nodes:
        raise ValueError(f"ntasks={n_tasks} < nodes={n_nodes}: a node would get no task")
    args = _argv(argv)
    cmd = ["srun", f"--nodes={n_nodes}", f"--ntasks={n_tasks}"]
    if nodelist is not None:
        names = _node_names("nodelist", nodelist)
        if len(names) != n_nodes:
            raise ValueError(
                f"nodelist names {len(names)} nodes ({','.join(names)}) but nodes={n_nodes}"
            )
        cmd.append(f"--nodelist={','.join(names)}")
    if mpi is not None:
        if not re.fullmatch(r"[a-z0-9_]+", mpi):
            raise ValueError(f"mpi: bad plugin name {mpi!r} (e.g. 'pmi2', 'none')")
        cmd.append(f"--mpi={mpi}")
    if overcommit:
        cmd.append("--overcommit")
    if job_name is not None:
        if not job_name or any(c.isspace() for c in job_name):
            raise ValueError(f"job_name must be non-empty without blanks, got {job_name!r}")
        cmd.append(f"--job-name={job_name}")
    exports = _env_items({**(PMI2_SRUN_ENV if mpi == "pmi2" else {}), **(env or {})})
    for key, value in exports:
        if "," in value:
            raise ValueError(f"env: {key}={value!r}: srun --export cannot carry a comma in a value")
    if exports:
        cmd.append("--export=ALL," + ",".join(f"{k}={v}" for k, v in exports))
    return cmd + _strings("extra", extra) + args


# ---------------------------------------------------------------- ray

def ray_start_commands(
    nodes: str | Sequence[str],
    *,
    head_ip: str,
    port: int = 6379,
    num_cpus: int | None = None,
    overlap: bool = True,
    ray: str = "ray",
    extra: Sequence[str] = (),
) -> list[list[str]]:
    """One ``srun`` per node starting Ray in the foreground (``--block``).

    The first node of ``nodes`` gets the head::

        srun --nodes=1 --ntasks=1 [--overlap] -w n1 ray start --head --block \\
             --node-ip-address=HEAD_IP --port=PORT [--num-cpus=C] EXTRA...

    every other node a worker joining it::

        srun --nodes=1 --ntasks=1 [--overlap] -w n2 ray start --block \\
             --address=HEAD_IP:PORT [--num-cpus=C] EXTRA...

    Run each with :func:`iolab.emulator.shell.spawn` (the head first, and wait for it to
    listen); killing the ``srun`` ends that node's Ray. ``overlap`` (default) lets
    the app steps share the CPUs these long-lived control steps would otherwise
    hold. ``head_ip`` must be the head node's address as the workers see it.
    """
    names = _node_names("nodes", nodes)
    if not names:
        raise ValueError("nodes is empty: Ray needs at least a head node")
    if not head_ip or any(c.isspace() for c in head_ip):
        raise ValueError(f"head_ip must be a host address, got {head_ip!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be an int in 1..65535, got {port!r}")
    tail = [] if num_cpus is None else [f"--num-cpus={_positive_int('num_cpus', num_cpus)}"]
    tail += _strings("extra", extra)

    def step(node: str) -> list[str]:
        return ["srun", "--nodes=1", "--ntasks=1", *(["--overlap"] if overlap else []),
                "-w", node, ray, "start"]

    head = step(names[0]) + ["--head", "--block", f"--node-ip-address={head_ip}",
                             f"--port={port}"] + tail
    workers = [step(n) + ["--block", f"--address={head_ip}:{port}"] + tail
               for n in names[1:]]
    return [head, *workers]


# ---------------------------------------------------------------- scontrol

def scontrol_command(action: str, jobid: int | str) -> list[str]:
    """``scontrol suspend|resume JOBID`` — stop or continue every process of a job
    (SIGSTOP/SIGCONT by slurmd; the job keeps its nodes while suspended)."""
    if action not in SCONTROL_ACTIONS:
        raise ValueError(f"action must be one of {', '.join(SCONTROL_ACTIONS)}, got {action!r}")
    if isinstance(jobid, bool) or not _JOB_ID.match(str(jobid)):
        raise ValueError(f"jobid must be a positive job id like 42 or '42_3', got {jobid!r}")
    return ["scontrol", action, str(jobid)]


def scancel_signal_command(signal: str, step: str) -> list[str]:
    """``scancel --signal=SIG JOBID.STEPID`` — deliver ``signal`` (``STOP``, ``CONT``,
    ``USR1``, a number...) to every task of one job step, not to the whole job.

    ``scontrol suspend 12.3`` is refused by Slurm 22.05 ("Invalid job id"): inside one
    allocation, where every app is a step, this is how a single app is paused.
    """
    if not isinstance(signal, str) or not _SIGNAL.match(signal):
        raise ValueError(f"signal must be a name like 'STOP' or 'SIGCONT' or a number, got {signal!r}")
    if not isinstance(step, str) or not _STEP_ID.match(step):
        raise ValueError(f"step must be a job step id like '42.0', got {step!r}")
    return ["scancel", f"--signal={signal}", step]


def scancel_step_command(step: str) -> list[str]:
    """``scancel JOBID.STEPID`` — end one job step: Slurm sends its tasks SIGCONT and SIGTERM,
    then SIGKILL after ``KillWait``, wherever they run (they are children of ``slurmstepd``,
    not of the ``srun`` that asked for the step)."""
    if not isinstance(step, str) or not _STEP_ID.match(step):
        raise ValueError(f"step must be a job step id like '42.0', got {step!r}")
    return ["scancel", step]


def listpids_command(step: str, node: str) -> list[str]:
    """``scontrol listpids JOBID.STEPID NODE`` — the process ids of a step's tasks on ``node``.

    It asks the slurmd of ``node`` *on this host* (the node name picks one of several slurmd of
    one host, as on the local test cluster); on a real cluster it answers only on the node itself.
    """
    if not isinstance(step, str) or not _STEP_ID.match(step):
        raise ValueError(f"step must be a job step id like '42.0', got {step!r}")
    return ["scontrol", "listpids", step, _node_names("node", [node])[0]]


# ---------------------------------------------------------------- hostlists

def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets; check bracket balance on the way."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            if depth:
                raise ValueError(f"hostlist {text!r}: nested '[' at position {i}")
            depth = 1
        elif c == "]":
            if not depth:
                raise ValueError(f"hostlist {text!r}: ']' without '[' at position {i}")
            depth = 0
        elif c == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"hostlist {text!r}: '[' is never closed")
    parts.append(text[start:])
    return parts


def _expand_range(spec: str, whole: str) -> list[str]:
    """``"1-3,05"`` -> ``["1","2","3","05"]``; width of each range from its low end."""
    out: list[str] = []
    for item in spec.split(","):
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"hostlist {whole!r}: bad range {item!r} in [{spec}]")
        if not sep:
            out.append(lo)
            continue
        if int(hi) < int(lo):
            raise ValueError(f"hostlist {whole!r}: range {item!r} runs backwards")
        width = len(lo)  # "01-10" -> 01..10 ; "8-10" -> 8,9,10 (Slurm's rule)
        out += [str(i).zfill(width) for i in range(int(lo), int(hi) + 1)]
    return out


def expand_hostlist(hostlist: str) -> list[str]:
    """Expand Slurm hostlist syntax into node names, in order.

    ``"n[1-3,5],gpu7"`` -> ``["n1", "n2", "n3", "n5", "gpu7"]``;
    ``"n[01-03]"`` keeps the zero padding; several bracket groups in one name
    multiply out (``"r[1-2]n[1-2]"`` -> r1n1, r1n2, r2n1, r2n2) like Slurm does.
    An empty string is an empty list. Malformed text raises ValueError naming it.
    """
    if not isinstance(hostlist, str):
        raise TypeError(f"hostlist must be a str, got {type(hostlist).__name__}: {hostlist!r}")
    text = hostlist.strip()
    if not text:
        return []
    names: list[str] = []
    for term in _split_top_level(text):
        term = term.strip()
        if not term:
            raise ValueError(f"hostlist {hostlist!r}: empty name between commas")
        pieces = re.split(r"(\[[^\]]*\])", term)  # literal, [range], literal, ...
        choices: list[list[str]] = []
        for piece in pieces:
            if piece.startswith("["):
                inner = piece[1:-1]
                if not inner:
                    raise ValueError(f"hostlist {hostlist!r}: empty brackets in {term!r}")
                choices.append(_expand_range(inner, hostlist))
            elif piece:
                if not re.fullmatch(r"[A-Za-z0-9._-]+", piece):
                    raise ValueError(f"hostlist {hostlist!r}: bad characters in {term!r}")
                choices.append([piece])
        names += ["".join(combo) for combo in product(*choices)]
    return names


def partition_nodes(
    nodes: str | Sequence[str], io_nodes: int, nodes_per_io_node: int
) -> list[list[str]]:
    """Map an allocation's nodes onto I/O partitions, in order.

    Partition ``k`` gets nodes ``k*P .. k*P+P-1`` (``P = nodes_per_io_node``), the
    way consecutive compute nodes share an I/O node on a real machine. ``nodes`` is
    a list of names or a hostlist string (``SLURM_JOB_NODELIST``). Nodes beyond
    ``io_nodes * P`` are left out (e.g. a node kept for the Ray head); too few nodes
    is a ValueError saying how many are needed.
    """
    k = _positive_int("io_nodes", io_nodes)
    p = _positive_int("nodes_per_io_node", nodes_per_io_node)
    names = _node_names("nodes", nodes)
    need = k * p
    if len(names) < need:
        raise ValueError(
            f"allocation of {len(names)} node(s) ({','.join(names) or 'none'}) is too small "
            f"for {k} I/O partition(s) x {p} node(s) = {need} nodes"
        )
    return [names[i * p:(i + 1) * p] for i in range(k)]
