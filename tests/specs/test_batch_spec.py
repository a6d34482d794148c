"""The batch spec kind: units, shorthands, and every bad value named by its path."""

from __future__ import annotations

import pytest

from iolab.errors import SpecError
from iolab.specs.batch import BatchExperiment
from iolab.specs.load import parse_spec
from iolab.units import parse_size

BASE = {
    "kind": "batch",
    "platform": {"nodes": 128, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                 "stage_rate": "5 GB/s"},
    "scheduler": "sas",
    "workload": {"source": "feitelson"},
}


def problems(data) -> dict[str, str]:
    with pytest.raises(SpecError) as exc:
        parse_spec(data, kind="batch")
    return dict(exc.value.problems)


def test_minimal_spec_and_units():
    e = parse_spec(BASE, kind="batch")
    assert isinstance(e, BatchExperiment)
    assert e.platform.hps.total_capacity == 2048e9 and e.platform.lps.rate == 1e9
    assert e.platform.memory_per_node == 16e9
    assert (e.placement.strategy, e.placement.split.threshold, e.placement.requeue.retries,
            e.placement.requeue.period) == ("best-bandwidth", 200e9, 5, 300)
    assert e.workload.jobs == 500 and e.workload.arrival_factor == 500 and e.workload.longest == 86400
    assert parse_size("16GiB") == 16 * 2**30 and parse_size("1.5 TB") == 1.5e12


def test_shorthands():
    e = parse_spec({**BASE, "scheduler": {"kind": "Random_Tier", "p": 0.4},
                    "placement": {"strategy": "round_robin", "split": "100GB", "requeue": True},
                    "workload": [{"id": 1, "submit": 0, "nodes": 2, "walltime": "1h", "runtime": 60,
                                  "storage": "10GB"}]}, kind="batch")
    assert (e.scheduler.kind, e.scheduler.p) == ("random-tier", 0.4)
    assert e.placement.split.enabled and e.placement.split.threshold == 100e9 and e.placement.requeue.enabled
    (j,) = e.workload.jobs
    assert (j.id, j.walltime, j.storage) == ("1", 3600, 10e9)


def test_bad_values_are_named():
    bad = {**BASE,
           "scheduler": {"kind": "random-tier"},
           "placement": {"strategy": "worst-fit", "requeue": True},
           "workload": [{"id": "a", "submit": 0, "nodes": 200, "walltime": 10, "runtime": 5, "input": "3XB"},
                        {"id": "a", "submit": -1, "nodes": 1, "walltime": 0, "runtime": 1}]}
    p = problems(bad)
    assert "random-tier needs p" in p["scheduler.p"]
    assert "requeue only applies" in p["placement.requeue.enabled"]
    assert "unknown size unit" in p["workload.jobs[0].input"]
    assert "workload.jobs[1].submit" in p and "workload.jobs[1].walltime" in p


def test_cross_field_problems_are_named():
    p = problems({**BASE, "workload": [{"id": "a", "submit": 0, "nodes": 200, "walltime": 10, "runtime": 5},
                                      {"id": "a", "submit": 1, "nodes": 1, "walltime": 10, "runtime": 5}]})
    assert "platform.nodes is 128" in p["workload.jobs[0].nodes"]
    assert "duplicate id" in p["workload.jobs[1].id"]
    p = problems({**BASE, "platform": {**BASE["platform"], "hps": {"rate": 1, "capacity": "1TB", "servers": [
        {"nodes": [{"network_bw": 1, "disks": [{"capacity": "2TB", "read_bw": 1, "write_bw": 1}]}]}]}}})
    assert "differs from the sum of the disks" in p["platform.hps.capacity"]
    p = problems({**BASE, "scheduler": {"kind": "easy", "p": 0.3}})
    assert "only applies to random-tier" in p["scheduler.p"]


def test_workload_sources(tmp_path):
    assert "unknown workload source" in problems({**BASE, "workload": {"source": "nope"}})["workload.source"]
    assert "missing" in problems({**BASE, "workload": {"source": "swf"}})["workload.path"]
    assert "must exceed shortest" in problems(
        {**BASE, "workload": {"source": "feitelson", "shortest": 100, "longest": 10}})["workload.longest"]
    # a missing input file is refused at validation, naming the field and the path
    assert "does not exist" in problems({**BASE, "workload": {"source": "theta", "path": "x.yaml"}})["workload.path"]
    (tmp_path / "x.yaml").write_text("jobs: []\n")
    e = parse_spec({**BASE, "workload": {"source": "theta", "path": "x.yaml"}}, kind="batch", base_dir=tmp_path)
    assert e.workload.path == str(tmp_path / "x.yaml")  # relative to the spec's folder


def test_unknown_field_refused():
    assert "unknown field" in problems({**BASE, "sheduler": "sas"})["sheduler"]


def test_the_io_model_fields_mean_the_same_in_a_feitelson_workload_and_an_swf_io_model():
    from iolab.specs.batch import FeitelsonWorkload, IOModelSpec

    shared = ["io_fraction", "io_fraction_sd", "checkpoint_fraction", "checkpoint_min_runtime", "io_rate", "checkpoint"]
    assert [f for f in IOModelSpec.model_fields if f in shared] == shared  # in this order in both
    assert [f for f in FeitelsonWorkload.model_fields if f in shared] == shared
    for name in shared:
        a, b = FeitelsonWorkload.model_fields[name], IOModelSpec.model_fields[name]
        assert (a.default, a.description, a.metadata, a.annotation) == (b.default, b.description, b.metadata,
                                                                         b.annotation), name
    # and they are checked alike: the same bad value names the same field with the same reason
    from pydantic import ValidationError

    for model in (FeitelsonWorkload, IOModelSpec):
        with pytest.raises(ValidationError) as e:
            model.model_validate({"io_fraction": 1.0})
        assert e.value.errors()[0]["loc"] == ("io_fraction",) and "less than 1" in e.value.errors()[0]["msg"]
