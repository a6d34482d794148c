"""The table of runners (iolab/runners.py): every level has a runner in every runtime, and the
one a command picks is the level's own."""

from __future__ import annotations

import pytest

from iolab.emulator.batch.run import run_batch_emulation
from iolab.emulator.io.run import run_emulation
from iolab.metrics.batch_trace import trace_batch_metrics
from iolab.metrics.io import io_metrics
from iolab.runners import LEVELS, RUNNERS, RUNTIMES, level_of, runner, runner_for
from iolab.sim.batch.run import simulate_batch, simulated_makespan
from iolab.sim.io.run import simulate
from iolab.specs.load import parse_spec

from small_runs import small_batch, small_io


def test_every_level_has_a_runner_in_every_runtime():
    assert set(RUNNERS) == {(lvl, rt) for lvl in LEVELS for rt in RUNTIMES}
    expected = {("io", "sim"): simulate, ("io", "real"): run_emulation, ("batch", "sim"): simulate_batch,
                ("batch", "real"): run_batch_emulation}
    for key, fn in expected.items():
        r = RUNNERS[key]
        run = getattr(r.run, "func", r.run)  # the batch real runner is given the simulated makespan
        assert (r.level, r.runtime, run) == (*key, fn)
        assert r.metrics is (io_metrics if key[0] == "io" else trace_batch_metrics)
    assert RUNNERS["batch", "real"].run.keywords == {"makespan_of": simulated_makespan}


def test_a_spec_s_level_picks_its_runner_and_runs_as_the_direct_call():
    io, batch = parse_spec(small_io("t")), parse_spec(small_batch("b"))
    assert (level_of(io), level_of(batch)) == ("io", "batch")
    a = runner_for(io, "sim").run(io)
    b = simulate(io)
    assert a.jobs["end"].tolist() == b.jobs["end"].tolist() and a.attrs["runtime"] == "sim-event"
    t = runner_for(batch, "sim").run(batch)
    assert t.attrs["runtime"] == "sim-batch"
    assert runner("batch", "sim").metrics(t).makespan == trace_batch_metrics(simulate_batch(batch)).makespan


def test_an_unknown_level_or_runtime_is_named():
    with pytest.raises(ValueError, match="level 'io' in runtime 'cloud'"):
        runner("io", "cloud")
    with pytest.raises(ValueError, match="level 'storage'"):
        runner("storage", "sim")


def test_every_runner_s_trace_names_its_run_the_same_way():
    import platform

    import iolab
    from iolab.trace.provenance import provenance

    io, batch = parse_spec(small_io("t", seed=5)), parse_spec(small_batch("b"))
    for spec, trace in ((io, simulate(io)), (batch, simulate_batch(batch))):
        p = provenance(spec, trace.attrs["runtime"])
        assert set(p) == {"runtime", "seed", "spec", "iolab_version", "python", "host"}
        for k in ("runtime", "seed", "iolab_version", "python", "host"):
            assert trace.attrs[k] == p[k]
        assert trace.attrs["spec"] == spec.model_dump(mode="json")
    assert simulate(io).attrs["seed"] == 5
    real = provenance(io, "emulator", real=True)["versions"]  # a real run's also names its packages
    assert real["iolab"] == iolab.__version__ and real["python"] == platform.python_version()
    assert {"numpy", "pydantic", "h5py"} <= set(real)


def test_the_simulate_command_imports_only_the_runner_it_uses():
    """The table names its runners by where they live: ``iolab simulate`` of a batch spec loads the batch
    simulator, not the real runtimes, the I/O simulator or the validations (their imports were a third
    of the command's start-up)."""
    import subprocess
    import sys

    code = ("import sys, iolab.cli.simulate\n"
            "from iolab.runners import runner\n"
            "before = set(sys.modules)\n"
            "runner('batch', 'sim').run, runner('batch', 'sim').metrics\n"
            "print(' '.join(sorted(before)))\n"
            "print(' '.join(sorted(set(sys.modules) - before)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    before, after = (set(line.split()) for line in out.splitlines())
    others = {"iolab.emulator.batch.run", "iolab.emulator.io.run", "iolab.sim.io.run", "iolab.validation.io",
              "iolab.validation.batch"}
    assert not (before | after) & others
    assert {"iolab.sim.batch.run", "iolab.metrics.batch_trace"} <= before | after


def test_the_simulate_command_pauses_the_collector_only_while_it_runs(tmp_path, monkeypatch):
    """``iolab simulate`` leaves its start-up objects out of the collector's passes while the run lasts
    (gc.freeze) and gives them back after: nothing stays frozen in the process."""
    import gc
    import json

    from click.testing import CliRunner

    import iolab.sim.batch.run as batch_run
    from iolab.cli import cli

    frozen = []
    real = batch_run.simulate_batch

    def watched(*args, **kwargs):  # the table resolves the runner by name: this one runs
        frozen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(batch_run, "simulate_batch", watched)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(small_batch("b")))
    before = gc.get_freeze_count()
    r = CliRunner().invoke(cli, ["simulate", str(path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["jobs"] == 2
    assert len(frozen) == 1 and frozen[0] > before  # the start-up's objects were out of the passes
    assert gc.get_freeze_count() == before  # and are back
