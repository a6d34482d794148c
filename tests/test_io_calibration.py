"""The calibration of an I/O run: measured from a trace, read back, applied to any I/O spec.

Known answers come from the simulator itself: a run simulated with a bandwidth and overheads is a
trace whose costs are exactly those, so measuring it must give them back, and simulating the
nominal spec with what was measured must give the same run.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from iolab.calibration import calibrated, io_overheads, measure_io, median_calibration, read_calibration
from iolab.cli import cli as main
from iolab.errors import TraceError
from iolab.sim.io.run import simulate
from iolab.specs import parse_spec
from iolab.trace import TraceBuilder, write_trace

COSTS = {"launch": 0.3, "gap": 0.02, "exit": 0.1, "io_phase": 0.05}


def io_spec(bandwidth=1.0, time_scale=0.5, policy="fifo", volumes=(0.5, 1.0, 2.0), **overheads):
    return parse_spec({
        "name": "cal", "policy": policy,
        "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": bandwidth, "overheads": overheads},
        "apps": [{"id": f"a{i}", "nodes": 2, "release": 0.1 * i, "iterations": 3, "compute": 1.0 + i,
                  "io_volume": v} for i, v in enumerate(volumes)],
        "emulator": {"time_scale": time_scale},
    })


def as_real_run(trace, nominal):
    """The simulated trace as a real run of ``nominal`` would record it (its spec, its runtime)."""
    trace.attrs.update(runtime="emulator", spec=nominal.model_dump(mode="json"),
                       time_scale=nominal.emulator.time_scale)
    return trace


def test_a_simulated_run_gives_back_its_costs_and_is_simulated_again_exactly():
    nominal = io_spec()
    true = io_spec(bandwidth=0.8, **COSTS)
    trace = as_real_run(simulate(true), nominal)
    cal = measure_io(trace)
    assert cal["level"] == "io" and cal["delivered"]["io"] == pytest.approx(0.8, rel=1e-9)
    assert cal["fits"]["io"]["r2"] == pytest.approx(1.0)
    for key, value in COSTS.items():  # wall seconds: trace seconds x the run's time scale
        assert cal["wall"][key] == pytest.approx(value * 0.5, rel=1e-9, abs=1e-12), key
    again = simulate(calibrated(nominal, cal))
    assert list(again.jobs["end"]) == pytest.approx(list(trace.jobs["end"]), rel=1e-12)
    assert list(again.grants["grant"]) == pytest.approx(list(trace.grants["grant"]), rel=1e-12)


def test_another_spec_gets_the_costs_in_its_own_seconds_and_units():
    cal = measure_io(as_real_run(simulate(io_spec(bandwidth=0.8, **COSTS)), io_spec()))
    other = io_spec(bandwidth=4.0, time_scale=0.25)  # half the wall seconds per spec second
    bandwidth, over = io_overheads(cal, other)
    assert bandwidth == pytest.approx(0.8 * 4.0)  # the delivered share of its own bandwidth
    assert over == pytest.approx({k: 2 * v for k, v in COSTS.items()})
    c = calibrated(other, cal).platform
    assert c.bandwidth == pytest.approx(3.2) and c.overheads.gap == pytest.approx(0.04)


def test_one_volume_cannot_separate_the_fixed_cost_from_the_bandwidth():
    """Every transfer the same size: no line, the spec's bandwidth, the rest of each hold is fixed."""
    nominal = io_spec(volumes=(1.0, 1.0))
    cal = measure_io(as_real_run(simulate(io_spec(bandwidth=0.8, volumes=(1.0, 1.0))), nominal))
    assert math.isnan(cal["delivered"]["io"]) and cal["fits"]["io"]["why"] == "too few phases or sizes too alike"
    assert cal["wall"]["io_phase"] == pytest.approx((1 / 0.8 - 1.0) * 0.5)
    bandwidth, over = io_overheads(cal, nominal)
    assert bandwidth == 1.0 and over["io_phase"] == pytest.approx(0.25)
    # and the simulation still holds the I/O node as long as the run did
    again = simulate(calibrated(nominal, cal))
    assert list(again.jobs["end"]) == pytest.approx(list(simulate(io_spec(bandwidth=0.8, volumes=(1.0, 1.0))).jobs["end"]))


def test_only_transfers_alone_on_their_io_node_are_fitted():
    """Under ``shared`` transfers overlap: a hold is not a transfer's cost, so those are left out."""
    nominal = io_spec(policy="shared")
    shared = as_real_run(simulate(io_spec(policy="shared", bandwidth=0.8, **COSTS)), nominal)
    g = sorted(zip(shared.grants["grant"], shared.grants["release"]))
    overlapping = sum(b[0] < a[1] - 1e-9 for a, b in zip(g, g[1:]))
    assert overlapping > 0
    cal = measure_io(shared)
    assert cal["samples"]["io_phase"] <= len(g) - overlapping
    for key in ("launch", "gap", "exit"):  # the apps' own delays are still there
        assert cal["wall"][key] == pytest.approx(COSTS[key] * 0.5)


def test_a_transfer_inside_an_earlier_longer_one_is_not_alone():
    """Three transfers on one node: a [0, 10), b [1, 2), c [5, 6): b and c overlap a, so none is alone
    (c's previous transfer, b, ended before it began: the longest earlier hold is what counts)."""
    tb = TraceBuilder()
    for app, (g, r) in {"a": (0.0, 10.0), "b": (1.0, 2.0), "c": (5.0, 6.0), "d": (11.0, 12.5)}.items():
        tb.add_job(id=app, status="ok", start=g - 0.1, end=r + 0.1, release=0.0, rank=0, nodes=1)
        tb.add_phase(job=app, index=0, kind="write", start=g, end=r, volume=1.0, io_node=0)
        tb.add_grant(job=app, phase=0, io_node=0, request=g, grant=g, release=r)
    t = tb.build(runtime="emulator", spec={"platform": {"bandwidth": 1.0}}, time_scale=1.0)
    cal = measure_io(t)
    assert cal["samples"]["io_phase"] == 1 and cal["wall"]["io_phase"] == pytest.approx(0.5)  # d only
    assert cal["wall"]["launch"] == pytest.approx(0.1) and cal["wall"]["exit"] == pytest.approx(0.1)


def test_what_a_run_could_not_measure_keeps_the_specs_value():
    hand = io_spec(io_phase=0.2, gap=0.01)
    cal = {"level": "io", "wall": {"io_phase": math.nan, "gap": 0.05, "launch": math.nan, "exit": 0.0},
           "delivered": {"io": math.nan}}
    bandwidth, over = io_overheads(cal, hand)
    assert bandwidth == hand.platform.bandwidth
    assert over == pytest.approx({"io_phase": 0.2, "gap": 0.05 / 0.5, "launch": 0.0, "exit": 0.0})


def test_medians_over_runs():
    runs = [measure_io(as_real_run(simulate(io_spec(bandwidth=b, **{**COSTS, "gap": g})), io_spec()))
            for b, g in ((0.8, 0.02), (0.9, 0.04), (0.7, 0.03))]
    med = median_calibration(runs)
    assert med["delivered"]["io"] == pytest.approx(0.8) and med["wall"]["gap"] == pytest.approx(0.03 * 0.5)
    assert med["runs"] == 3


def test_read_back_from_files_and_refused_across_levels(tmp_path):
    nominal = io_spec()
    real = as_real_run(simulate(io_spec(bandwidth=0.8, **COSTS)), nominal)
    older = tmp_path / "older.h5"  # a real run's trace from before the emulator stored its record
    write_trace(real, older)
    assert read_calibration(older)["wall"] == pytest.approx(measure_io(real)["wall"])
    stored = tmp_path / "stored.h5"
    real.attrs["calibration"] = {**measure_io(real), "wall": {**measure_io(real)["wall"], "gap": 0.5}}
    write_trace(real, stored)
    assert read_calibration(stored)["wall"]["gap"] == 0.5  # the stored record wins
    sim = tmp_path / "sim.h5"
    write_trace(simulate(nominal), sim)
    with pytest.raises(TraceError, match="no calibration"):
        read_calibration(sim)
    batch = parse_spec({"kind": "batch", "platform": {"nodes": 2, "lps": {"rate": "1GB/s"},
                                                       "hps": {"rate": "10GB/s", "capacity": "10GB"},
                                                       "stage_rate": "5GB/s"},
                        "scheduler": "fcfs", "workload": [{"id": "j", "submit": 0, "nodes": 1, "walltime": 10,
                                                           "runtime": 5}]})
    with pytest.raises(TypeError, match="applies to io specs, not to a batch spec"):
        calibrated(batch, read_calibration(stored))


def test_simulate_cli_applies_an_io_calibration(tmp_path):
    nominal = io_spec()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(nominal.model_dump(mode="json")))
    real = tmp_path / "real.h5"
    write_trace(as_real_run(simulate(io_spec(bandwidth=0.8, **COSTS)), nominal), real)
    plain = CliRunner().invoke(main, ["simulate", str(path), "--json"])
    cal = CliRunner().invoke(main, ["simulate", str(path), "--json", "--calibration", str(real)])
    assert plain.exit_code == 0 and cal.exit_code == 0, cal.output
    got, want = json.loads(cal.output)["makespan"], float(simulate(io_spec(bandwidth=0.8, **COSTS)).jobs["end"].max())
    assert got == pytest.approx(want) and got > json.loads(plain.output)["makespan"]
    said = CliRunner().invoke(main, ["simulate", str(path), "--calibration", str(real)])
    assert "calibration: bandwidth 0.8 units/s (0.8 of the spec's), 0.05 s fixed per transfer" in said.output
    sim = tmp_path / "sim.h5"
    write_trace(simulate(nominal), sim)
    bad = CliRunner().invoke(main, ["simulate", str(path), "--calibration", str(sim)])
    assert bad.exit_code == 2 and "sim.h5: no calibration in this trace" in bad.output
    missing = CliRunner().invoke(main, ["simulate", str(path), "--calibration", str(tmp_path / "none.h5")])
    assert missing.exit_code == 2 and "none.h5" in missing.output and "Traceback" not in missing.output
