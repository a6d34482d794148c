"""The I/O model at scale: a checkpoint interval (fixed or Young-Daly), volumes at the job's share of
the link (``io_rate: share``), lackner2019's rules unchanged as the default, and jobs built from
checked columns equal to the validated ones (iolab/workloads/feitelson.py, job_columns.py)."""

from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from iolab.cli import cli
from iolab.errors import SpecError
from iolab.workloads import feitelson_columns, feitelson_jobs, jobs_from_columns, load_workload
from iolab.workloads.feitelson import lackner_io
from iolab.specs import parse_spec
from iolab.specs.batch import FeitelsonWorkload, IOModelSpec, Job
from iolab.specs.size import MAX_JOBS, batch_size
from iolab.units import parse_duration

GB = 10**9
YEAR = 365 * 86400


def io_of(spec: dict, nodes, runtime, *, lps_rate=1 * GB, memory=16 * GB, machine=8, seed=0):
    """The volumes ``lackner_io`` gives jobs of ``nodes`` and ``runtime`` under the I/O model ``spec``."""
    return lackner_io(np.random.default_rng(seed), np.array(nodes), np.array(runtime, dtype=float),
                      IOModelSpec.model_validate(spec), lps_rate=lps_rate, memory_per_node=memory,
                      machine_nodes=machine)


# ---------------------------------------------------------------- checkpoint counts


def test_interval_counts_whole_intervals_of_the_runtime():
    # interval 1 h; checkpoint_min_runtime 3600 (the default): the 1800 s job writes none
    nodes = [1, 2, 3, 4, 8]
    runtime = [1800, 3600, 7199, 7200, 86400]
    v = io_of({"checkpoint": {"interval": "1h"}}, nodes, runtime)
    k = [0, 1, 1, 2, 24]
    assert v.data.tolist() == [ki * n * 16 * GB for ki, n in zip(k, nodes)]
    assert v.checkpoint.tolist() == [0, 2 * 16 * GB, 3 * 16 * GB, 4 * 16 * GB, 8 * 16 * GB]
    assert v.storage.tolist() == (np.maximum(v.input, v.output) + v.checkpoint).tolist()
    # below the minimum runtime nothing is written, whatever the interval
    low = io_of({"checkpoint": {"interval": 60}, "checkpoint_min_runtime": "2h"}, [1, 1], [7199, 7200])
    assert low.data.tolist() == [0, 120 * 16 * GB]


def test_young_daly_interval_at_the_link_rate():
    # R = 1 GB/s, 16 GB a node: C = 16 s x nodes; node MTBF 500000 s: M = 500000 / nodes;
    # sqrt(2 C M) = sqrt(2 x 16 x 500000) = 4000 s whatever the nodes
    v = io_of({"checkpoint": {"daly": {"node_mtbf": 500000}}, "checkpoint_min_runtime": 0},
              [1, 4, 4, 2], [20000, 20000, 7999, 8000])
    k = [5, 5, 1, 2]
    assert v.data.tolist() == [ki * n * 16 * GB for ki, n in zip(k, [1, 4, 4, 2])]


def test_young_daly_interval_at_the_share_rate():
    # share of a machine of 8 nodes: R_job = 1 GB/s x nodes / 8, C = 16 GB x nodes / R_job = 128 s;
    # one node: M = 500000 s, sqrt(2 x 128 x 500000) = 11313.7 s -> 1 checkpoint in 20000 s;
    # four nodes: M = 125000 s, sqrt(2 x 128 x 125000) = 5656.9 s -> 3
    spec = {"checkpoint": {"daly": {"node_mtbf": 500000}}, "checkpoint_min_runtime": 0, "io_rate": "share"}
    v = io_of(spec, [1, 4], [20000, 20000])
    assert math.sqrt(2 * 128 * 500000) == pytest.approx(11313.708, abs=1e-3)
    assert v.data.tolist() == [1 * 16 * GB, 3 * 4 * 16 * GB]


def test_node_mtbf_takes_years():
    assert parse_duration("5y") == 5 * 8760 * 3600 and parse_duration("2w") == 14 * 86400
    spec = IOModelSpec.model_validate({"checkpoint": {"daly": {"node_mtbf": "5y"}}})
    assert spec.checkpoint.daly.node_mtbf == 5 * YEAR


# ---------------------------------------------------------------- the share rule


def test_share_rule_volumes_on_hand_computed_jobs():
    # io_fraction_sd 0: each of input and output fills io_fraction / 2 = 5 % of the runtime
    spec = {"io_fraction_sd": 0, "io_rate": "share"}
    v = io_of(spec, [2, 8], [3600, 86400])
    # 0.05 x 3600 s x 1 GB/s x 2/8 = 45 GB; 0.05 x 86400 x 1 GB/s x 8/8 = 4320 GB (floored bytes)
    assert v.input.tolist() == pytest.approx([45 * GB, 4320 * GB], abs=1)
    assert v.output.tolist() == v.input.tolist()
    # checkpoints of lackner2019's rule at the same rate: floor(0.1 x T x R x nodes/8 / (nodes x 16 GB))
    # = floor(0.1 x 86400 / 128) = 67 for the long job; 2.8 -> 2 for the one of 3600 s
    assert v.data.tolist() == [2 * 2 * 16 * GB, 67 * 8 * 16 * GB]
    link = io_of({"io_fraction_sd": 0}, [2, 8], [3600, 86400])
    assert link.input.tolist() == pytest.approx([180 * GB, 4320 * GB], abs=1)
    assert link.data.tolist() == [11 * 2 * 16 * GB, 67 * 8 * 16 * GB]  # floor(360/32), floor(8640/128)


def test_share_rule_keeps_the_offered_io_within_the_fraction_of_the_link():
    """Each of a job's input and output, moved at its share R_lps x nodes / N, takes at most io_fraction
    of its runtime, both together io_fraction on average: jobs that fill the machine offer the link about
    io_fraction of what it carries, whatever the number of jobs."""
    nodes, lps = 1024, 100 * GB
    jobs = feitelson_jobs(seed=5, jobs=2000, max_nodes=nodes, lps_rate=lps, io_rate="share")
    share = np.array([j.nodes for j in jobs]) * lps / nodes
    runtime = np.array([j.runtime for j in jobs])
    for f in ("input", "output"):
        assert np.all(np.array([getattr(j, f) for j in jobs]) <= 0.10 * runtime * share * (1 + 1e-12))
    io = np.array([j.input + j.output for j in jobs])
    assert np.mean(io / (runtime * share)) == pytest.approx(0.10, abs=0.005)
    # the link rule (same draws) offers each job the whole link: N / nodes times its share's bytes
    link = feitelson_jobs(seed=5, jobs=2000, max_nodes=nodes, lps_rate=lps)
    scale = nodes / np.array([j.nodes for j in jobs])
    ratio_in = np.array([a.input for a in link]) - np.array([b.input for b in jobs]) * scale
    assert np.all(np.abs(ratio_in) <= scale + 1)  # equal but for the floor to whole bytes


def test_share_rule_for_swf_jobs_uses_the_platform_nodes(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text("".join(f"{i} {i * 10} 1 7200 {n} -1 -1 {n} 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
                           for i, n in ((1, 4), (2, 16))))
    doc = {"kind": "batch", "platform": {"nodes": 16, "lps": {"rate": "1GB/s"},
                                         "hps": {"rate": "15GB/s", "capacity": "2000GB"}, "stage_rate": "5GB/s"},
           "scheduler": "easy",
           "workload": {"source": "swf", "path": str(swf),
                        "io": {"io_fraction_sd": 0, "io_rate": "share", "checkpoint": {"interval": "1h"}}}}
    jobs = load_workload(parse_spec(doc))
    # 0.05 x 7200 s x 1 GB/s x 4/16 = 90 GB; x 16/16 = 360 GB; two checkpoints of 1 h in 7200 s
    assert [j.input for j in jobs] == pytest.approx([90 * GB, 360 * GB], abs=1)
    assert [j.data for j in jobs] == [2 * 4 * 16 * GB, 2 * 16 * 16 * GB]


# ---------------------------------------------------------------- the default, unchanged


def old_lackner_io(rng, nodes, runtime, p, *, lps_rate, memory_per_node):
    """lackner2019 §IV-B's I/O as main computed it before the new rules (the reference)."""
    n = len(runtime)
    runtime = np.asarray(runtime, dtype=float)
    half = p.io_fraction / 2
    f_in = np.clip(rng.normal(half, p.io_fraction_sd, n), 0.0, p.io_fraction)
    f_out = np.clip(rng.normal(half, p.io_fraction_sd, n), 0.0, p.io_fraction)
    inp = np.floor(f_in * runtime * lps_rate)
    out = np.floor(f_out * runtime * lps_rate)
    ckpt = np.asarray(nodes) * float(memory_per_node)
    k = np.floor(p.checkpoint_fraction * runtime * lps_rate / ckpt)
    k[runtime < p.checkpoint_min_runtime] = 0
    data = k * ckpt
    ckpt_held = np.where(k > 0, ckpt, 0.0)
    return inp, out, data, np.maximum(inp, out) + ckpt_held


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lps", [1 * GB, 100 * GB])
def test_default_and_explicit_link_rule_are_lackner2019_bit_for_bit(seed, lps):
    draw = np.random.default_rng(100 + seed)
    nodes = draw.integers(1, 10240, 3000)
    runtime = draw.uniform(0, 86400, 3000)
    for p in (IOModelSpec(), FeitelsonWorkload(), IOModelSpec(io_rate="link", checkpoint_fraction=0.2)):
        ref = old_lackner_io(np.random.default_rng(seed), nodes, runtime, p, lps_rate=lps, memory_per_node=16 * GB)
        new = lackner_io(np.random.default_rng(seed), nodes, runtime, p, lps_rate=lps, memory_per_node=16 * GB,
                         machine_nodes=10240)
        for a, b in zip(ref, (new.input, new.output, new.data, new.storage)):
            assert np.array_equal(a, b)


def test_the_new_rules_change_only_the_volumes():
    base = feitelson_jobs(seed=4, jobs=500, max_nodes=256, lps_rate=10 * GB)
    other = feitelson_jobs(seed=4, jobs=500, max_nodes=256, lps_rate=10 * GB, io_rate="share",
                           checkpoint={"interval": 3600})
    fixed = ("id", "user", "submit", "nodes", "walltime", "runtime")
    assert [[getattr(j, f) for f in fixed] for j in base] == [[getattr(j, f) for f in fixed] for j in other]
    assert sum(j.data for j in other) < sum(j.data for j in base)


# ---------------------------------------------------------------- fast path = validated path


@pytest.mark.parametrize("seed", [0, 3, 11])
@pytest.mark.parametrize("kw", [{}, {"theta": 0.4}, {"io_rate": "share", "checkpoint": {"daly": {"node_mtbf": "5y"}}}])
def test_fast_jobs_equal_validated_jobs_field_for_field(seed, kw):
    args = dict(seed=seed, jobs=3000, max_nodes=1024, lps_rate=100 * GB, **kw)
    fast = feitelson_jobs(**args)
    slow = feitelson_jobs(validate_each=True, **args)
    assert len(fast) == len(slow) == 3000
    for f, s in zip(fast, slow):
        assert type(f) is Job and f == s
        assert f.model_fields_set == s.model_fields_set and f.model_extra == s.model_extra
        for name in Job.model_fields:
            a, b = getattr(f, name), getattr(s, name)
            assert type(a) is type(b) and a == b, name
        if s.estimate is not None:
            assert f.estimate == s.estimate and f.estimate.model_fields_set == s.estimate.model_fields_set
    assert all(j.model_dump() == Job.model_validate(j.model_dump()).model_dump() for j in fast[:200])


def test_fast_jobs_copy_pickle_and_stay_frozen():
    jobs = feitelson_jobs(seed=1, jobs=50, theta=0.2)
    slow = feitelson_jobs(seed=1, jobs=50, theta=0.2, validate_each=True)
    copy = jobs[0].model_copy(update={"input": 1.0})
    assert copy.input == 1.0 and jobs[0].input != 1.0 and jobs[1].model_fields_set == set(Job.model_fields)
    assert pickle.loads(pickle.dumps(jobs)) == slow
    assert list(jobs[0].__dict__) == list(slow[0].__dict__)  # the same keys in the same order
    assert sys.getsizeof(jobs[0].__dict__) <= sys.getsizeof(slow[0].__dict__)
    with pytest.raises(ValidationError):
        jobs[0].nodes = 3


def test_columns_that_fail_a_check_raise_jobs_validation_error():
    cols = feitelson_columns(seed=2, jobs=100)
    cols.input[7] = -1.0
    with pytest.raises(ValidationError, match="input"):
        jobs_from_columns(cols)
    cols = feitelson_columns(seed=2, jobs=100)
    cols.storage[3] = cols.input[3] / 2 + 1  # an HPS request too small for the input
    with pytest.raises(ValidationError, match="storage"):
        jobs_from_columns(cols)


def test_a_million_jobs_pass_the_job_count_guard_when_asked():
    spec = parse_spec({"kind": "batch", "platform": {"nodes": 10240, "lps": {"rate": "100GB/s"},
                                                     "hps": {"rate": "1500GB/s", "capacity": "200TB"},
                                                     "stage_rate": "500GB/s"},
                       "scheduler": "easy", "workload": {"source": "feitelson", "jobs": 1_000_000}})
    assert batch_size(spec).too_big and MAX_JOBS < 1_000_000  # refused by default, naming --max-jobs
    assert not batch_size(spec, 1_000_000).too_big


# ---------------------------------------------------------------- bad values


PLATFORM = {"nodes": 16, "lps": {"rate": "1GB/s"}, "hps": {"rate": "15GB/s", "capacity": "200GB"},
            "stage_rate": "5GB/s"}


def batch(workload: dict) -> dict:
    return {"kind": "batch", "platform": PLATFORM, "scheduler": "easy",
            "workload": {"source": "feitelson", "jobs": 20, **workload}}


@pytest.mark.parametrize("workload, field, reason", [
    ({"checkpoint": {"interval": -1}}, "workload.checkpoint.interval", "greater than 0"),
    ({"checkpoint": {"interval": "1 parsec"}}, "workload.checkpoint.interval", "not a duration"),
    ({"checkpoint": {}}, "workload.checkpoint.interval", "neither"),
    ({"checkpoint": {"interval": 60, "daly": {"node_mtbf": "5y"}}}, "workload.checkpoint.interval", "not both"),
    ({"checkpoint": {"daly": {"node_mtbf": 0}}}, "workload.checkpoint.daly.node_mtbf", "greater than 0"),
    ({"checkpoint": {"daly": {}}}, "workload.checkpoint.daly.node_mtbf", "missing"),
    ({"checkpoint": {"every": 60}}, "workload.checkpoint.every", "unknown field"),
    ({"checkpoint": {"interval": 60}, "checkpoint_fraction": 0.1}, "workload.checkpoint_fraction", "give one"),
    ({"io_rate": "half"}, "workload.io_rate", "'link' or 'share'"),
])
def test_bad_values_refused_naming_the_field(workload, field, reason):
    with pytest.raises(SpecError) as err:
        parse_spec(batch(workload))
    found = dict(err.value.problems)
    assert field in found and reason in found[field], found
    swf = {"source": "swf", "path": "x.swf", "io": workload}  # the same fields of an SWF io model
    with pytest.raises(SpecError) as err:
        parse_spec({**batch({}), "workload": swf})
    assert f"workload.io.{field.removeprefix('workload.')}" in dict(err.value.problems)


def test_cli_refuses_a_negative_interval_with_exit_2(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(batch({"checkpoint": {"interval": -1}})))
    out = tmp_path / "t.h5"
    r = CliRunner().invoke(cli, ["simulate", str(spec), "--out", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "workload.checkpoint.interval" in r.output and "greater than 0" in r.output
    assert not out.exists()


def test_cli_runs_the_new_rules(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(batch({"io_rate": "SHARE", "checkpoint": {"daly": {"node_mtbf": "5y"}}})))
    r = CliRunner().invoke(cli, ["simulate", str(spec), "--json"])
    assert r.exit_code == 0, r.output


def test_an_emulated_batch_spec_accepts_the_new_fields(tmp_path):
    from iolab.emulator.batch.prerun_checks import check_batch_runnable
    from iolab.sim.batch.run import simulated_makespan

    doc = {**batch({"jobs": 3, "shortest": 60, "longest": 240, "arrival_factor": 30, "io_rate": "share",
                    "checkpoint": {"interval": 50}, "checkpoint_min_runtime": 0}),
           "platform": {**PLATFORM, "nodes": 4, "memory_per_node": "4GB"},
           "emulator": {"time_scale": 0.05, "bytes_scale": 0.0001}}
    spec = parse_spec(doc)
    jobs = load_workload(spec)
    assert all(j.data > 0 for j in jobs)  # every job checkpoints (one every 50 s of >= 60 s)
    check_batch_runnable(spec, jobs, tmp_path, makespan_of=simulated_makespan)


@pytest.mark.parametrize("io, field", [
    ({"checkpoint": {"interval": 1e-300}}, "checkpoint.interval"),
    ({"checkpoint": {"daly": {"node_mtbf": 1e-300}}, "io_rate": "share"}, "checkpoint.daly.node_mtbf"),
])
def test_checkpoint_counts_past_the_limit_are_refused_naming_the_field(tmp_path, io, field):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(batch(io)))
    out = tmp_path / "t.h5"
    r = CliRunner().invoke(cli, ["simulate", str(spec), "--out", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"workload.{field}" in r.output and "above the limit" in r.output and not out.exists()
    swf = tmp_path / "t.swf"
    swf.write_text("1 0 1 7200 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(SpecError) as err:
        load_workload(parse_spec({**batch({}), "workload": {"source": "swf", "path": str(swf), "io": io}}))
    assert f"workload.io.{field}" in dict(err.value.problems)
