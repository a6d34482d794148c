"""The batch platform's I/O nodes and the allocation choice: what a spec may say and what it is refused."""

import pytest
from pydantic import ValidationError

from iolab.specs.batch import BatchExperiment


def spec(platform=None, **top):
    p = {"nodes": 10, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "10 GB/s", "capacity": "10 GB"},
         "stage_rate": "1 GB/s"}
    p.update(platform or {})
    return {"kind": "batch", "platform": p, "scheduler": "fcfs",
            "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 10, "runtime": 5}], **top}


def refused(doc) -> str:
    with pytest.raises(ValidationError) as e:
        BatchExperiment.model_validate(doc)
    return str(e.value)


def test_without_io_nodes_nothing_changes():
    e = BatchExperiment.model_validate(spec())
    assert e.platform.io_nodes is None and e.platform.io_node is None
    assert e.allocation.kind == "lowest"


def test_contiguous_ranges_default_to_ceil():
    e = BatchExperiment.model_validate(spec({"io_nodes": 3, "io_node": {"rate": "2 GB/s", "policy": "Longest_IO"}}))
    p = e.platform
    assert p.io_nodes_span == 4  # ceil(10 / 3)
    assert [p.io_node_of(i) for i in range(10)] == [0] * 4 + [1] * 4 + [2] * 2
    assert p.io_node.policy == "longest-io" and p.io_node.rate == 2e9


@pytest.mark.parametrize("platform, field", [
    ({"io_nodes": 2}, "io_node"),
    ({"nodes_per_io_node": 2}, "nodes_per_io_node"),
    ({"io_node": {"rate": 1}}, "io_node"),
    ({"io_nodes": 2, "nodes_per_io_node": 4, "io_node": {"rate": 1}}, "nodes_per_io_node"),
    ({"io_nodes": 4, "nodes_per_io_node": 5, "io_node": {"rate": 1}}, "io_nodes"),
    ({"io_nodes": 2, "io_node": {"rate": 1, "policy": "random"}}, "policy"),
])
def test_bad_io_nodes_name_the_field(platform, field):
    assert field in refused(spec(platform))


def test_io_aware_allocation_needs_io_nodes():
    assert "allocation.kind" in refused(spec(allocation="io-aware"))
    e = BatchExperiment.model_validate(spec({"io_nodes": 2, "io_node": {"rate": 1}},
                                            allocation={"kind": "io-aware", "sensibility": 0.5}))
    assert (e.allocation.kind, e.allocation.sensibility) == ("io-aware", 0.5)


def test_behind_io_nodes_a_real_run_defaults_to_one_rank_per_node():
    e = BatchExperiment.model_validate(spec({"io_nodes": 2, "io_node": {"rate": 1}}))
    assert e.emulator.ranks_per_job == "nodes"
    e = BatchExperiment.model_validate(spec({"io_nodes": 2, "io_node": {"rate": 1}}, emulator={"ranks_per_job": 4}))
    assert e.emulator.ranks_per_job == 4  # stated: kept (the real run checks it against every job)
    assert BatchExperiment.model_validate(spec()).emulator.ranks_per_job == 1  # without I/O nodes: unchanged


def test_a_real_run_refuses_fewer_ranks_than_a_jobs_nodes_and_takes_any_more(tmp_path):
    from iolab.emulator.batch.prerun_checks import check_batch_runnable
    from iolab.errors import SpecError

    def problems(ranks):
        doc = spec({"io_nodes": 2, "io_node": {"rate": 1}}, emulator={"ranks_per_job": ranks})
        doc["workload"] = [{"id": "a", "submit": 0, "nodes": 2, "walltime": 10, "runtime": 5}]
        e = BatchExperiment.model_validate(doc)
        try:
            check_batch_runnable(e, e.workload.jobs, tmp_path)
        except SpecError as err:
            return err.problems
        return []

    assert any(path == "emulator.ranks_per_job" and "'a'" in why for path, why in problems(1))
    assert not any(path == "emulator.ranks_per_job" for path, _ in problems(3))  # 2 ranks on one node, 1 on the other
