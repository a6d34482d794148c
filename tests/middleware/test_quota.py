"""The HPS quota on disk, in the storage manager's state (real directories, real files).

A job's directory cannot grow past its allocation: writers reserve a file's bytes
before writing it; the bytes counted are those really in the directory (plus open
reservations); a refusal is logged with its reason; the manager measures the bytes
on disk (apparent size and st_blocks * 512) for every job and the whole tier.
"""

from __future__ import annotations

import os

import pytest
import yaml
from click.testing import CliRunner

from iolab.cli import cli
from iolab.errors import SpecError
from iolab.middleware.storage import QuotaExceeded, StorageState, copy_paced, disk_usage
from iolab.specs.load import parse_spec


def state(tmp_path, capacity=10_000):
    return StorageState(tmp_path / "lps", tmp_path / "hps", capacity)


def write(path, n):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(n))


def test_disk_usage_counts_apparent_and_allocated_bytes_of_regular_files(tmp_path):
    write(tmp_path / "d" / "a", 1000)
    write(tmp_path / "d" / "sub" / "b", 5000)
    (tmp_path / "d" / "link").symlink_to(tmp_path / "d" / "a")  # not followed, not counted
    apparent, blocks = disk_usage(tmp_path / "d")
    assert apparent == 6000
    ref = sum(os.stat(tmp_path / "d" / p).st_blocks * 512 for p in ("a", "sub/b"))
    assert blocks == ref and blocks >= 6000  # whole blocks (or more) really used
    assert disk_usage(tmp_path / "d", [str(tmp_path / "d" / "sub")]) == (1000, os.stat(tmp_path / "d" / "a").st_blocks * 512)
    assert disk_usage(tmp_path / "missing") == (0, 0)


def test_a_write_past_the_allocation_is_refused_and_logged(tmp_path):
    s = state(tmp_path)
    assert s.allocate("j", 3000, 0.0).status == "allocated"
    d = s.open_dir("hps", "j")
    f = d / "ckpt" / "rank-0.h5"
    assert s.reserve("j", str(f), 2000, [str(f)], 1.0) == 1000
    write(f, 2000)  # the reserved file, being written: counted once (by its reservation)
    assert s.in_use("j") == 2000
    s.settle("j", str(f))
    assert s.in_use("j") == 2000 and s.room("j") == 1000  # now counted on disk
    g = d / "ckpt" / "rank-1.h5"
    with pytest.raises(QuotaExceeded, match=r"would write 1001 B .* holding 2000 B, past its allocation of 3000 B"):
        s.reserve("j", str(g), 1001, [str(g)], 2.0)
    assert s.quota_log[-1][:5] == ["j", 2.0, 1001, 2000, 3000]
    assert s.reserve("j", str(g), 1000, [str(g)], 3.0) == 0  # exactly the allocation fits
    f.unlink()  # deleting files gives room back (the disk is the truth)
    assert s.room("j") == 2000


def test_bytes_written_outside_a_reservation_count_against_the_quota(tmp_path):
    s = state(tmp_path)
    s.allocate("j", 3000, 0.0)
    d = s.open_dir("hps", "j")
    write(d / ".hidden.tmp123", 2500)  # a leftover or a rogue writer: on disk is on disk
    with pytest.raises(QuotaExceeded):
        s.reserve("j", str(d / "x"), 600, [str(d / "x")], 1.0)


def test_reservations_stay_inside_the_job_directory(tmp_path):
    s = state(tmp_path)
    s.allocate("a", 100, 0.0)
    s.allocate("b", 100, 0.0)
    s.open_dir("hps", "a")
    db = s.open_dir("hps", "b")
    with pytest.raises(ValueError, match="outside its directory"):
        s.reserve("a", "k", 10, [str(db / "f")], 1.0)
    with pytest.raises(ValueError, match="leaves the hps root"):
        s.reserve("a", "k", 10, [str(tmp_path / "elsewhere")], 1.0)


def test_samples_record_each_job_and_the_tier_and_free_measures_at_the_end(tmp_path):
    s = state(tmp_path, capacity=10_000)
    s.allocate("j", 4000, 0.0)
    d = s.open_dir("hps", "j")
    write(d / "a", 1234)
    rows = s.sample(5.0)
    assert rows[0][:4] == ["j", 5.0, 4000, 1234] and rows[0][4] == os.stat(d / "a").st_blocks * 512
    assert rows[-1][:4] == ["", 5.0, 10_000, 1234]
    write(d / "b", 100)
    s.free("j", 9.0)
    assert s.usage[-1][:4] == ["j", 9.0, 4000, 1334]  # measured at the job's end, before removal
    assert not d.exists()
    assert s.records()["usage"][-1][0] == "j"


def test_staging_copies_are_private_files(tmp_path):
    src = tmp_path / "src"
    write(src / "in.h5", 3000)
    old = os.umask(0o022)
    try:
        n, files = copy_paced([src / "in.h5"], tmp_path / "hps" / "jobs" / "j" / "input", lambda n: 0.0, chunk=1000)
    finally:
        os.umask(old)
    assert n == 3000
    assert os.stat(files[0]).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "hps" / "jobs" / "j" / "input").st_mode & 0o777 == 0o700


def test_a_storage_request_below_the_input_or_output_is_refused_by_name(tmp_path):
    def doc(**job):
        return {"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": "1 GB/s"},
                                              "hps": {"rate": "2 GB/s", "capacity": "100GB"}, "stage_rate": "1 GB/s"},
                "scheduler": "sas",
                "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 50, **job}]}

    with pytest.raises(SpecError, match=r"workload\.jobs\[0\]\.storage: 4e\+09 B cannot hold the job's output of 5e\+09 B"):
        parse_spec(doc(input="1GB", output="5GB", storage="4GB"))
    with pytest.raises(SpecError, match=r"estimate\.storage: 1e\+09 B cannot hold the job's input of 3e\+09 B"):
        parse_spec(doc(input="1GB", storage="2GB", estimate={"input": "3GB", "storage": "1GB"}))
    assert parse_spec(doc(input="1GB", output="5GB", storage=0)).workload.jobs[0].storage == 0  # no HPS asked
    assert parse_spec(doc(input="1GB", output="5GB", storage="5GB")).workload.jobs[0].storage == 5e9

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc(input="1GB", output="5GB", storage="4GB")))
    res = CliRunner().invoke(cli, ["validate", str(path)])
    assert res.exit_code == 2 and "storage" in res.output and "Traceback" not in res.output
