"""A study's campaign does not grow with the square of its size (each run holds its own seed and levers, not
the whole study's), and a Ray address that cannot be joined is refused at once instead of retried for
minutes, deaf to SIGTERM."""

from __future__ import annotations

import json
import socket
import time

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.emulator.ray_session import unreachable
from iolab.studies.combined import CombinedSize, campaign_runs, params_of, size_of, spec_of


def test_each_combined_run_holds_its_own_seed_and_levers_only():
    size = CombinedSize(seeds=tuple(range(1000)), jobs=2)
    start = time.perf_counter()
    runs = campaign_runs(params_of(size))
    assert time.perf_counter() - start < 5
    levers = len(size.policies) * len(size.tiers) * len(size.allocations) * len(size.controllers)
    assert len(runs) == levers * 1000
    biggest = max(len(json.dumps(r)) for r in runs)
    assert biggest < 2000, biggest  # it was the 1 000 seeds of the study in every run: ~12 kB each
    for r in (runs[0], runs[12345], runs[-1]):
        own = size_of(r["size"])
        assert own.seeds == (r["seed"],) and own.policies == (r["policy"],)
        # the run's spec is the one the whole study's size gives (the independent reference)
        args = (r["policy"], r["tier"], r["allocation"], r["controller"], r["seed"])
        assert spec_of(own, *args) == spec_of(size, *args)


def test_the_campaign_file_of_many_workloads_stays_small(tmp_path):
    out = tmp_path / "c.json"
    r = CliRunner().invoke(cli, ["study", "combined", "--workloads", "300", "--jobs-per-workload", "2",
                                 "--campaign", str(out)])
    assert r.exit_code == 0, r.output
    assert out.stat().st_size < 100_000  # the campaign holds the study's parameters, not its runs


def test_a_closed_port_is_refused_at_once(tmp_path):
    start = time.perf_counter()
    r = CliRunner().invoke(cli, ["study", "lackner", "--quick", "--address", "127.0.0.1:1",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "--address 127.0.0.1:1: cannot join Ray: nothing answers" in r.output, r.output
    assert time.perf_counter() - start < 10 and "Traceback" not in r.output


def test_a_server_that_is_not_ray_is_refused_within_the_timeout():
    with socket.socket() as s:  # accepts connections and never says a word
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        port = s.getsockname()[1]
        start = time.perf_counter()
        why = unreachable(f"127.0.0.1:{port}", timeout=0.5)
        assert "not as a Ray head" in why and time.perf_counter() - start < 3


@pytest.mark.parametrize("address,words", [("bogus", "not host:port"), ("host:99999", "not host:port"),
                                           ("ray://127.0.0.1:1", "nothing answers"), ("auto", "")])
def test_addresses_are_read_before_any_connection(address, words):
    why = unreachable(address)
    assert (words in why) if words else why == ""
