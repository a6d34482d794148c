"""The experiments iolab reproduce added to the studies: carretero2020's policies over iteration batches,
lackner2019's Fig. 4 at both capacities and Fig. 5's theta sweep, monniot2023's heterogeneous platform."""

from __future__ import annotations

import json

import pytest

from iolab.middleware.policies.placement import AllocationRecord
from iolab.sim.batch.storage_replay import (
    HETERO, StorageRequest, TB, disk_fill_times, hetero_layout, monniot_layout, replay_layout,
)
from iolab.studies import carretero_policies, lackner
from iolab.studies.as_campaign import Engine

GB = 10**9


def test_table1_policies_rows_and_the_starving_policy():
    fifo = carretero_policies.run_one("fifo", 1)
    assert [r["app"] for r in fifo] == ["app1", "app2", "app3", "app4", "app5"]
    assert all(r["slowdown"] >= 1 and r["makespan"] == fifo[0]["makespan"] for r in fifo)
    per = carretero_policies.summarise(fifo + carretero_policies.run_one("shortest-remaining", 1)
                                       + carretero_policies.run_one("stretch", 1))["1"]
    assert per["fifo"]["makespan_vs_fifo"] == 1.0
    # the paper's starving policy leaves an app far behind; the stretch-oriented one does not
    assert per["shortest-remaining"]["max_slowdown"] > per["fifo"]["max_slowdown"] > per["stretch"]["max_slowdown"]
    twice = carretero_policies.run_one("fifo", 2)  # an iteration batch doubles every app's iterations
    assert twice[0]["makespan"] == pytest.approx(2 * fifo[0]["makespan"], rel=0.01)


def test_policies_study_as_a_campaign(tmp_path):
    size = carretero_policies.PoliciesSize(policies=("fifo", "stretch"), batches=(1, 2))
    s = carretero_policies.run_study(tmp_path, size, figures=False, engine=Engine(use_ray=False, progress=False))
    assert s["runs"] == 4 and set(s["batches"]) == {"1", "2"}
    assert json.loads((tmp_path / "summary.json").read_text())["batches"]["2"]["stretch"]["makespan_vs_fifo"] < 1
    with pytest.raises(ValueError):
        carretero_policies.campaign_runs({"policies": ["shared"]})  # not a list policy


def test_lackner_new_runs_are_opt_in_and_keep_the_old_run_ids():
    old = lackner.campaign_runs(lackner.params_of(lackner.LacknerSize()))
    assert all("theta" not in r for r in old) and {r["capacity_gb"] for r in old if r["figure"] == 4} == {4096}
    size = lackner.LacknerSize(jobs=20, workloads=2, ps=(0.0, 1.0), ks=(1, 5), fig4_capacities=(2048,),
                               thetas=(0.0, 0.5, 1.0))
    runs = lackner.campaign_runs(lackner.params_of(size))
    assert {(r["capacity_gb"], r["k"]) for r in runs if r["figure"] == 4} == {(2048, 1), (4096, 1)}
    th = [r for r in runs if r["figure"] == 5]
    assert len(th) == 2 * 2 and {r["theta"] for r in th} == {0.5, 1.0}  # theta 0 is Fig. 3's SAS run
    assert all(r["scheduler"] == "sas" and r["capacity_gb"] == 4096 and r["k"] == 5 for r in th)


def test_theta_changes_what_sas_is_told_not_the_jobs():
    exact = lackner.run_one(5, 4096, 5, "sas", None, 0, 0, 60, theta=0.0)
    noisy = lackner.run_one(5, 4096, 5, "sas", None, 0, 0, 60, theta=1.0)
    assert noisy["theta"] == 1.0
    assert (noisy["makespan"], noisy["hps_jobs"]) != (exact["makespan"], exact["hps_jobs"])


def test_hetero_platform_is_table5_scaled():
    disks = hetero_layout(32 * TB)
    ssd = [d for d in disks if d.id.startswith("ssd")]
    hdd = [d for d in disks if d.id.startswith("hdd")]
    assert len(ssd) == 10 and len(hdd) == 8 and len({d.node for d in ssd}) == 2 and len({d.node for d in hdd}) == 4
    assert sum(d.capacity for d in ssd) == 16 * TB and sum(d.capacity for d in hdd) == 16 * TB
    assert ssd[0].capacity == 1.6 * TB and hdd[0].capacity == 2 * TB
    assert ssd[0].write_bw > 30 * hdd[0].write_bw
    assert monniot_layout(HETERO, 3.2 * TB) == hetero_layout(3.2 * TB)


def test_best_bandwidth_fills_the_ssds_first_on_the_hetero_platform():
    reqs = [StorageRequest(f"j{i}", float(i), 150 * GB, 1e6) for i in range(12)]  # 1.8 TB, all live together
    res = replay_layout(reqs, HETERO, 3.2 * TB, "best-bandwidth", split=None)  # SSD disks of 160 GB
    fill = disk_fill_times(res.log, res.disk_capacity, full=0.9)
    first_hdd = min(t for d, (t, _) in fill.items() if d.startswith("hdd") and t is not None)
    assert all(full is not None and full <= first_hdd for d, (_, full) in fill.items() if d.startswith("ssd"))


def test_disk_fill_times_by_hand():
    log = [AllocationRecord("a", "d0", 60, 0.0, 10.0, "allocated"), AllocationRecord("b", "d0", 40, 5.0, None,
                                                                                    "allocated"),
           AllocationRecord("c", "", 10, 6.0, None, "failed")]
    got = disk_fill_times(log, {"d0": 100, "d1": 100})
    assert got == {"d0": (0.0, 5.0), "d1": (None, None)}
    assert disk_fill_times(log, {"d0": 100}, full=1.01) == {"d0": (0.0, None)}
