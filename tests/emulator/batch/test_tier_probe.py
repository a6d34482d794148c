"""A tier probe (``controller.model.probe: tier``): a real run's benchmark unit answers as the simulator's
volume model does, on the real link's stream count (no Ray: the pure parts)."""

from __future__ import annotations

import pytest

from iolab.emulator.batch.load_controller import tier_probes
from iolab.middleware.bucket import TokenBucket
from iolab.middleware.controller_actor import tier_response
from iolab.middleware.policies.interference import InterferenceLaw, tier_laws
from iolab.middleware.storage import StorageState
from iolab.sim.batch.load_controller import VolumeModel
from iolab.specs.batch import BatchExperiment


@pytest.mark.parametrize("law", [InterferenceLaw.parametric(0.5, 1), InterferenceLaw.preset("lustre-plafrim-b"),
                                 InterferenceLaw()], ids=lambda law: law.describe())
@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_the_tier_probe_answers_the_simulated_volume_model_without_its_fixed_cost(law, k):
    sim = VolumeModel(2e9, r0=0.7, law=law)  # the simulator's unit on a volume of 2 GB/s
    assert tier_response((2e9, law), 10e9, k) == pytest.approx(sim.response(k, 10e9) - 0.7, rel=1e-12)
    # by hand: the unit is one more stream among k + 1 sharing rate x f(k + 1)
    assert tier_response((2e9, law), 10e9, k) == pytest.approx(10e9 / (2e9 * law.factor(k + 1) / (k + 1)))


def test_the_manager_counts_the_jobs_a_tier_carries(tmp_path):
    s = StorageState(tmp_path / "lps", tmp_path / "hps", 10**6, rates={"lps": 1e6},
                     laws={"lps": InterferenceLaw.parametric(0.5, 1)})
    assert s.counters(0.0)["lps"]["streams"] == 0
    s.book("lps", 1000, 0.0, "a")  # [0, 0.001]
    s.book("lps", 1000, 0.0, "b")
    assert s.counters(0.0005)["lps"]["streams"] == 2
    grace = s.buckets["lps"].grace
    end = s.buckets["lps"].next_free
    assert s.counters(end + grace + 1e-6)["lps"]["streams"] == 0  # both done
    assert TokenBucket(1e6).active(0.0) == 0


def spec(probe: str | None, **model) -> BatchExperiment:
    c = {"volumes": ["lps", "hps"], "p": "10GB"}
    if probe is not None:
        c["model"] = {"probe": probe, **model}
    return BatchExperiment.model_validate({
        "name": "t", "scheduler": "fcfs",
        "platform": {"nodes": 1, "memory_per_node": "1GB",
                     "lps": {"rate": "1 GB/s", "interference": {"gamma": 0.5, "knee": 1}},
                     "hps": {"rate": "10 GB/s", "capacity": "10 GB"}, "stage_rate": "1 GB/s"},
        "workload": [{"id": "a", "submit": 0, "nodes": 1, "walltime": 100, "runtime": 10}],
        "controller": c})


def test_tier_probes_name_each_watched_volume_with_its_rate_and_law():
    def tier_probes_of(sp):
        return tier_probes(sp, tier_laws(sp))

    assert tier_probes_of(spec(None)) == {} and tier_probes_of(spec("disk")) == {}
    got = tier_probes_of(spec("tier"))
    assert set(got) == {"lps", "hps"}
    assert got["lps"] == (1e9, InterferenceLaw.parametric(0.5, 1)) and got["hps"] == (1e10, InterferenceLaw())
    assert tier_probes_of(spec("tier", probe_rate=2e9))["lps"][0] == 2e9


def test_a_probe_that_is_neither_disk_nor_tier_is_refused_by_name():
    with pytest.raises(ValueError, match="probe"):
        spec("filer")
