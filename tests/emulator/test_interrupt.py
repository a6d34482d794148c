"""Ctrl-C (or SIGTERM: kill, scancel) of a real run: every child process stops and a
readable partial trace is left, and no MPICH segment or hydra file of the run (the run's /dev/shm and
/tmp are the test's own folders: :mod:`private_tmp`).

``iolab emulate`` runs in its own process (its own local Ray), as a user runs it;
the signal is sent once the clock has started (progress line on stderr), for an I/O
experiment and for a batch experiment.  The child gets SIGINT's default action, as a
terminal's foreground job has: CI may run the suite from a background shell job, whose
children inherit an *ignored* SIGINT (that is how the first version of this test
failed in a CI-like run: the runs finished as if nothing had been sent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import yaml

from iolab.trace import read_trace
from polling import wait_until
from private_tmp import PrivateTmp, Watch
from small_runs import small_batch, small_io

pytestmark = [pytest.mark.mpi, pytest.mark.ray]

REPO = Path(__file__).resolve().parents[2]

IO_SPEC = small_io("interrupted")
BATCH_SPEC = small_batch("interrupted-batch")


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((ln for ln in (d / "status").read_text().splitlines() if ln.startswith("State:")), "")
        except OSError:
            continue
        if text in cmd and "Z" not in state.split()[1:2]:
            out.append(cmd)
    return out


def start(cmd: list[str], **kw) -> subprocess.Popen:
    """Popen with SIGINT at its default action in the child (a handler is reset on exec; an
    ignored SIGINT would be inherited)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(cmd, **kw)
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.long
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
@pytest.mark.parametrize("spec", [IO_SPEC, BATCH_SPEC], ids=["io", "batch"])
def test_ctrl_c_stops_every_process_and_leaves_a_partial_trace(tmp_path, spec, sig):
    path, out, work = tmp_path / "spec.yaml", tmp_path / "run.h5", tmp_path / "run.work"
    path.write_text(yaml.safe_dump(spec))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    private = PrivateTmp(tmp_path)
    watch = Watch(private)
    proc = start(private.wrap([sys.executable, "-m", "iolab", "emulate", str(path), "--out", str(out),
                               "--work-dir", str(work)]), cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)
    err = []
    try:
        deadline = time.monotonic() + 120
        for line in proc.stderr:  # wait for the clock, then let it run a little
            err.append(line)
            if "clock started" in line or time.monotonic() > deadline:
                break
        assert any("clock started" in ln for ln in err), "".join(err)

        def apps_running() -> bool:  # else the checks below would prove nothing
            watch.poll()  # an app (its mpiexec or a rank): other processes of the run mention the work folder before any job starts
            ranks = [c for c in processes_mentioning(str(work)) if "iolab.apps.jacobi" in c]
            return bool(ranks) and (spec is not IO_SPEC or bool(watch.seen))

        wait_until("a rank of the run's apps (and, for MPI apps, their MPICH or hydra files)", apps_running, timeout=60,
                   every=0.2, detail=lambda: "".join(err)[-2000:])
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(sig)
        rest_out, rest_err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err_text = "".join(err) + rest_err
    assert proc.returncode not in (0, None), err_text[-2000:]
    assert "interrupted" in err_text and "partial trace written to" in err_text, err_text[-2000:]
    # a run that did not end well keeps its work folder (the logs say what happened), and says where
    assert (work / "logs").is_dir() and f"work folder kept for inspection: {work.resolve()}" in err_text, \
        err_text[-2000:]

    trace = read_trace(out)  # readable, and says it is partial
    assert trace.attrs["complete"] is False or str(trace.attrs["complete"]) == "False"
    assert len(trace.jobs) == 2
    assert set(trace.jobs["status"]) <= {"killed", "failed", "pending", "ok"}
    assert any(s != "ok" for s in trace.jobs["status"])  # the run did not finish
    assert not list(tmp_path.glob(".*.tmp*")), "a half-written file was left behind"
    check_partial_report_and_export(trace, out, tmp_path)

    # nothing that belongs to this run survives it (apps, mpiexec, their ranks)
    wait_until("every process of the run to end", lambda: not processes_mentioning(str(work)), timeout=10,
               detail=lambda: processes_mentioning(str(work)))
    # nor a file of MPICH's or hydra's: the run's own /dev/shm and /tmp hold none of them now
    if spec is IO_SPEC:  # its apps are MPI programs started by hydra
        assert watch.seen, "the run made no MPICH or hydra file: the check below would prove nothing"
    assert sorted(private.new()) == []


def check_partial_report_and_export(trace, out: Path, tmp_path: Path) -> None:
    """``iolab report`` says the run was interrupted and names what it cut (no ``nan`` makespan as if
    complete); ``export --format batsim-csv`` writes a row per job that started, cut ones as killed
    ending when they were killed, and says what is missing."""
    from click.testing import CliRunner

    from iolab.cli import cli

    jobs = {str(r["id"]): r for r in trace.jobs.rows()}
    cut = sorted(i for i, r in jobs.items() if r["status"] != "ok")
    r = CliRunner().invoke(cli, ["report", str(out)])
    assert r.exit_code == 0, r.output
    assert "INTERRUPTED" in r.output and "interrupted at" in r.output and "nan" not in r.output, r.output
    assert all(f"{i} killed" in r.output or f"{i} never started" in r.output or f"{i} pending" in r.output
               for i in cut), r.output
    csv_path = tmp_path / "partial.csv"
    r = CliRunner().invoke(cli, ["export", str(out), "--format", "batsim-csv", "-o", str(csv_path)])
    assert r.exit_code == 0, r.output
    assert "interrupted" in r.output and "missing" in r.output, r.output
    import csv

    rows = {row["job_id"]: row for row in csv.DictReader(csv_path.open())}
    started = {i for i, j in jobs.items() if j["start"] == j["start"]}  # not nan
    assert set(rows) == started and started, (rows, jobs)
    for i in started:
        if jobs[i]["status"] != "ok":
            assert rows[i]["final_state"] == "COMPLETED_KILLED"
            assert float(rows[i]["finish_time"]) >= float(rows[i]["starting_time"])
