"""Numbers that are no numbers, and inputs that are no files: NaN and infinity refused by every float option,
a split threshold that would split requests into billions of parts refused before the run, a volume fit
that does not measure its rate says so, and a FIFO, device or folder given as an input file is named for
what it is (not "does not exist")."""

from __future__ import annotations

import json
import os
import stat

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner


from iolab.cli import cli  # noqa: E402
from iolab.sim.batch.volume_fit import fit_volume_model  # noqa: E402
from iolab.trace import TraceBuilder, write_trace  # noqa: E402

BATCH = {"kind": "batch", "scheduler": "fcfs",
         "platform": {"nodes": 4, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                      "stage_rate": "1GB/s"},
         "workload": {"source": "inline", "jobs": [{"id": "j1", "submit": 0, "nodes": 1, "walltime": 100,
                                                    "runtime": 50}]}}


def run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(json.dumps(BATCH))
    return p


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
@pytest.mark.parametrize("args,option", [
    (["workload", "generate", "carretero", "-o", "{tmp}/w.yaml", "--alpha"], "--alpha"),
    (["controller", "train", "{trace}", "-o", "{tmp}/m.npz", "--threshold"], "--threshold"),
    (["controller", "train", "{trace}", "-o", "{tmp}/m.npz", "--test-share"], "--test-share"),
    (["simulate", "{spec}", "--mode", "step", "--dt"], "--dt"),
    (["emulate", "{spec}", "--out", "{tmp}/e.h5", "--time-scale"], "--time-scale"),
    (["validate", "{spec}", "--time-scale"], "--time-scale"),
    (["sweep", "{spec}", "--flush-every"], "--flush-every"),
])
def test_a_float_option_refuses_what_is_not_a_finite_number(tmp_path, spec, args, option, value):
    trace = tmp_path / "t.h5"
    trace.write_bytes(b"")
    argv = [a.format(tmp=tmp_path, spec=spec, trace=trace) for a in args] + [value]
    r = run(*argv)
    assert r.exit_code == 2 and option in r.output and "not a finite number" in r.output, r.output


def test_a_split_threshold_of_one_byte_is_refused_before_the_run(tmp_path):
    d = json.loads(json.dumps(BATCH))
    d["platform"]["hps"]["servers"] = [{"nodes": [{"network_bw": "10GB/s", "disks": [
        {"capacity": "1TB", "read_bw": "1GB/s", "write_bw": "1GB/s"}]}]}]
    d["placement"] = {"strategy": "worst-fit", "split": {"enabled": True, "threshold": 1}}
    d["workload"]["jobs"][0].update({"input": "10GB", "storage": "20GB"})
    p = tmp_path / "split.json"
    p.write_text(json.dumps(d))
    r = run("simulate", p)
    assert r.exit_code == 2 and "placement.split.threshold" in r.output and "parts" in r.output, r.output
    d["placement"]["split"]["threshold"] = "1GB"  # 20 parts: runs
    p.write_text(json.dumps(d))
    assert run("simulate", p).exit_code == 0


def test_a_volume_fit_that_does_not_measure_its_rate_says_so():
    rng = np.random.default_rng(1)
    w = [0] * 30 + [3] * 30
    flat = fit_volume_model(w, list(0.3 + 0.01 * rng.standard_normal(60)), 1e9)
    assert "not measured" in flat.note and flat.probe_rate > 1e11
    one = fit_volume_model([2] * 9, [0.1 * i for i in range(1, 10)], 1e9)
    assert "one writer count" in one.note
    slope = fit_volume_model(w, [0.2 + 1e9 * (k + 1) / 5e9 for k in w], 1e9)
    assert slope.note == "" and slope.probe_rate == pytest.approx(5e9)


def test_controller_fit_warns_on_stderr_and_in_the_fragment(tmp_path):
    tb = TraceBuilder()
    rng = np.random.default_rng(2)
    rows = [(10.0 * i, "lps", 0.3 + 0.01 * float(rng.standard_normal()), i % 4) for i in range(40)]
    tb.extend("samples", [(t, v, x, k, 0.0, 0.0, 0.0, x, 0.0, 0.0) for t, v, x, k in rows])
    path = tmp_path / "r.h5"
    write_trace(tb.build(runtime="emulator-batch", spec={"controller": {"p": 1e9}}), path)
    r = CliRunner().invoke(cli, ["controller", "fit", str(path)])
    assert r.exit_code == 0, r.output
    assert "warning: the response barely grows" in r.stderr and "# probe_rate not measured" in r.stdout
    r = CliRunner().invoke(cli, ["controller", "fit", str(path), "--json"])
    assert "barely grows" in json.loads(r.stdout)["warning"]


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
@pytest.mark.parametrize("command", ["report", "export", "simulate", "import-slurm", "spec-swf"])
def test_an_input_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path, kind, command):
    p = tmp_path / "input"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "folder":
        p.mkdir()
    elif os.geteuid() == 0:
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        pytest.skip("mknod needs root")
    if command == "spec-swf":
        s = tmp_path / "s.json"
        s.write_text(json.dumps({**BATCH, "workload": {"source": "swf", "path": str(p)}}))
        args = ["simulate", s]
    else:
        args = {"report": ["report", p], "export": ["export", p, "--format", "swf", "-o", tmp_path / "o.swf"],
                "simulate": ["simulate", p], "import-slurm": ["workload", "import", "slurm", p, "-o",
                                                               tmp_path / "o.yaml"]}[command]
    r = run(*args)
    assert r.exit_code == 2, r.output
    words = {"fifo": "FIFO", "folder": "folder", "device": "device"}[kind]
    assert words in r.output or "directory" in r.output, r.output  # click names a folder itself, where it checks
    assert "does not exist" not in r.output and "no such" not in r.output
