"""``--strict`` on the command line: a run that breaks a rule of the model stops with the rule,
the time and the subject, exit 1 (a failed run, not bad input); without it the same run goes through."""

from __future__ import annotations

import sys

import pytest

import iolab.middleware.policies.io_kernel as io_kernel
from iolab.cli import main

from io_fakes import GrantsTwice
from shared_data import REPO

TABLE1 = str(REPO / "examples" / "carretero-table1.yaml")


def run_main(monkeypatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["iolab", *args])
    with pytest.raises(SystemExit) as ex:
        main()
    return ex.value.code or 0


@pytest.fixture
def broken_arbiter(monkeypatch):
    """Every I/O node of the fixed-step engine hands a busy node to a second app too (the event
    engine's list-policy loop chooses from the arbiter's queue, not the arbiter: its broken
    queue is caught in tests/sim/io/test_strict.py)."""
    monkeypatch.setattr(io_kernel, "IONodeArbiter", GrantsTwice)  # the I/O kernel's arbiters
    monkeypatch.delenv("IOLAB_STRICT", raising=False)  # only the flag may switch strict mode on


def test_strict_stops_a_broken_run_naming_the_rule(monkeypatch, capsys, broken_arbiter):
    code = run_main(monkeypatch, "simulate", TABLE1, "--policy", "fifo", "--mode", "step", "--strict")
    err = capsys.readouterr().err
    assert code == 1
    assert "invariant 'exclusive-io' violated" in err and "I/O node 0" in err
    assert "Traceback" not in err


def test_without_strict_the_same_broken_run_goes_through(monkeypatch, capsys, broken_arbiter):
    code = run_main(monkeypatch, "simulate", TABLE1, "--policy", "fifo", "--mode", "step", "--json")
    assert code == 0
    assert '"makespan"' in capsys.readouterr().out


@pytest.mark.parametrize("command", ["simulate", "emulate", "validate", "sweep"])
def test_every_running_command_offers_strict(monkeypatch, capsys, command):
    assert run_main(monkeypatch, command, "--help") == 0
    assert "--strict" in capsys.readouterr().out
