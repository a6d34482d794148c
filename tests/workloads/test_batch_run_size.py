"""A batch run is sized from its spec and jobs before it runs: each rate, interval and arrival field that would
make it run for hours, overflow its clock or fill the memory is refused with exit 2, naming the field; the
estimate is checked against what a run really does."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.errors import SpecError
from iolab.sim.batch.run import run_batch
from iolab.specs import parse_spec
from iolab.workloads import load_workload
from iolab.workloads.run_size import batch_run_size, check_batch_run

PLATFORM = {"nodes": 16, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "2048GB"},
            "stage_rate": "5GB/s"}
JOBS = [{"id": f"j{i}", "submit": 10 * i, "nodes": 2, "walltime": 5000, "runtime": 3000, "input": "20GB",
         "output": "10GB", "data": "40GB"} for i in range(6)]


def spec(**changes):
    d = {"kind": "batch", "scheduler": "sas", "platform": json.loads(json.dumps(PLATFORM)),
         "workload": {"source": "inline", "jobs": JOBS}}
    for path, value in changes.items():
        node = d
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return d


def refused(d, **kw) -> tuple[str, str]:
    s = parse_spec(d)
    start = time.perf_counter()
    with pytest.raises(SpecError) as err:
        check_batch_run(s, load_workload(s), "s.yaml", **kw)
    assert time.perf_counter() - start < 2.0  # sized, not run
    ((where, reason),) = err.value.problems
    return where, reason


FEITELSON = {"source": "feitelson", "jobs": 20}  # volumes drawn as shares of the runtime at R_lps


@pytest.mark.parametrize("field,value,named", [
    ("platform__hps__rate", 1e-290, "platform.hps.rate"),
    ("platform__stage_rate", 1e-295, "platform.stage_rate"),
    ("platform__overheads__delivered__lps", 1e-300, "platform.overheads.delivered.lps"),
    ("platform__overheads__delivered__hps", 1e-300, "platform.overheads.delivered.hps"),
    ("platform__overheads__delivered__stage", 1e-300, "platform.overheads.delivered.stage"),
])
def test_a_rate_too_low_for_the_clock_is_refused_naming_it(field, value, named):
    where, reason = refused(spec(workload=FEITELSON, **{field: value}))
    assert where == named and "past the 1e+15 s" in reason, reason


def test_an_inline_workloads_tier_rate_is_refused_by_the_spec_itself():
    with pytest.raises(SpecError) as err:
        parse_spec(spec(platform__lps__rate=1e-300))
    assert err.value.problems[0][0].startswith("workload.jobs[0].")


def test_an_io_node_rate_too_low_is_refused():
    d = spec(workload=FEITELSON, platform__io_nodes=2, platform__io_node={"rate": 1e-280, "policy": "fifo"})
    where, reason = refused(d)
    assert where == "platform.io_node.rate" and "1e-280 B/s" in reason


def test_one_byte_a_second_runs_unless_a_controller_samples_it_for_ages():
    d = spec(platform__stage_rate=1.0, workload=FEITELSON)  # 1e11 s of staging: countable, and few events
    s = parse_spec(d)
    size = check_batch_run(s, load_workload(s), "s.yaml")
    assert 1e9 < size.serial_time < 1e15 and size.events < 1e4
    where, reason = refused({**d, "controller": {}})
    assert where == "controller.d" and "samples" in reason


def test_an_arrival_factor_past_the_clock_is_refused():
    d = spec(workload={"source": "feitelson", "jobs": 20, "arrival_factor": 1e300})
    where, reason = refused(d)
    assert where == "workload.arrival_factor" and "submitted at" in reason


@pytest.mark.parametrize("workload,named", [
    ({"source": "feitelson", "jobs": 200, "checkpoint": {"interval": 0.5}}, "workload.checkpoint.interval"),
])
def test_a_checkpoint_interval_that_makes_millions_of_steps_is_refused(workload, named):
    where, reason = refused(spec(workload=workload), max_events=1_000_000)
    assert where == named and "steps" in reason and "--max-events" in reason, reason


def test_an_swf_io_models_checkpoint_interval_is_named(tmp_path):
    swf = tmp_path / "w.swf"
    swf.write_text("".join(f"{i} {i * 10} 0 40000 2 -1 -1 2 50000 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, 30)))
    d = spec(workload={"source": "swf", "path": str(swf), "io": {"checkpoint": {"interval": 1}}})
    where, _ = refused(d, max_events=100_000)
    assert where == "workload.io.checkpoint.interval"


def test_small_checkpoints_of_inline_jobs_name_the_memory_per_node():
    where, _ = refused(spec(platform__memory_per_node="1MB"), max_events=100_000)
    assert where == "platform.memory_per_node"  # 40 GB in checkpoints of at most 2 MB: 20 000 a job


def test_controller_samples_over_a_long_run_are_refused_naming_d():
    d = spec(controller={"d": 0.001}, workload={"source": "inline", "jobs": [{**j, "submit": 1e9 * i}
                                                                             for i, j in enumerate(JOBS)]})
    where, reason = refused(d)
    assert where == "controller.d" and "samples" in reason


def test_requeue_retries_are_counted():
    d = spec(placement={"requeue": {"enabled": True, "retries": 100_000}})
    where, _ = refused(d, max_events=100_000)
    assert where == "placement.requeue.retries"


def test_the_phase_rows_a_trace_keeps_are_bounded_and_phases_jobs_lifts_it():
    d = spec(workload={"source": "feitelson", "jobs": 200, "checkpoint": {"interval": 0.3}})
    s = parse_spec(d)
    jobs = load_workload(s)
    size = batch_run_size(s, jobs)
    assert 1e7 < size.steps < 1e8
    with pytest.raises(SpecError, match="phase rows.*--phases jobs"):
        check_batch_run(s, jobs, "s.yaml", rows=True)
    check_batch_run(s, jobs, "s.yaml", rows=False)  # within the events' bound


def test_the_step_estimate_bounds_what_a_run_records():
    """Independent of the estimate: the phase rows a real simulation writes (one per step that has a row)."""
    for d in (spec(), spec(scheduler="easy"), spec(workload={"source": "feitelson", "jobs": 40,
                                                             "checkpoint": {"interval": 600}})):
        s = parse_spec(d)
        jobs = load_workload(s)
        rec = run_batch(s, jobs, phases="all")
        est = batch_run_size(s, jobs).steps
        assert len(rec.phases) <= est <= 3 * len(rec.phases) + 4 * len(jobs), (len(rec.phases), est)


def test_the_command_line_refuses_before_running_and_max_events_lifts_it(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(spec(workload={"source": "feitelson", "jobs": 30, "checkpoint": {"interval": 5}})))
    r = CliRunner().invoke(cli, ["simulate", str(p), "--max-events", "10000"])
    assert r.exit_code == 2 and "workload.checkpoint.interval" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["simulate", str(p), "--max-events", "100000000", "--json"])
    assert r.exit_code == 0, r.output
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(spec(platform__overheads__delivered__stage=1e-300)))
    for command in (["simulate", str(slow)], ["emulate", str(slow), "--out", str(tmp_path / "e.h5")]):
        r = CliRunner().invoke(cli, command)
        assert r.exit_code == 2 and "platform.overheads.delivered.stage" in r.output, r.output
        assert "Traceback" not in r.output


def test_jobs_without_io_are_sized_from_their_columns_as_the_loop_sizes_them():
    """Jobs that move no byte (every SWF job) are sized column-wise: the same floats as the per-job loop."""
    from iolab.workloads.run_size import _sizes, _without_io

    jobs = [{"id": f"j{i}", "submit": 7 * i + (i % 3) / 3, "nodes": 1 + i % 5, "walltime": 5000,
             "runtime": (i * 997) % 4000 + (0.1 if i % 2 else 0)} for i in range(40)]
    s = parse_spec(spec(workload={"source": "inline", "jobs": jobs}))
    js = load_workload(s)
    p = s.platform
    lean = _without_io(js)
    assert lean is not None
    assert [repr(v) for v in lean] == [repr(v) for v in _sizes(js, p.lps.rate, p.memory_per_node, p.overheads, 0)]
    assert _without_io(load_workload(parse_spec(spec()))) is None  # JOBS move bytes: the loop sizes them
