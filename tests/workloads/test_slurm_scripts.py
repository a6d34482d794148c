"""iolab workload import slurm on the scripts of tests/data/slurm, and bad scripts refused with file and line."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.sim.batch.run import simulate_batch
from iolab.workloads.slurm_script import ScriptError, parse_begin, parse_time_limit, read_script
from iolab.specs import load_spec, parse_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


def test_datawarp_script():
    s = read_script(DATA / "datawarp.sbatch")
    assert (s.name, s.nodes, s.walltime, s.begin, s.capacity, s.access_mode) == ("sim-a", 4, 7200.0, 600.0, 200e9,
                                                                                 "striped")
    (si, so) = s.staged
    assert (si.direction, si.bytes, si.from_) == ("stage_in", (DATA / "input.dat").stat().st_size, "file size")
    assert (so.direction, so.bytes, so.from_, so.line) == ("stage_out", 50e9, "size=", 10)
    j = s.job()
    assert (j.input, j.output, j.storage, j.submit) == (1000.0, 50e9, 200e9, 600.0)


def test_lua_script_stops_at_the_first_command():
    s = read_script(DATA / "lua.sbatch")
    # the #DW jobdw 9TB and --nodes=64 after `module load` are ignored, as sbatch does
    assert (s.name, s.nodes, s.walltime, s.capacity) == ("lua-job", 2, 86400.0, 2**40)
    sizes = sum(f.stat().st_size for f in (DATA / "inputs").iterdir())
    assert [(x.direction, x.type, x.bytes) for x in s.staged] == [("stage_in", "directory", sizes),
                                                                    ("stage_out", "file", 300e9)]
    assert [x.from_ for x in s.staged] == ["sum of the directory's file sizes", "size="]


def test_plain_script_nodes_from_tasks():
    s = read_script(DATA / "plain.sbatch")
    assert (s.nodes, s.walltime, s.capacity, s.staged) == (4, 1800.0, 0.0, [])


def test_time_and_begin_forms():
    assert [parse_time_limit(v) for v in ("30", "5:30", "1:02:03", "2-3", "2-3:04", "2-3:04:05")] == [
        1800, 330, 3723, 183600, 183840, 183845]
    now = dt.datetime(2026, 11, 22, 8, 0)
    assert parse_begin("now+2hours", None) == 7200 and parse_begin("now", None) == 0
    assert parse_begin("16:00", now) == 8 * 3600 and parse_begin("teatime", now) == 8 * 3600
    assert parse_begin("2026-11-23T08:00", now) == 86400 and parse_begin("2026-11-21", now) == 0
    with pytest.raises(ValueError, match="--now"):
        parse_begin("noon", None)
    with pytest.raises(ValueError, match="unlimited"):
        parse_time_limit("UNLIMITED")


def test_cli_spec_and_simulation_stage_as_slurm(tmp_path):
    out = tmp_path / "s.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "slurm", str(DATA / "datawarp.sbatch"),
                                   str(DATA / "lua.sbatch"), str(DATA / "plain.sbatch"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    spec = load_spec(out)
    assert [j.id for j in spec.workload.jobs] == ["sim-a", "lua-job", "plain"]
    text = out.read_text()
    assert "stage_in input.dat -> $DW_JOB_STRIPED/input.dat 1 kB (file size)" in text
    assert "stage_in inputs -> /bb/in" in text and "(sum of the directory's file sizes)" in text
    assert "burst buffer 200 GB;" in text and "burst buffer 1 TiB;" in text  # 1 TiB as written, not 1.09951 TB
    # the capacity is written with its unit, as the rates are, and reads back as the same number of bytes
    hps = yaml.safe_load(text)["platform"]["hps"]
    assert hps == {"rate": "15 GB/s", "capacity": "2.048 TB"}
    assert load_spec(out).platform.hps.capacity == 2048e9
    # every burst-buffer request honoured, as Slurm does: every job on HPS
    data = yaml.safe_load(out.read_text())
    data["scheduler"] = {"kind": "random-tier", "p": 1.0}
    trace = simulate_batch(parse_spec(data))
    j = {r["id"]: r for r in trace.jobs.rows()}
    ph = [r for r in trace.phases.rows() if r["job"] == "sim-a"]
    stage_in = next(r for r in ph if r["kind"] == "stage-in")
    stage_out = next(r for r in ph if r["kind"] == "stage-out")
    assert stage_in["volume"] == 1000.0 and stage_in["start"] == j["sim-a"]["start"] >= 600.0  # not before --begin
    assert stage_out["volume"] == 50e9 and stage_out["end"] == pytest.approx(j["sim-a"]["end"])
    alloc = next(r for r in trace.allocations.rows() if r["job"] == "sim-a")
    assert (alloc["bytes"], alloc["alloc"], alloc["free"]) == (200e9, stage_in["start"], j["sim-a"]["end"])


def test_header_writes_times_as_durations_sizes_with_their_unit_and_one_job_singular(tmp_path):
    """A 30-day walltime, a begin 400 days on and a 1 TiB burst buffer read as a person writes them
    (never ``2.592e+06 s``), and one script is "1 job"."""
    script = tmp_path / "long.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH -N 3 --time=30-00:00:00 --begin=now+400days\n"
                      "#DW jobdw type=scratch access_mode=striped capacity=1TiB\nsrun ./a\n")
    out = tmp_path / "long.yaml"
    res = CliRunner().invoke(cli, ["workload", "import", "slurm", str(script), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"{out}: 1 job from 1 Slurm script"
    head = [line for line in out.read_text().splitlines() if line.startswith("#")]
    line = next(h for h in head if "long.sbatch" in h)
    assert "3 nodes, walltime 30 d 0:00:00, begin +400 d 0:00:00, burst buffer 1 TiB" in line, line
    assert not any(re.search(r"\d[eE][+-]?\d", h) for h in head), head
    job = load_spec(out).workload.jobs[0]  # the header says what the spec holds
    assert (job.walltime, job.submit, job.storage) == (30 * 86400, 400 * 86400, 2**40)


def bad(tmp_path, body: str) -> ScriptError:
    p = tmp_path / "bad.sbatch"
    p.write_text(body)
    res = CliRunner().invoke(cli, ["workload", "import", "slurm", str(p), "-o", str(tmp_path / "o.yaml")])
    assert res.exit_code == 2 and "Traceback" not in res.output and not (tmp_path / "o.yaml").exists()
    with pytest.raises(ScriptError) as err:
        read_script(p)
    assert f"{p}:{err.value.line}: " in res.output or (err.value.line == 0 and str(p) in res.output)
    return err.value


@pytest.mark.parametrize("body, line, why", [
    ("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --nodez=3\nsrun x\n", 3, "unknown sbatch option --nodez"),
    ("#SBATCH -N 2 -Z\n", 1, "unknown sbatch option -Z"),
    ("#SBATCH -t 1:00:00\n#DW jobdw capacity=10GB\n#DW stage_in source=missing.dat destination=/bb type=file\n", 3,
     "does not exist"),
    ("#DW jobdw capacity=10XB type=scratch\n", 1, "unknown size unit"),
    ("#DW jobdw capacity=10GB type=scratch colour=red\n", 1, "unknown key 'colour'"),
    ("#DW persistentdw name=mine\n", 1, "not modelled"),
    ("#DW stage_in source=/x destination=/bb size=1GB\n", 1, "asks for no burst buffer"),
    ("#DW jobdw capacity=1GB\n#DW stage_out source=/bb/o destination=/nowhere/o size=5GB\n", 2, "exceeds"),
    ("#BB_LUA frobnicate now\n", 1, "unknown #BB_LUA directive"),
    ("#SBATCH --time=soon\n", 1, "not a Slurm time limit"),
    ("#SBATCH --begin=noon\n", 1, "--now"),
])
def test_bad_scripts(tmp_path, body, line, why):
    err = bad(tmp_path, body)
    assert err.line == line and why in err.reason


def test_missing_script(tmp_path):
    res = CliRunner().invoke(cli, ["workload", "import", "slurm", str(tmp_path / "nope.sbatch"), "-o",
                                   str(tmp_path / "o.yaml")])
    assert res.exit_code == 2 and "nope.sbatch: no such Slurm script" in res.output


def test_cli_now_and_default_time(tmp_path):
    p = tmp_path / "later.sbatch"
    p.write_text("#!/bin/sh\n#SBATCH --begin=2026-11-22T10:30 -N 3\n#BB_LUA capacity=10GB\necho hi\n")
    out = tmp_path / "o.yaml"
    args = ["workload", "import", "slurm", str(p), "-o", str(out), "--default-time", "2h", "--nodes", "8"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and f"{p}:2: " in res.output and "--now" in res.output
    res = CliRunner().invoke(cli, args + ["--now", "2026-11-22T08:00"])
    assert res.exit_code == 0, res.output
    spec = load_spec(out)
    (j,) = spec.workload.jobs
    assert (j.submit, j.walltime, j.nodes, j.storage, spec.platform.nodes) == (9000.0, 7200.0, 3, 10e9, 8)
    assert "walltime 2:00:00 (default)" in out.read_text()
    res = CliRunner().invoke(cli, args + ["--now", "tomorrow"])
    assert res.exit_code == 2 and "--now" in res.output
