"""One unit grammar (iolab.units) for the batch spec's quantities and the Jacobi app's byte counts."""

from __future__ import annotations

import argparse

import pytest

from iolab.apps.jacobi_args import build_parser, byte_count
from iolab.errors import SpecError
from iolab.specs.load import parse_spec
from iolab.units import parse_duration, parse_rate, parse_size

# What each entry point accepted before the two tables were merged, written out by hand:
# the batch spec's sizes (iolab/specs/batch.py) and the app's --io-volume (apps/jacobi_args.py).
SPEC_SIZES = {
    "7": 7, "7B": 7, "7kB": 7e3, "7MB": 7e6, "7GB": 7e9, "7TB": 7e12, "7PB": 7e15,
    "7k": 7e3, "7M": 7e6, "7G": 7e9, "7T": 7e12, "7P": 7e15,
    "7KiB": 7 * 1024, "7MiB": 7 * 1024**2, "7GiB": 7 * 1024**3, "7TiB": 7 * 1024**4, "7PiB": 7 * 1024**5,
}
APP_SIZES = {
    "3": 3, "3b": 3, "3k": 3000, "3kb": 3000, "3kib": 3072, "3m": 3_000_000, "3mb": 3_000_000,
    "3mib": 3 * 2**20, "3g": 3_000_000_000, "3gb": 3_000_000_000, "3gib": 3 * 2**30,
}
SPEC_DURATIONS = {"90": 90, "90s": 90, "90sec": 90, "2m": 120, "2min": 120, "3h": 10800, "1d": 86400}


@pytest.mark.parametrize("text, value", sorted({**SPEC_SIZES, **APP_SIZES}.items()))
def test_every_size_suffix_either_table_accepted(text, value):
    assert parse_size(text) == value
    assert parse_size(text.upper()) == value and parse_size(f" {text[:1]} {text[1:]} ") == value


@pytest.mark.parametrize("text, value", sorted(SPEC_DURATIONS.items()))
def test_durations(text, value):
    assert parse_duration(text) == value


def test_numbers_and_rates():
    assert parse_size("1.5TB") == 1.5e12 and parse_size(".5GB") == 5e8 and parse_size("2e3MiB") == 2000 * 2**20
    assert parse_rate("1.5 GB/s") == 1.5e9 and parse_rate("10MB") == 1e7
    assert parse_size("5m") == 5e6 and parse_duration("5m") == 300  # the same letter, two tables


@pytest.mark.parametrize("parse, text, message", [
    (parse_size, "12 parsecs", "unknown size unit 'parsecs'"),
    (parse_size, "GB", "not a size"),
    (parse_size, "-5GB", "not a size"),
    (parse_size, "5 G B", "not a size"),
    (parse_rate, "5 GB/h", "not a size"),
    (parse_duration, "5GB", "not a duration"),
    (parse_duration, "1 week", "not a duration"),
])
def test_bad_quantities_say_what_is_wrong(parse, text, message):
    with pytest.raises(ValueError, match=message):
        parse(text)


def _batch(**job) -> dict:
    return {"kind": "batch", "platform": {"nodes": 4, "lps": {"rate": "1 GB/s"},
                                          "hps": {"rate": "15 GB/s", "capacity": "2 TiB"}, "stage_rate": "5GB/s"},
            "scheduler": "sas",
            "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": "2h", "runtime": "90min", **job}]}


def test_the_spec_entry_point():
    e = parse_spec(_batch(input="3kib", output="7P"))
    (j,) = e.workload.jobs
    assert (j.input, j.output, j.walltime, j.runtime) == (3072, 7e15, 7200, 5400)
    assert e.platform.hps.total_capacity == 2 * 2**40 and e.platform.stage_rate == 5e9
    with pytest.raises(SpecError) as err:
        parse_spec(_batch(input="12 parsecs", walltime="1 week"))
    found = dict(err.value.problems)
    assert "unknown size unit 'parsecs'" in found["workload.jobs[0].input"]
    assert "not a duration" in found["workload.jobs[0].walltime"]


def test_the_app_entry_point():
    args = build_parser().parse_args(["--app-id", "a", "--grid", "8", "--io-volume", "7GiB", "--chunk-bytes", "1e6"])
    assert (args.io_volume, args.chunk_bytes) == (7 * 2**30, 1_000_000)
    assert byte_count("7PB") == 7 * 10**15  # a suffix only the spec's table had
    for bad, message in [("12 parsecs", "unknown size unit 'parsecs'"), ("0.5", "not a whole number of bytes"),
                         ("lots", "not a size")]:
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            byte_count(bad)
