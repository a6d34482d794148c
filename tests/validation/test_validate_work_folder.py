"""``iolab validate`` without ``--work-dir``: each real run works in a folder under $TMPDIR, removed
after a run that ended well, kept (and named) after one that did not, or with ``--keep-work``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.specs import parse_spec
from iolab.trace import TraceBuilder
from iolab.validation.run_folders import run_in, temporary_folder

from small_runs import tiny_batch

TINY = {"name": "tiny-wf", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 2, "compute": 0.3, "io_volume": 0.5} for a in "AB"],
        "emulator": {"ranks_per_app": 1, "unit_bytes": 1 << 20, "grid": 32, "lease": 20}}


def a_run(work: Path, statuses=("ok", "ok"), complete=True):
    """What a real run leaves: its folder with logs and a checkpoint, and its trace."""
    def run():
        (work / "logs").mkdir(parents=True)
        (work / "apps" / "A").mkdir(parents=True)
        (work / "apps" / "A" / "ckpt.h5").write_bytes(b"\0" * 1024)
        tb = TraceBuilder()
        for i, st in enumerate(statuses):
            tb.add_job(id=f"a{i}", status=st, start=0.0, end=1.0, release=0.0, rank=0, nodes=1)
        return tb.build(runtime="emulator", complete=complete)
    return run


def test_each_run_gets_its_own_folder_under_tmpdir_unless_the_spec_names_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    spec = parse_spec(TINY)
    a, b = temporary_folder(spec, "fifo"), temporary_folder(spec, "fifo-r1")
    assert a.parent == b.parent == tmp_path and a != b
    assert a.name.startswith("iolab-emulate-tiny-wf-") and a.name.endswith("-fifo") and b.name.endswith("-fifo-r1")
    own = parse_spec({**TINY, "emulator": {**TINY["emulator"], "work_dir": str(tmp_path / "mine")}})
    assert temporary_folder(own, "fifo") is None


@pytest.mark.parametrize("statuses, complete, keep, removed, words", [
    (("ok", "ok"), True, False, True, "removed (the run ended well; --keep-work keeps it)"),
    (("ok", "ok"), True, True, False, "kept (--keep-work)"),
    (("ok", "failed"), True, False, False, "kept for inspection (the run did not end well)"),
    (("ok", "ok"), False, False, False, "kept for inspection (the run did not end well)"),  # a partial trace
])
def test_a_folder_is_removed_only_after_a_run_that_ended_well(tmp_path, statuses, complete, keep, removed, words):
    work = tmp_path / "iolab-emulate-x-fifo"
    said: list[str] = []
    trace = run_in(work, a_run(work, statuses, complete), keep=keep, say=said.append)
    assert list(trace.jobs["status"]) == list(statuses)
    assert work.exists() is not removed
    assert len(said) == 1 and words in said[0] and str(work) in said[0], said


def test_a_run_that_raises_keeps_its_folder_and_says_where(tmp_path):
    work = tmp_path / "iolab-emulate-x-fifo"
    said: list[str] = []

    def interrupted():
        a_run(work)()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in(work, interrupted, keep=False, say=said.append)
    assert (work / "logs").is_dir() and said == [f"work folder kept for inspection: {work} (logs in {work / 'logs'})"]


@pytest.mark.long
@pytest.mark.mpi
@pytest.mark.ray
def test_validate_removes_the_folder_of_a_real_run_that_ended_well(tmp_path):
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(TINY))
    r = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--seeds", "0"])
    assert r.exit_code == 0, r.output
    assert_removed(r.stderr, "iolab-emulate-tiny-wf-", "-fifo", r"work folder (\S+) removed \(the run ended well; "
                                                                 r"--keep-work keeps it\)")


@pytest.mark.long
@pytest.mark.mpi
@pytest.mark.ray
def test_validate_of_a_batch_spec_removes_its_real_run_s_folder_and_json_stays_clean(tmp_path):
    spec = tmp_path / "batch.json"
    spec.write_text(json.dumps(tiny_batch("tiny-batch-wf")))
    r = CliRunner().invoke(cli, ["validate", str(spec), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["scheduler"] == "sas"  # the note goes to stderr, not into the JSON
    assert_removed(r.stderr, "iolab-batch-tiny-batch-wf-", "-sas")


def assert_removed(stderr: str, prefix: str, suffix: str, said: str = r"work folder (\S+) removed") -> None:
    """The run said it removed its work folder, named as expected, and the folder is gone."""
    m = re.search(said, stderr)
    assert m, stderr
    work = Path(m.group(1))
    try:
        assert work.name.startswith(prefix) and work.name.endswith(suffix)
        assert not work.exists()
    finally:
        shutil.rmtree(work, ignore_errors=True)
