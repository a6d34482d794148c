"""Outputs never destroy anything: a device is written into (never replaced by a file), an output that is one of
the command's inputs is refused, an output that cannot be written is refused before the work, and a SIGTERM
during a write leaves no temporary file.  Every refusal is exit 2, names the option and the path, no traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.atomic import OutputError, atomic_path, check_output
from iolab.cli import cli

BATCH = {"kind": "batch", "scheduler": "fcfs",
         "platform": {"nodes": 4, "lps": {"rate": "1GB/s"}, "hps": {"rate": "4GB/s", "capacity": "1TB"},
                      "stage_rate": "1GB/s"},
         "workload": {"source": "inline", "jobs": [{"id": "j1", "submit": 0, "nodes": 1, "walltime": 100,
                                                    "runtime": 50}]}}
SWF = "; MaxNodes: 8\n1 0 0 50 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1\n2 5 0 30 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1\n"

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


def run(*args, input=None):
    r = CliRunner().invoke(cli, [str(a) for a in args], input=input)
    assert "Traceback" not in r.output, r.output
    return r


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(json.dumps(BATCH))
    return p


@pytest.fixture
def trace(tmp_path, spec):
    t = tmp_path / "t.h5"
    assert run("simulate", spec, "--out", t).exit_code == 0
    return t


@pytest.fixture
def device(tmp_path):
    """A character device node like /dev/null (1, 3), made in the test's folder: never the real one."""
    d = tmp_path / "null"
    os.mknod(d, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return d


def is_device(p: Path) -> bool:
    return stat.S_ISCHR(os.lstat(p).st_mode)


@root_only
@pytest.mark.parametrize("command", [
    lambda spec, trace, dev: ["simulate", spec, "--out", dev],
    lambda spec, trace, dev: ["export", trace, "--format", "swf", "-o", dev],
    lambda spec, trace, dev: ["export", trace, "--format", "batsim-csv", "-o", dev],
    lambda spec, trace, dev: ["workload", "generate", "carretero", "--alpha", "1", "--apps", "3", "-o", dev],
], ids=["simulate", "export-swf", "export-batsim", "generate"])
def test_a_device_is_written_into_and_stays_a_device(spec, trace, device, command):
    r = run(*command(spec, trace, device))
    assert r.exit_code == 0, r.output
    assert is_device(device)
    assert not [p for p in device.parent.iterdir() if p.name.startswith(".null.")]  # no temporary left beside


@root_only
def test_a_device_is_refused_where_a_lock_and_work_folder_go_beside_the_output(spec, device):
    r = run("emulate", spec, "--out", device)
    assert r.exit_code == 2 and f"--out {device}: is a device" in r.output, r.output
    assert is_device(device) and not Path(f"{device}.lock").exists() and not Path(f"{device}.work").exists()


def test_a_block_device_is_never_an_output(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mknod needs root")
    disk = tmp_path / "disk"
    os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))  # a loop device number: nothing is opened
    with pytest.raises(OutputError, match="block device"):
        check_output(disk)


@pytest.mark.parametrize("case", ["simulate-spec", "simulate-swf", "export", "train", "import-slurm",
                                  "convert", "simulate-calibration", "slurm-replay-record", "slurm-compare-figure"])
def test_an_output_that_is_an_input_is_refused_before_the_work(tmp_path, spec, trace, case):
    swf = tmp_path / "w.swf"
    swf.write_text(SWF)
    swf_spec = tmp_path / "swf.json"
    swf_spec.write_text(json.dumps({**BATCH, "workload": {"source": "swf", "path": "w.swf"}}))
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --time=10:00\nsrun hostname\n")
    log = tmp_path / "record.png"  # a Slurm job completion log, named as a figure may be
    log.write_bytes((Path(__file__).parent / "data" / "slurm" / "replay-8nodes.jobcomp").read_bytes())
    args, victim = {
        "simulate-spec": (["simulate", spec, "--out", spec], spec),
        "simulate-swf": (["simulate", swf_spec, "--out", swf], swf),  # the spec's workload file
        "export": (["export", trace, "--format", "swf", "-o", trace], trace),
        "train": (["controller", "train", trace, "-o", trace], trace),
        "import-slurm": (["workload", "import", "slurm", script, "-o", script], script),
        "convert": (["controller", "convert", trace, "-o", trace, "--trust-pickle"], trace),
        "simulate-calibration": (["simulate", spec, "--calibration", trace, "--out", trace], trace),
        # before anything is submitted to Slurm (no cluster is needed to be refused)
        "slurm-replay-record": (["slurm", "replay", swf_spec, "--record", swf], swf),
        "slurm-compare-figure": (["slurm", "compare", log, "--figure", log], log),
    }[case]
    before = victim.read_bytes()
    r = run(*args)
    assert r.exit_code == 2 and f"{victim}: is the input" in r.output, r.output
    assert victim.read_bytes() == before


def test_the_input_is_recognised_through_another_name(tmp_path, trace):
    link = tmp_path / "again.h5"
    link.symlink_to(trace)
    hard = tmp_path / "hard.h5"
    os.link(trace, hard)
    for other in (link, hard, tmp_path / "." / "t.h5"):
        r = run("export", other, "--format", "swf", "-o", trace)
        assert r.exit_code == 2 and "is the input" in r.output, r.output


@pytest.mark.parametrize("where,reason", [
    ("/proc/iolab-out.h5", "cannot write in /proc"),
    ("{tmp}", "is a (folder; name a file|directory)"),  # click's own check of --out, or check_output's
    ("{tmp}/b.json/inside.h5", "not a usable path"),  # under a file
])
def test_an_unwritable_output_is_refused_before_the_work(tmp_path, spec, where, reason):
    where = where.format(tmp=tmp_path)
    r = run("simulate", spec, "--out", where)
    assert r.exit_code == 2 and re.search(reason, r.output) and where in r.output, r.output
    assert "makespan" not in r.output  # refused before the run, not after it


def test_folder_outputs_are_checked_too(tmp_path, spec, trace):
    r = run("export", trace, "--format", "swf", "-o", tmp_path)
    assert r.exit_code == 2 and f"-o {tmp_path}: is a folder; name a file" in r.output, r.output
    r = run("report", trace, "--figures", "/proc/figs")
    assert r.exit_code == 2 and "--figures /proc/figs" in r.output, r.output
    r = run("study", "lackner", "--quick", "--no-ray", "--out", "/proc/lackner")
    assert r.exit_code == 2 and "--out /proc/lackner: cannot write in /proc" in r.output, r.output
    r = run("export", trace, "--format", "csv", "-o", spec)  # csv: a folder
    assert r.exit_code == 2 and f"-o {spec}: exists and is not a folder" in r.output, r.output
    r = run("examples", "--copy", "/proc/examples")
    assert r.exit_code == 2 and "--copy" in r.output, r.output


def test_a_missing_folder_is_created_for_a_file_output(tmp_path, spec):
    out = tmp_path / "new" / "deeper" / "t.h5"
    assert run("simulate", spec, "--out", out).exit_code == 0 and out.is_file()


def test_a_sigterm_during_a_write_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "big.h5"
    code = textwrap.dedent(f"""
        import sys, time
        from iolab.atomic import atomic_path
        with atomic_path({str(target)!r}) as tmp:
            tmp.write_bytes(b"x" * (20 << 20))
            print("writing", flush=True)
            time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "writing"
        assert len(list(tmp_path.glob(".big.h5.*.tmp"))) == 1  # the 20 MB temporary, while it is written
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        p.kill()
    assert list(tmp_path.iterdir()) == []  # neither the temporary nor a half-written target


def test_a_sigterm_handler_someone_installed_is_left_alone(tmp_path):
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
    try:
        with atomic_path(tmp_path / "x") as tmp:
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
            tmp.write_text("done")
        assert seen == [signal.SIGTERM] and (tmp_path / "x").read_text() == "done"
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_an_input_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path, kind):
    p = tmp_path / "w.swf"
    p.mkdir() if kind == "folder" else os.mkfifo(p)
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({**BATCH, "workload": {"source": "swf", "path": "w.swf"}}))
    r = run("simulate", spec)
    want = "is a folder" if kind == "folder" else "is a FIFO"
    assert r.exit_code == 2 and "workload.path" in r.output and want in r.output, r.output


@pytest.mark.parametrize("command", ["validate", "slurm-compare"])
def test_a_figure_named_as_no_figure_is_written_is_refused_before_the_work(tmp_path, spec, command):
    """matplotlib picks the format from the name: a name it cannot write would fail after the whole run."""
    fig = tmp_path / "fig.txt"
    log = Path(__file__).parent / "data" / "slurm" / "replay-8nodes.jobcomp"
    args = {"validate": ["validate", spec, "--figure", fig, "--work-dir", tmp_path / "w"],
            "slurm-compare": ["slurm", "compare", log, "--figure", fig]}[command]
    r = run(*args)
    assert r.exit_code == 2 and f"--figure {fig}: a figure is written as .png, .svg, .pdf" in r.output, r.output
    assert list(tmp_path.iterdir()) == [spec]  # nothing written, no work folder made
