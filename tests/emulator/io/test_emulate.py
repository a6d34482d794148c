"""Real runs: MPI apps under mpiexec, arbitrated by the Ray actor, traced like the simulator."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import h5py
import pytest

from iolab.specs.load import parse_spec
from iolab.trace import read_trace

pytestmark = [pytest.mark.mpi, pytest.mark.ray]


def tiny(**emulator):
    return parse_spec({
        "name": "tiny", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 3, "compute": 0.6, "io_volume": 0.5} for a in "AB"],
        "emulator": {"ranks_per_app": 2, "unit_bytes": 1 << 20, "grid": 32, "lease": 20, **emulator},
    })


@pytest.fixture(scope="module")
def session():
    from iolab.emulator.ray_session import RaySession

    s = RaySession.open()
    yield s
    s.close()


def overlaps(trace) -> bool:
    g = sorted(zip(trace.grants["grant"], trace.grants["release"]))
    return any(b[0] < a[1] - 1e-9 for a, b in zip(g, g[1:]))


def test_fifo_run_is_exclusive_and_writes_hdf5_checkpoints(session, tmp_path):
    from iolab.emulator.io.run import run_emulation

    out = tmp_path / "run.h5"
    trace = run_emulation(tiny(), "fifo", out=out, work_dir=tmp_path / "work")
    t = read_trace(out)
    assert t.attrs["runtime"] == "emulator" and t.attrs["complete"] is True
    for key in ("bandwidth", "io_nodes", "nodes_per_io_node", "packed", "packs", "policy", "seed", "spec",
                "unit_bytes", "time_scale", "host", "versions"):
        assert key in t.attrs, key
    me = os.nice(0)  # the actor runs at this process's priority (not Ray's nice 15), the apps 10 below it
    assert t.attrs["nice"] == {"driver": me, "arbiter": me, "apps": min(19, me + 10)}
    assert list(t.jobs["status"]) == ["ok", "ok"]
    assert len(t.grants) == 6 and not overlaps(t)
    assert len(t.phases) == 12
    files = sorted((tmp_path / "work" / "io-node-0").glob("*/ckpt-*/rank-*.h5"))
    assert len(files) == 4  # the latest checkpoint of each app, one file per rank
    for f in files:
        with h5py.File(f, "r") as h:
            assert h["u"].shape[0] > 0 and int(h.attrs["ranks"]) == 2
    # I/O phases last about v / b = 0.5 spec seconds under the cap: never much faster (the cap holds), typically
    # close to it; a loaded 2-core CI machine stretches single phases (1.03 s and 2.44 s seen), so the upper
    # bound is on the median and only a generous one on each phase, well below the 20 s a lost grant would cost
    io = sorted(e - s for k, s, e in zip(t.phases["kind"], t.phases["start"], t.phases["end"]) if k == "write")
    assert io[0] >= 0.45, io
    assert io[len(io) // 2] <= 0.8 and io[-1] <= 5.0, io
    # No time unexplained by the phases (a lost grant would wait out the 20 s lease): under FIFO one app is always
    # computing, writing, or waiting for the other's write, so the run ends within the first phase's start plus
    # all phases back to back plus a small per-phase RPC gap (sim: 4.3 s; 6.15 s seen on a loaded CI machine,
    # where every phase stretches, which is why the bound scales with the measured phases, not the clock)
    busy = float((t.phases["end"] - t.phases["start"]).sum())
    assert trace.jobs["end"].max() <= t.phases["start"].min() + busy + 0.25 * len(t.phases)


@pytest.mark.long
def test_a_real_run_stores_its_calibration_and_it_brings_the_simulation_closer(session, tmp_path):
    """Two volumes (0.5 and 1.5 units): the trace's calibration separates the fixed cost of a transfer from
    the delivered bandwidth, the processes' launch, gaps and exit are really there (> 0), and the nominal
    spec simulated with that calibration ends nearer the real run than without it."""
    from iolab.calibration import calibrated, measure_io
    from iolab.sim.io.run import simulate

    spec = parse_spec({
        "name": "two-volumes", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 3, "compute": 0.6, "io_volume": v}
                 for a, v in (("A", 0.5), ("B", 1.5))],
        "emulator": {"ranks_per_app": 1, "unit_bytes": 1 << 20, "grid": 32, "lease": 20},
    })
    from click.testing import CliRunner

    from iolab.cli import cli

    path, out = tmp_path / "spec.json", tmp_path / "run.h5"
    path.write_text(json.dumps(spec.model_dump(mode="json")))
    r = CliRunner().invoke(cli, ["emulate", str(path), "--out", str(out), "--work-dir", str(tmp_path / "work")])
    assert r.exit_code == 0, r.output
    t = read_trace(out)
    cal = t.attrs["calibration"]
    said = [line for line in r.output.splitlines() if line.startswith("measured beyond the model")]
    assert len(said) == 1 and "fixed per transfer" in said[0] and "gap between phases" in said[0], r.output
    assert cal["level"] == "io" and cal["time_scale"] == spec.emulator.time_scale
    assert cal["wall"] == pytest.approx(measure_io(t)["wall"])  # what the file holds is what the tables say
    fit = cal["fits"]["io"]
    assert fit["n"] == 6 and fit["r2"] >= 0.9, fit  # 6 transfers, alone on the node under FIFO
    assert 0.5 <= cal["delivered"]["io"] <= 1.05  # the token bucket caps it near the spec's 1 unit/s
    assert cal["wall"]["io_phase"] >= 0
    assert cal["wall"]["launch"] > 0 and cal["wall"]["gap"] > 0 and cal["wall"]["exit"] > 0
    real = float(t.jobs["end"].max() - t.jobs["start"].min())
    plain = float(simulate(spec, policy="fifo").jobs["end"].max())
    with_cal = float(simulate(calibrated(spec, cal), policy="fifo").jobs["end"].max())
    assert abs(with_cal - real) < abs(plain - real), (plain, with_cal, real)


def test_shared_run_overlaps(session, tmp_path):
    from iolab.emulator.io.run import run_emulation

    trace = run_emulation(tiny(), "shared", work_dir=tmp_path / "work")
    assert list(trace.jobs["status"]) == ["ok", "ok"]
    assert overlaps(trace)


def _kill_a_writer(root: Path, app: str, stop: threading.Event, killed: list) -> None:
    """SIGKILL rank 1 of ``app`` while it writes a checkpoint (its temp file names its pid)."""
    while not stop.is_set():
        for tmp in root.glob(f"io-node-0/{app}/ckpt-*/.rank-00001.h5.tmp*"):
            pid = int(tmp.name.rsplit("tmp", 1)[1])
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def test_a_rank_killed_during_io_fails_only_its_app(session, tmp_path):
    from iolab.emulator.io.run import run_emulation

    spec = parse_spec({
        "name": "crash", "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": "A", "nodes": 2, "iterations": 3, "compute": 0.5, "io_volume": 0.5},
                 {"id": "B", "nodes": 2, "iterations": 2, "compute": 0.3, "io_volume": 1.5}],
        "emulator": {"ranks_per_app": 2, "unit_bytes": 1 << 20, "grid": 32, "lease": 20},
    })
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_a_writer, args=(tmp_path / "work", "B", stop, killed), daemon=True)
    watcher.start()
    t0 = time.time()
    try:
        trace = run_emulation(spec, "fifo", work_dir=tmp_path / "work")
    finally:
        stop.set()
    assert killed, "never saw B write"
    assert time.time() - t0 < 90
    status = dict(zip(trace.jobs["id"], trace.jobs["status"]))
    assert status == {"A": "ok", "B": "failed"}
    assert "B" in trace.attrs["failures"]
    assert len([j for j in trace.grants["job"] if j == "A"]) == 3
    assert not overlaps(trace)


@pytest.mark.long
def test_validate_prints_errors_and_json(session, tmp_path):
    from click.testing import CliRunner

    from iolab.cli import cli

    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(tiny().model_dump(mode="json")))
    r = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo,lowest-id", "--json",
                                 "--work-dir", str(tmp_path / "w"), "--figure", str(tmp_path / "fig.png")])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert set(report) >= {"policies", "summary", "ranking"}
    for p in ("fifo", "lowest-id"):
        c = report["policies"][p]
        assert set(c) >= {"bandwidth_measured", "makespan", "max_stretch", "apps", "stretch_error_max",
                          "stretch_error_geomean", "error_max", "error_geomean"}
        assert set(c["apps"]) == {"A", "B"} and c["makespan"]["error"] < 0.5
    assert set(report["ranking"]["makespan"]) >= {"emulator", "simulator", "same"}
    for p in ("fifo", "lowest-id"):  # each policy simulated with its own run's costs, stated in the report
        c = report["policies"][p]
        trace = read_trace(tmp_path / "w" / f"{p}.h5")
        assert c["calibration"]["wall"] == pytest.approx(trace.attrs["calibration"]["wall"])
        assert c["simulated_with"]["overheads"]["gap"] > 0  # the apps' real gaps between phases
        assert c["bandwidth_measured"] == c["simulated_with"]["bandwidth"]
    assert (tmp_path / "fig.png").stat().st_size > 0
    # the default 20 jittered simulations, durations resampled from the real run's phases
    for p in ("fifo", "lowest-id"):
        sp = report["policies"][p]["spread"]
        assert sp["seeds"] == 20 and sp["jitter"]["law"] == "resample"
        assert sp["jitter"]["phases"] == {"compute": 6, "io": 6}  # 2 apps x 3 iterations
        m = sp["makespan"]
        assert m["min"] <= m["median"] <= m["max"]
        assert m["emulator"] == report["policies"][p]["makespan"]["emulator"]
    assert report["spread"]["values"] == 2 * 3

    # the kept traces again, without emulating: same real numbers, same spread (deterministic)
    again = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo,lowest-id", "--json",
                                     "--traces", str(tmp_path / "w")])
    assert again.exit_code == 0, again.output
    again = json.loads(again.output)
    for p in ("fifo", "lowest-id"):
        assert again["policies"][p]["wall_seconds"] == report["policies"][p]["wall_seconds"]
        assert again["policies"][p]["spread"] == report["policies"][p]["spread"]
    # one run's calibration for every policy (--calibration): lowest-id simulated with fifo's costs
    one = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo,lowest-id", "--json", "--seeds", "0",
                                   "--traces", str(tmp_path / "w"), "--calibration", str(tmp_path / "w" / "fifo.h5")])
    assert one.exit_code == 0, one.output
    one = json.loads(one.output)["policies"]
    assert one["lowest-id"]["simulated_with"] == one["fifo"]["simulated_with"] == report["policies"]["fifo"]["simulated_with"]
    assert one["fifo"]["makespan"] == report["policies"]["fifo"]["makespan"]  # its own calibration: the same

    # traces of another spec are refused, by field, before anything runs
    other = tmp_path / "other.json"
    other.write_text(json.dumps(tiny().model_dump(mode="json") | {"apps": [
        {"id": a, "nodes": 2, "iterations": 3, "compute": 0.7, "io_volume": 0.5} for a in "AB"]}))
    bad = CliRunner().invoke(cli, ["validate", str(other), "--policies", "fifo", "--traces", str(tmp_path / "w")])
    assert bad.exit_code == 2 and "fifo.h5: spec.apps differs" in bad.output
    missing = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "stretch", "--traces",
                                       str(tmp_path / "w")])
    assert missing.exit_code == 2 and "stretch.h5: no such trace" in missing.output


@pytest.mark.long
def test_validate_repeats_compares_the_real_runs_as_a_distribution(session, tmp_path):
    from click.testing import CliRunner

    from iolab.cli import cli

    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(tiny().model_dump(mode="json")))
    work = tmp_path / "w"
    r = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "2", "--seeds", "8",
                                 "--json", "--work-dir", str(work)])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    d = report["policies"]["fifo"]["distribution"]
    assert d["repeats"] == 2 and d["seeds"] == 8 and d["values"] == 3  # A, B and the makespan
    runs = [read_trace(work / "fifo.h5"), read_trace(work / "fifo-r1.h5")]  # both real runs are kept
    assert all(t.attrs["runtime"] == "emulator" for t in runs)
    assert sorted(d["makespan"]["real"]) == pytest.approx(sorted(float(t.jobs["end"].max()) for t in runs))
    for v in [*d["apps"].values(), d["makespan"]]:
        assert v["n_real"] == 2 and v["n_sim"] == 8 and v["verdict"] in ("noise", "model error")
        assert v["band"][0] <= v["sim_median"] <= v["band"][1]
        assert v["verdict"] == ("noise" if v["band"][0] <= v["real_median"] <= v["band"][1] else "model error")
    assert report["distribution"]["values"] == 3
    assert report["distribution"]["noise"] + report["distribution"]["model_errors"] == 3
    # the kept runs again, without emulating: the same distribution
    page = tmp_path / "report"
    again = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "2", "--seeds", "8",
                                     "--json", "--traces", str(work), "--report", str(page)])
    assert again.exit_code == 0 and json.loads(again.output)["policies"]["fifo"]["distribution"] == d
    md = (page / "report.md").read_text()
    assert "## I/O level: per policy" in md and "### fifo" in md and "2 real runs against 8 simulations" in md
    me = os.nice(0)
    assert f"Priorities (nice): apps {min(19, me + 10)}, arbiter {me}, driver {me}." in md  # what the runs ran at
    assert (page / "scatter.png").stat().st_size > 0 and json.loads((page / "report.json").read_text())["spec"]
    # a third repeat was never run: refused, naming the file
    more = CliRunner().invoke(cli, ["validate", str(spec), "--policies", "fifo", "--repeats", "3", "--traces",
                                    str(work)])
    assert more.exit_code == 2 and "fifo-r2.h5: no such trace" in more.output
    nos = CliRunner().invoke(cli, ["validate", str(spec), "--repeats", "2", "--seeds", "0"])
    assert nos.exit_code == 2 and "--seeds" in nos.output
