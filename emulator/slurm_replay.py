"""A workload submitted to a real Slurm as sleep jobs, and Slurm's own record of when each ran.

    cfg = cluster_config()                      # scontrol show config, as a mapping
    ids = submit_replay(jobs, time_scale=1.0)   # one sbatch per job at its submit offset
    wait_done(ids)                              # until squeue lists none of them
    acc = recorded(cfg, ids)                    # the job completion log (or sacct) of those jobs

Each job is ``sbatch --exclusive -N NODES -t MINUTES --wrap "sleep RUNTIME"``: whole nodes, the spec's
limit as Slurm rounds it (whole minutes, up) and its run time, both divided by ``time_scale``.  The
record comes from Slurm, not from this process's clock: the job completion log
(``JobCompType=jobcomp/filetxt``, readable here) or, with accounting, ``sacct``.  Every command goes
through :mod:`iolab.emulator.shell`.
"""

from __future__ import annotations

import calendar
import datetime as dt
import tempfile
import math
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from iolab.emulator.shell import execute_wait
from iolab.errors import RunError
from iolab.workloads.slurm_accounting import Accounting, read_jobcomp, read_sacct

__all__ = ["ReplayError", "backfill_cycle_at", "cluster_config", "cycle_phase", "probe_cycle", "records_clock", "partition_nodes", "queued_in", "recorded", "sbatch_sleep_command",
           "submit_replay", "wait_done"]

NAME_PREFIX = "iolab-replay-"
SACCT_FIELDS = "JobID,JobName,User,Partition,Submit,Start,End,NNodes,Timelimit,State,NodeList"


class ReplayError(RunError):
    """Slurm refused a replay's command, or its record of the jobs cannot be had."""


def _run(cmd: list[str], env: Mapping[str, str] | None = None, timeout: float = 60.0) -> str:
    try:
        rc, out, err = execute_wait(cmd, timeout=timeout, env=env)
    except FileNotFoundError:
        raise ReplayError(f"{cmd[0]} is not installed here: a replay needs a Slurm cluster's client commands "
                          f"(docs/slurm.md)") from None
    if rc != 0:
        raise ReplayError(f"{' '.join(cmd)} failed (exit {rc}): {(err or out).strip()}")
    return out


def cluster_config(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``scontrol show config`` as ``{key: value}``."""
    out = _run(["scontrol", "show", "config"], env)
    cfg = {}
    for line in out.splitlines():
        key, sep, val = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            cfg[key.strip()] = val.strip()
    return cfg


def partition_nodes(partition: str | None, env: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """The partition's name (the default one for None) and its nodes in Slurm's order."""
    out = _run(["sinfo", "-h", "-N", "-o", "%P %N"] + (["-p", partition] if partition else []), env)
    name, nodes = partition, []
    for line in out.splitlines():
        p, _, n = line.strip().partition(" ")
        if partition is None and not p.endswith("*"):
            continue
        name = p.rstrip("*")
        if n not in nodes:
            nodes.append(n)
    if not nodes:
        raise ReplayError(f"no nodes in partition {partition or '(default)'} (sinfo)")
    return name, sorted(nodes, key=lambda s: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", s)])


def backfill_cycle_at(env: Mapping[str, str] | None = None) -> float | None:
    """The time of the backfill thread's last cycle that tested jobs (``sdiag``: "Last cycle when"), in
    the seconds of :func:`~iolab.workloads.slurm_accounting.wall_seconds` (the controller's local clock
    read as UTC, as the job records are); None if it has had none."""
    out = _run(["sdiag"], env)
    block = out.split("Backfilling stats", 1)[-1]
    m = re.search(r"Last cycle when:\s*(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})", block)
    if not m:
        return None
    d = dt.datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
    return float(calendar.timegm(d.timetuple()))


def cycle_phase(samples: list[float], interval: float) -> float | None:
    """One backfill cycle's time whose phase (its time modulo ``interval``, whole seconds) is the one most
    of ``samples`` (cycle times seen during a run) have: the thread keeps its phase while jobs wait, and a
    quiet spell or a slow cycle can shift it for a while."""
    if not samples:
        return None
    counts: dict[float, int] = {}
    for t in samples:
        counts[t % interval] = counts.get(t % interval, 0) + 1
    best = max(counts, key=lambda r: (counts[r], -r))
    return max(t for t in samples if t % interval == best)


def queued_in(partition: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The ids of the jobs pending or running in ``partition``."""
    return _run(["squeue", "-h", "-p", partition, "-o", "%i"], env).split()


def sbatch_sleep_command(job_id: str, nodes: int, limit_minutes: int, sleep: float, partition: str) -> list[str]:
    """The sbatch line of one replayed job (a whole-node sleep job)."""
    return ["sbatch", "--parsable", "--exclusive", "-p", partition, "-N", str(nodes), "-t", str(limit_minutes),
            "-J", f"{NAME_PREFIX}{job_id}", "-o", "/dev/null", "--wrap", f"sleep {sleep:.3f}"]


def submit_replay(jobs, *, time_scale: float, partition: str, env: Mapping[str, str] | None = None,
                  clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                  on_submit: Callable[[str, str], None] | None = None,
                  submitted: dict[str, float] | None = None) -> dict[str, str]:
    """Submit ``jobs`` (spec jobs, any order) at their submit offsets divided by ``time_scale``; returns
    ``{spec job id: Slurm job id}``; ``submitted`` gets each Slurm job's submission time on the records'
    clock (:func:`records_clock`), to the fraction of a second."""
    order = sorted(jobs, key=lambda j: j.submit)
    t0 = clock()
    first = order[0].submit if order else 0.0
    ids = {}
    for j in order:
        due = t0 + (j.submit - first) / time_scale
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        minutes = max(math.ceil(j.walltime / time_scale / 60.0 - 1e-9), 1)
        sent = time.time()
        out = _run(sbatch_sleep_command(j.id, j.nodes, minutes, j.runtime / time_scale, partition), env)
        ids[j.id] = out.strip().split(";")[0]
        if submitted is not None:  # the RPC's moment: between the call and its answer
            submitted[ids[j.id]] = records_clock((sent + time.time()) / 2)
        if on_submit is not None:
            on_submit(j.id, ids[j.id])
    return ids


def records_clock(t: float) -> float:
    """A time.time() value on the clock of Slurm's records (the controller's local time read as UTC,
    :func:`~iolab.workloads.slurm_accounting.wall_seconds`), with its fraction of a second."""
    return float(calendar.timegm(time.localtime(t))) + t % 1.0


def probe_cycle(interval: float, env: Mapping[str, str] | None = None, step: float = 0.1,
                sleep: Callable[[float], None] = time.sleep) -> float | None:
    """The exact time of a backfill cycle (on the records' clock), found by reading sdiag every ``step``
    seconds until its last cycle changes, for at most ``interval`` + 2 s; None if none ran (a cycle
    counts only if it tested jobs: call it while jobs wait)."""
    first = backfill_cycle_at(env)
    t_end = time.monotonic() + interval + 2.0
    before = time.time()
    while time.monotonic() < t_end:
        sleep(step)
        now = time.time()
        got = backfill_cycle_at(env)
        if got is not None and got != first:
            at = records_clock((before + now) / 2)
            return at if math.floor(at) == got else got + 0.5
        before = now
    return None


def wait_done(slurm_ids, env: Mapping[str, str] | None = None, poll: float = 2.0, timeout: float = 86400.0,
              sleep: Callable[[float], None] = time.sleep, on_poll: Callable[[], None] | None = None) -> None:
    """Until Slurm lists none of ``slurm_ids`` as pending or running (or ``timeout`` seconds); ``on_poll``
    is called at every poll."""
    want = set(slurm_ids)
    t_end = time.monotonic() + timeout
    while True:
        if on_poll is not None:
            on_poll()
        out = _run(["squeue", "-h", "-t", "PD,R,CG,CF,S", "-o", "%i"], env)
        if not want & set(out.split()):
            return
        if time.monotonic() > t_end:
            raise ReplayError(f"jobs still queued or running after {timeout:g} s: {sorted(want & set(out.split()))}")
        sleep(poll)


def recorded(cfg: Mapping[str, str], slurm_ids, env: Mapping[str, str] | None = None,
             settle: float = 10.0) -> Accounting:
    """Slurm's record of ``slurm_ids``: the job completion log if it is a readable file here, else sacct
    (accounting); a job's line may follow its end by a moment, so this waits up to ``settle`` s for all."""
    want = {str(i) for i in slurm_ids}
    comp, loc = cfg.get("JobCompType", ""), cfg.get("JobCompLoc", "")
    deadline = time.monotonic() + settle
    while True:
        if comp == "jobcomp/filetxt" and Path(loc).is_file():
            acc = read_jobcomp(loc)
        elif cfg.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none":
            path = Path(_sacct_to_file(want, env))
            acc = read_sacct(path)
            path.unlink()
        else:
            raise ReplayError("Slurm keeps no record to read the replay from: set JobCompType=jobcomp/filetxt "
                              "(with a JobCompLoc this host can read) or accounting (sacct)")
        jobs = [j for j in acc.jobs if j.id in want]
        if len(jobs) == len(want) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    found = {j.id for j in jobs}
    if found != want:
        raise ReplayError(f"Slurm's record lacks job(s) {sorted(want - found)} ({comp or 'sacct'})")
    kept = [j for j in acc.kept if j.id in want]
    dropped = {}
    for j in jobs:
        if j not in kept:
            dropped["never started"] = dropped.get("never started", 0) + 1
    return Accounting(acc.source, jobs, kept, dropped, acc.notes)


def _sacct_to_file(ids, env) -> str:
    out = _run(["sacct", "--parsable2", "-j", ",".join(sorted(ids)), "-o", SACCT_FIELDS], env)
    fd, path = tempfile.mkstemp(prefix="iolab-sacct-", suffix=".txt")
    with open(fd, "w") as f:
        f.write(out)
    return path
