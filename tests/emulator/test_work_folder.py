"""``iolab emulate`` removes its work folder (checkpoints, logs) after a run that ended well, keeps it
with ``--keep-work``, after a run that did not end well, and when ``--work-dir`` named a folder
that existed before; it says which.  (Interrupted runs keep it too: tests/emulator/test_interrupt.py.)"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.emulator.work_folder import finish
from iolab.specs import parse_spec
from iolab.trace import read_trace

from small_runs import tiny_batch

pytestmark = [pytest.mark.mpi, pytest.mark.ray]

TINY = {"name": "tiny", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 2, "compute": 0.3, "io_volume": 0.5} for a in "AB"],
        "emulator": {"ranks_per_app": 1, "unit_bytes": 1 << 20, "grid": 32, "lease": 20}}


def emulate(tmp_path, *options):
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(parse_spec(TINY).model_dump(mode="json")))
    out = tmp_path / "run.h5"
    r = CliRunner().invoke(cli, ["emulate", str(path), "--out", str(out), "--quiet", *options])
    assert r.exit_code == 0, r.output
    assert set(read_trace(out).jobs["status"]) == {"ok"}
    return r.output, tmp_path / "run.work"


@pytest.mark.long
def test_a_run_that_ended_well_removes_its_work_folder_unless_kept(tmp_path):
    text, work = emulate(tmp_path / "a")  # OUT's stem + .work, beside the trace
    assert not work.exists() and f"work folder {work.resolve()} removed" in text, text
    text, work = emulate(tmp_path / "b", "--keep-work")
    assert (work / "logs").is_dir() and any((work / "apps").iterdir()), text  # the checkpoints are there
    assert "work folder kept (--keep-work)" in text and str(work.resolve()) in text


@pytest.mark.long
def test_a_work_dir_that_existed_is_left_alone(tmp_path):
    (tmp_path / "c").mkdir()
    mine = tmp_path / "c" / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not iolab's")
    text, _ = emulate(tmp_path / "c", "--work-dir", str(mine))
    assert (mine / "notes.txt").read_text() == "not iolab's" and (mine / "logs").is_dir()
    assert "kept (it existed before the run)" in text


def test_finish_keeps_the_folder_of_a_run_that_did_not_end_well(tmp_path):
    work = tmp_path / "w"
    (work / "logs").mkdir(parents=True)
    said = finish(work, well=False, keep=False, existed=False)
    assert work.is_dir() and "kept for inspection" in said and str(work / "logs") in said
    said = finish(work, well=True, keep=False, existed=False)
    assert not work.exists() and "removed" in said


@pytest.mark.long
def test_a_batch_run_that_ended_well_removes_its_work_folder(tmp_path):
    """The batch path of ``iolab emulate`` goes through the same rule, end to end (the message is
    said only of a folder that existed, so the run did work there)."""
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(tiny_batch("tiny-batch-wf")))
    out = tmp_path / "b.h5"
    r = CliRunner().invoke(cli, ["emulate", str(path), "--out", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert set(read_trace(out).jobs["status"]) == {"ok"}
    work = (tmp_path / "b.work").resolve()
    assert not work.exists() and f"work folder {work} removed" in r.output, r.output
