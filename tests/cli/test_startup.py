"""What ``iolab simulate BATCH.json`` loads at its start: the batch level's models and the batch simulator, not
the I/O experiment's models, the calibration nor the emulator's network modules (docs/results.md, the KTH-SP2
start-up).  And the names that moved behind a lazy import still answer where they did."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

# Run the command in a fresh interpreter and list the modules it loaded (a test process has them all already).
CHILD = """
import gc, json, sys
OUTSIDE = {"numpy.ma", "h5py"}  # outside packages the listing reports too
import iolab.runners as runners
from iolab.cli import main

resolve = runners._resolve
def watched(where):  # the collector as the run finds it: on, the start-up's objects frozen
    fn = resolve(where)
    if not where.endswith(("run:simulate_batch", "run:simulate")):
        return fn
    def run(*args, **kwargs):
        print("run: collector", gc.isenabled(), "frozen", gc.get_freeze_count() > 0, "young",
              gc.get_threshold()[0], file=sys.stderr)
        return fn(*args, **kwargs)
    return run
runners._resolve = watched
sys.argv = ["iolab", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print("exit: collector", gc.isenabled(), "young", gc.get_threshold()[0], file=sys.stderr)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("iolab") or m in OUTSIDE)), file=sys.stderr)
sys.exit(code)
"""

NOT_FOR_A_BATCH_RUN = ("iolab.specs.io", "iolab.specs.emulation", "iolab.calibration", "iolab.emulator.netns",
                       "iolab.emulator.launchers", "iolab.emulator.ray_session", "iolab.sim.io",
                       "iolab.sim.batch.load_controller", "iolab.workloads.feitelson", "iolab.workloads.theta",
                       # built-in policies on an HPS without disks: no user policy's guard, no disk allocator,
                       # no I/O policy
                       "iolab.middleware.policies.guard", "iolab.middleware.policies.placement",
                       "iolab.middleware.policies.io_guard", "iolab.middleware.policies.controller",
                       # the I/O level's metrics (iolab/metrics/__init__.py); no trace file is read or written
                       # (h5py); the SWF reader's columns need no masked arrays (numpy.ma)
                       "iolab.metrics.io", "h5py", "numpy.ma")


def loaded_by(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=300)
    return r, set(json.loads(r.stderr.strip().splitlines()[-1]))


def batch_spec(tmp_path, workload) -> str:
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"kind": "batch", "platform": {"nodes": 4, "lps": {"rate": "1GB/s"},
                                                           "hps": {"rate": "2GB/s", "capacity": "10GB"},
                                                           "stage_rate": "1GB/s"},
                             "scheduler": "easy", "workload": workload}))
    return str(p)


def test_a_batch_run_loads_neither_the_io_level_nor_the_emulator(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxNodes: 4\n" + "".join(f"{i} {10 * i} 1 100 4 -1 -1 4 200 -1 1 3 1 -1 1 -1 -1 -1\n"
                                                 for i in range(1, 21)))
    r, mods = loaded_by("simulate", batch_spec(tmp_path, {"source": "swf", "path": str(swf)}), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["jobs"] == 20
    assert {"iolab.specs.batch", "iolab.sim.batch.run"} <= mods  # the listing is of this run
    # the collector, paused by main() through the start-up, is on for the run, its youngest generation
    # passed over less often, and as Python sets it after the run
    assert "run: collector True frozen True young 10000" in r.stderr, r.stderr
    assert f"exit: collector True young {gc.get_threshold()[0]}" in r.stderr, r.stderr
    assert gc.get_threshold()[0] != 10000
    assert not mods & set(NOT_FOR_A_BATCH_RUN), sorted(mods & set(NOT_FOR_A_BATCH_RUN))


def test_an_io_run_loads_the_io_models_and_not_the_batch_ones(tmp_path):
    p = tmp_path / "io.json"
    p.write_text(json.dumps({"platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 1.0},
                             "policy": "fifo", "apps": [{"id": "A", "nodes": 4, "release": 0, "iterations": 2,
                                                         "compute": 10, "io_volume": 5}]}))
    r, mods = loaded_by("simulate", str(p), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "iolab.specs.io" in mods and "iolab.specs.batch" not in mods
    assert "run: collector True frozen True" in r.stderr, r.stderr


def test_a_bad_batch_spec_is_still_refused_naming_the_field(tmp_path):
    r, _ = loaded_by("simulate", batch_spec(tmp_path, {"source": "feitelson", "jobs": -3}), "--json")
    assert r.returncode == 2 and "workload" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_the_lazy_names_answer_where_they_did():
    import iolab.specs
    from iolab.cli import network
    from iolab.emulator import netns
    from iolab.specs import io, io_policies, load

    for name in ("App", "IOExperiment", "Mapping", "Phase", "Platform"):
        assert getattr(iolab.specs, name) is getattr(io, name)
    with pytest.raises(AttributeError):
        iolab.specs.NoSuchModel  # noqa: B018
    assert io.IO_POLICIES is io_policies.IO_POLICIES and io.normalise_policy is io_policies.normalise_policy
    assert set(load.KINDS) == {"io", "batch"} and "io" in load.KINDS and "campaign" not in load.KINDS
    assert load.KINDS["io"] is io.IOExperiment and {**load.KINDS}["batch"].__name__ == "BatchExperiment"
    assert network.NETNS_MARKER == netns.MARKER  # read by the command line without importing netns
    import iolab.workloads
    from iolab.workloads import feitelson, job_columns, theta

    for name, module in (("feitelson_jobs", feitelson), ("feitelson_columns", feitelson), ("with_io", feitelson),
                         ("JobColumns", job_columns), ("jobs_from_columns", job_columns), ("ThetaTrace", theta),
                         ("theta_jobs", theta), ("theta_trace", theta)):
        assert getattr(iolab.workloads, name) is getattr(module, name)
    with pytest.raises(AttributeError):
        iolab.workloads.no_such_reader  # noqa: B018
    import iolab.metrics
    from iolab.metrics import io as io_level

    for name in ("AppMetrics", "IOMetrics", "geometric_mean", "io_makespan", "io_metrics", "node_times",
                 "pack_max_slowdowns", "pack_spans", "sequential_makespan", "slowdown"):
        assert getattr(iolab.metrics, name) is getattr(io_level, name)
    with pytest.raises(AttributeError):
        iolab.metrics.no_such_metric  # noqa: B018


def test_a_command_that_does_not_keep_the_collector_paused_runs_with_it_on():
    r = subprocess.run([sys.executable, "-c", CHILD, "schema", "batch"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "BatchExperiment", r.stderr[-2000:]
    assert "exit: collector True" in r.stderr, r.stderr


def test_main_in_process_leaves_the_collector_on_after_a_command_that_stopped_early(monkeypatch, tmp_path):
    """main() pauses the collector for the start-up; a command that stops before its work (bad input, exit 2)
    leaves it as the caller had it."""
    import gc

    from iolab.cli import main

    monkeypatch.setattr(sys, "argv", ["iolab", "simulate", batch_spec(tmp_path, {"source": "feitelson", "jobs": -3})])
    assert gc.isenabled()
    with pytest.raises(SystemExit) as ex:
        main()
    assert ex.value.code == 2 and gc.isenabled()
