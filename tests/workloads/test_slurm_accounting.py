"""Slurm's records as workloads: the job completion log and sacct --parsable2.

Samples (tests/data/slurm/): ``jobcomp-22.05.log`` and ``sacct-c-22.05.txt`` were written by the local
cluster's Slurm 22.05 (its jobcomp/filetxt log, and ``sacct -c`` reading it) for: jobs that completed,
one that failed, a job array of three tasks and one whose third task was cancelled while pending, a
job cancelled while running and one cancelled while pending, a job name with a blank.
``sacct-accounting.txt`` is sacct's documented output with accounting (steps ``.batch``, ``.extern``,
``.0``, array tasks ``_1`` and a pending range ``_[3-5]``, a heterogeneous component ``+0``,
``CANCELLED by UID``, ``Unknown`` and ``None`` times, ``UNLIMITED``), written by hand: this machine has
no slurmdbd.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iolab.errors import DataError
from iolab.workloads.slurm_accounting import read_accounting, read_jobcomp, read_sacct

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def test_the_job_completion_log_keeps_jobs_that_ran_and_names_array_tasks():
    acc = read_jobcomp(DATA / "jobcomp-22.05.log")
    ids = [j.id for j in acc.kept]
    assert "4_1" in ids and "4_2" in ids and "4_3" in ids  # array tasks by ArrayJobId_ArrayTaskId
    assert "10" not in ids  # cancelled while pending: start = end, 0 nodes
    assert acc.dropped == {"never started": 1}
    two = next(j for j in acc.jobs if j.id == "2")
    assert (two.name, two.nodes, two.limit, two.end - two.start) == ("two nodes", 2, 60.0, 4.0)
    cancelled = next(j for j in acc.kept if j.id == "6")  # cancelled while running: it held its node
    assert cancelled.state == "CANCELLED" and cancelled.end - cancelled.start == 8.0
    assert next(j for j in acc.kept if j.id == "3").state == "FAILED"


def test_sacct_skips_steps_keeps_array_tasks_and_drops_what_never_ran():
    acc = read_sacct(DATA / "sacct-accounting.txt")
    assert [j.id for j in acc.kept] == ["101", "102_1", "102_2", "103", "106+0"]
    assert acc.dropped == {"never started": 2, "still running (no end)": 1}
    j = {j.id: j for j in acc.jobs}
    assert j["101"].limit == 1800 and j["102_1"].limit == 86400 and j["103"].limit is None
    assert j["103"].state == "CANCELLED" and j["103"].user == "carol"
    assert j["101"].start - j["101"].submit == 5
    assert any("without a time limit" in n for n in acc.notes)


def test_sacct_reading_the_completion_log_is_read_as_sacct():
    # sacct -c of Slurm 22.05 prints the start as Submit and cuts a job name at its blank (its own
    # reader splits the log's line at blanks), and gives array tasks their job ids: read as it is
    acc = read_accounting(DATA / "sacct-c-22.05.txt")
    assert len(acc.kept) == 11 and acc.dropped == {"never started": 1}


def test_import_sacct_writes_a_spec_the_simulator_runs(tmp_path):
    from click.testing import CliRunner
    from iolab.cli import cli

    out = tmp_path / "jobs.yaml"
    r = CliRunner().invoke(cli, ["workload", "import", "sacct", str(DATA / "sacct-accounting.txt"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "5 job(s) on 4 nodes" in r.output
    r = CliRunner().invoke(cli, ["simulate", str(out), "--json"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("text, where", [
    ("JobID|Submit\n1|2026-12-01T08:00:00\n", "line 1"),
    ("JobID|Submit|Start|End|NNodes|Timelimit|State\n1|yesterday|x|y|1|1|COMPLETED\n", "line 2"),
    ("JobID|Submit|Start|End|NNodes|Timelimit|State\n1|2026-12-01T08:00:00\n", "line 2"),
])
def test_bad_sacct_files_are_refused_naming_the_line(tmp_path, text, where):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(DataError, match=where):
        read_sacct(p)


def test_a_missing_file_is_refused_naming_it(tmp_path):
    with pytest.raises(DataError, match="nope.log"):
        read_accounting(tmp_path / "nope.log")
