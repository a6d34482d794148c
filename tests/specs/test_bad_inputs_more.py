"""The bad inputs of issue 32, one small test each: refused cleanly (exit 2, the file and the field or
line named, no traceback, a message of bounded length, quickly) or made to behave."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.cli.simulate import eta

SWF_LINE = "{job} {submit} 1 100 {procs} -1 -1 {procs} 200 -1 1 3 1 -1 1 -1 -1 -1\n"
PLATFORM16 = {"nodes": 16, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "200GB"},
              "stage_rate": "5GB/s"}
IO = {"name": "small", "platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0},
      "apps": [{"id": "A", "nodes": 16, "iterations": 2, "compute": 10, "io_volume": 5},
               {"id": "B", "nodes": 16, "iterations": 3, "compute": 5, "io_volume": 5}]}


def run(*args, input=None):
    r = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert "Traceback" not in (r.output or ""), r.output
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), repr(r.exception)
    return r


def refused(*args, what: str, limit: int = 1000) -> str:
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert what in r.output, r.output
    assert len(r.output) < limit, len(r.output)
    return r.output


def write_yaml(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---------------------------------------------------------------- batch workloads

def swf_spec(tmp_path: Path, procs: list[int], strict: bool = True, **window) -> Path:
    swf = tmp_path / "w.swf"
    swf.write_text("; MaxNodes: 100\n; MaxProcs: 100\n"
                   + "".join(SWF_LINE.format(job=i + 1, submit=10 * i, procs=p) for i, p in enumerate(procs)))
    return write_yaml(tmp_path / "b.yaml", {"kind": "batch", "name": "b", "platform": PLATFORM16, "scheduler": "easy",
                                            "workload": {"source": "swf", "path": str(swf), "strict": strict,
                                                         **window}})


def test_an_swf_job_larger_than_the_machine_is_refused_naming_its_line(tmp_path):
    out = refused("simulate", swf_spec(tmp_path, [4, 25, 8, 30]), what="line 4: job 2 needs 25 nodes; platform.nodes is 16")
    assert "2 such jobs" in out


def test_a_job_larger_than_the_machine_outside_the_window_is_no_error(tmp_path):
    r = run("simulate", swf_spec(tmp_path, [25, 4, 8], skip=1), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["jobs"] == 2


def test_with_strict_false_the_jobs_larger_than_the_machine_are_skipped_and_counted(tmp_path):
    with pytest.warns(UserWarning, match="skipped 2 line"):
        r = run("simulate", swf_spec(tmp_path, [4, 25, 8, 30], strict=False), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output[r.output.index("{"):])["jobs"] == 2


def test_a_huge_swf_field_is_not_echoed_whole(tmp_path):
    swf = tmp_path / "w.swf"
    swf.write_text(SWF_LINE.format(job=1, submit=0, procs=4) + "2 " + "9x" * 1500 + " 1 100 4 -1 -1 4 200 -1 1 3 1 -1 1 -1 -1 -1\n")
    spec = write_yaml(tmp_path / "b.yaml", {"kind": "batch", "name": "b", "platform": PLATFORM16, "scheduler": "easy",
                                            "workload": {"source": "swf", "path": str(swf)}})
    out = refused("simulate", spec, what="line 2: field 2 (submit) is not a number", limit=400)
    assert "(3000 characters)" in out
    swf.write_text(SWF_LINE.format(job=1, submit=0, procs=4) + "3 " + "7" * 5_000_000 + "\n")
    refused("simulate", spec, what="line 2: line longer than 4096 characters", limit=400)


# ---------------------------------------------------------------- Slurm scripts

def import_script(tmp_path: Path, text: str) -> tuple[Path, str]:
    s = tmp_path / "job.sh"
    s.write_text(text)
    r = run("workload", "import", "slurm", s, "-o", tmp_path / "X.out.yaml")
    assert r.exit_code == 2 and len(r.output) < 1000, r.output
    assert not (tmp_path / "X.out.yaml").exists()
    return s, r.output


@pytest.mark.parametrize("source", ["/", "/proc", "/sys/kernel", "/dev"])
def test_a_stage_in_of_a_special_filesystem_is_refused_without_walking_it(tmp_path, source):
    t0 = time.monotonic()
    s, out = import_script(tmp_path, "#!/bin/bash\n#DW jobdw capacity=1TB type=scratch access_mode=striped\n"
                                     f"#DW stage_in source={source} destination=$DW_JOB_STRIPED/x type=directory\n")
    assert f"{s}:3:" in out and "special filesystem" in out
    assert time.monotonic() - t0 < 30  # refused, not walked (a generous bound: the walk of / takes minutes)


def test_a_stage_in_of_a_folder_above_the_file_count_bound_is_refused(tmp_path, monkeypatch):
    from iolab.workloads import slurm_script

    monkeypatch.setattr(slurm_script, "MAX_STAGED_FILES", 5)
    (tmp_path / "data").mkdir()
    for i in range(8):
        (tmp_path / "data" / f"f{i}").write_bytes(b"x" * 10)
    s = tmp_path / "job.sh"
    s.write_text("#DW jobdw capacity=1GB type=scratch access_mode=striped\n"
                 "#DW stage_in source=data destination=$DW_JOB_STRIPED/x type=directory\n")
    with pytest.raises(slurm_script.ScriptError, match=r"job.sh:2: .*more than 5 files"):
        slurm_script.read_script(s)


@pytest.mark.parametrize("line, field", [
    ("#DW jobdw capacity=1e308TB type=scratch access_mode=striped", "capacity=1e308TB"),
    ("#SBATCH -N 1000000000000000000000000000000", "--nodes=1000000000000000000000000000000: above 10000000 nodes"),
    ("#SBATCH -t 99999999999-00:00:00", "walltime 8.64e+15 s"),
    ("#SBATCH -n 9999999999999999999999 --ntasks-per-node=1", "--ntasks="),
])
def test_absurd_script_values_are_refused_naming_script_and_line(tmp_path, line, field):
    s, out = import_script(tmp_path, f"#!/bin/bash\n{line}\nsrun x\n")
    assert f"{s}:2:" in out and field in out and "X.out.yaml" not in out


def test_a_ten_megabyte_job_name_is_refused_at_its_line_not_echoed(tmp_path):
    s, out = import_script(tmp_path, "#!/bin/bash\n#SBATCH -J " + "x" * 10_000_000 + "\n")
    assert f"{s}:2: line longer than" in out


def test_an_empty_script_is_not_a_job(tmp_path):
    s, out = import_script(tmp_path, "")
    assert f"{s}: no #SBATCH" in out
    s, out = import_script(tmp_path, "#!/bin/bash\necho hello\n")
    assert "no #SBATCH" in out


# ---------------------------------------------------------------- traces

def small_trace(tmp_path: Path) -> Path:
    spec = write_yaml(tmp_path / "io.yaml", IO)
    out = tmp_path / "t.h5"
    assert run("simulate", spec, "--out", out).exit_code == 0
    return out


def test_report_refuses_a_trace_whose_bandwidth_is_zero(tmp_path):
    t = small_trace(tmp_path)
    with h5py.File(t, "r+") as f:
        f.attrs["bandwidth"] = 0.0
    refused("report", t, what="bandwidth is 0.0")


@pytest.mark.parametrize("ends", [[float("inf"), 10.0], [-1e308, 10.0], [float("nan"), 10.0]])
def test_report_refuses_ok_apps_with_impossible_ends(tmp_path, ends):
    t = small_trace(tmp_path)
    with h5py.File(t, "r+") as f:
        end = f["jobs/end"][...]
        end[:2] = ends
        f["jobs/end"][...] = end
        assert set(x.decode() if isinstance(x, bytes) else x for x in f["jobs/status"][...]) == {"ok"}
    refused("report", t, what="job 'A' (row 0): ")


def test_export_refuses_a_trace_without_jobs_as_report_does(tmp_path):
    t = small_trace(tmp_path)
    with h5py.File(t, "r+") as f:
        del f["jobs"]
    refused("export", t, "--format", "csv", "-o", tmp_path / "csv", what="trace has no jobs")
    assert not (tmp_path / "csv").exists()


# ---------------------------------------------------------------- specs, campaigns, studies

def test_thousands_of_inline_apps_are_counted_while_reading_and_refused_at_once(tmp_path):
    apps = [{"id": f"a{i}", "nodes": 1, "iterations": 2, "compute": 1, "io_volume": 1} for i in range(20_000)]
    spec = tmp_path / "big.yaml"
    spec.write_text(yaml.safe_dump({**IO, "apps": apps}, default_flow_style=None, sort_keys=False))
    t0 = time.monotonic()
    out = refused("simulate", spec, what="apps: more than 10000 apps (counted while reading, line")
    assert "--max-apps" in out and time.monotonic() - t0 < 20
    (tmp_path / "big.json").write_text(json.dumps({**IO, "apps": apps}))
    refused("simulate", tmp_path / "big.json", what="apps: 20000 apps, above the limit of 10000")
    ok = write_yaml(tmp_path / "ok.yaml", IO)
    refused("simulate", ok, "--max-apps", 1, what="more than 1 apps")
    assert run("simulate", ok, "--max-apps", 2).exit_code == 0


def test_inline_jobs_are_counted_while_reading(tmp_path):
    jobs = [{"id": i, "submit": 0, "nodes": 1, "walltime": 10, "runtime": 5} for i in range(30)]
    spec = write_yaml(tmp_path / "b.yaml", {"kind": "batch", "platform": PLATFORM16, "scheduler": "easy",
                                            "workload": {"source": "inline", "jobs": jobs}})
    refused("simulate", spec, "--max-jobs", 20, what="workload.jobs: more than 20 jobs (counted while reading")


def test_the_refusal_of_a_counted_limit_names_the_command_that_lifts_it(tmp_path):
    """``--max-apps`` exists on ``simulate`` only: a refusal from ``emulate`` or ``sweep`` says that, rather
    than naming an option those commands do not have.  The bound is 10 000 apps, so a spec of 10 001 apps
    (YAML) and one of 10 001 apps (JSON, counted once read) are refused by emulate before any Ray or MPI."""
    apps = [{"id": f"a{i}", "nodes": 1, "iterations": 2, "compute": 1, "io_volume": 1} for i in range(10_001)]
    yml = tmp_path / "big.yaml"
    yml.write_text(yaml.safe_dump({**IO, "apps": apps}, default_flow_style=None, sort_keys=False))
    (tmp_path / "big.json").write_text(json.dumps({**IO, "apps": apps}))
    iolab = str(Path(sys.executable).parent / "iolab")
    for spec in (yml, tmp_path / "big.json"):
        r = subprocess.run([iolab, "emulate", str(spec), "--out", str(tmp_path / "x.h5")], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert "`iolab simulate --max-apps N` allows more; emulate, validate and sweep keep this limit" in r.stderr
        assert not (tmp_path / "x.h5").exists()


def test_a_line_longer_than_the_bound_is_refused_before_parsing(tmp_path):
    spec = tmp_path / "long.yaml"
    spec.write_text(yaml.safe_dump(IO) + "description: " + "y" * (2 << 20) + "\n")
    refused("simulate", spec, what="characters; a line of a spec is at most")


def test_yaml_reads_1e308_as_text_and_the_message_says_so(tmp_path):
    spec = tmp_path / "r.yaml"
    spec.write_text(yaml.safe_dump(IO).replace("compute: 10", "compute: 10\n  release: 1e308"))
    refused("simulate", spec, what="1.0e+308")


def campaign(tmp_path: Path, runtime: str = "sim", apps=(3, 6)) -> Path:
    return write_yaml(tmp_path / "c.yaml", {
        "kind": "campaign", "name": "c", "runtime": runtime,
        "base": {"platform": {"io_nodes": 1, "nodes_per_io_node": 64, "bandwidth": 1.0}, "mapping": "first-fit"},
        "axes": {"policies": ["fifo"], "seeds": [7],
                 "workloads": [{"generate": "carretero", "alpha": [1], "count": 1,
                                "params": {"apps": list(apps), "iterations": [5, 10]}}]}})


def test_a_campaign_generating_a_billion_apps_is_refused_before_generating(tmp_path):
    refused("sweep", campaign(tmp_path, apps=(1, 1_000_000_000)), "--dry-run",
            what="params.apps: up to 1000000000 apps per generated workload, above the limit of 10000")


@pytest.mark.parametrize("runtime, why", [("nosuchmod:fn", "cannot import nosuchmod"),
                                          ("os:system", "not a runtime")])
def test_dry_run_refuses_the_runtimes_the_real_sweep_refuses(tmp_path, runtime, why):
    refused("sweep", campaign(tmp_path, runtime=runtime), "--dry-run", what=why)


def test_a_study_of_absurd_size_is_refused_from_its_parameters(tmp_path):
    c = write_yaml(tmp_path / "l.yaml", {"kind": "campaign", "name": "l", "study": "lackner",
                                         "params": {"jobs": 10**9, "workloads": 10**6, "repetitions": 10**6}})
    t0 = time.monotonic()
    refused("sweep", c, "--dry-run", what="multiply to 1e+21")
    assert time.monotonic() - t0 < 20


def test_the_progress_estimate_of_the_time_left_is_the_pace_so_far():
    assert eta(25, 100, 10.0) == ", about 30 s left"  # 75 jobs at 2.5 jobs/s
    assert eta(10, 100, 60.0) == ", about 9:00 left"  # 90 jobs at 1/6 job/s: 540 s, as the CLI writes times
    assert eta(0, 100, 5.0) == "" and eta(100, 100, 5.0) == ""


def test_simulate_prints_the_time_left_in_its_progress_lines(tmp_path, monkeypatch):
    """``iolab simulate`` of a batch spec, its progress line due at every callback (``every=0``, as a run
    longer than 5 s has one every 5 s) and the callback made every 16 events (as a run of thousands of jobs
    has one every 16 384): each line before the last job says ``about ... left``, and the
    figure is the wall time elapsed scaled by the jobs still to submit over those submitted."""
    import functools
    import re

    import iolab.cli.simulate as simulate
    import iolab.middleware.policies.batch.driver as engine  # the batch loop calls the hook

    monkeypatch.setattr(simulate, "SimProgress", functools.partial(simulate.SimProgress, every=0))
    monkeypatch.setattr(engine, "PROGRESS_EVERY", 16)  # a call every 16 events, not 16 384: a small run has several
    jobs = [{"id": str(i), "submit": 60 * i, "nodes": 1 + i % 4, "walltime": 3600, "runtime": 600 + 37 * i}
            for i in range(60)]
    path = tmp_path / "long.yaml"
    platform = {"nodes": 4, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "150 GB"},
                "stage_rate": "5 GB/s"}
    path.write_text(yaml.safe_dump({"kind": "batch", "name": "long", "platform": platform, "scheduler": "fcfs",
                                    "workload": jobs}))
    r = CliRunner().invoke(cli, ["simulate", str(path)])
    assert r.exit_code == 0, r.output
    line = re.compile(r"^long: ([\d,]+)/60 jobs submitted \(\d+ %\), simulated time .+?, ([\d.e+-]+) s elapsed"
                      r"(?:, about ([\d.e+-]+) s left)?$")
    progress = [m for m in map(line.match, r.stderr.splitlines()) if m]
    assert progress and len(progress) == r.stderr.count("jobs submitted"), r.stderr  # every line is read
    before_last = [m for m in progress if int(m[1].replace(",", "")) < 60]
    assert before_last, r.stderr
    for m in before_last:
        done, elapsed = int(m[1].replace(",", "")), float(m[2])
        assert m[3] is not None, m[0]  # the estimate is printed
        if done > 0:  # the pace so far, to the digits printed
            assert float(m[3]) == pytest.approx(elapsed * (60 - done) / done, rel=1e-3, abs=1e-3), m[0]
