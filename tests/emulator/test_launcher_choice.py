"""Which launcher starts the apps, how an allocation maps onto I/O partitions, and the
command lines — all without Slurm (fake SLURM_* environments); plus ``bash -n`` of the
sbatch templates."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.emulator import slurm_hosts
from iolab.emulator.launchers import scancel_signal_command
from iolab.emulator.slurm_control import command
from iolab.emulator.slurm_launch import AllocationTooSmall, SlurmAllocation, MpiexecApps, SrunApps, app_nodes, choose_launcher, make_launcher
from iolab.errors import IolabError, RunError
from iolab.middleware.policies.plan import make_plan
from iolab.specs.load import parse_spec

REPO = Path(__file__).resolve().parents[2]
ALLOC = {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-4]"}


def spec(**platform):
    return parse_spec({
        "name": "two-partitions",
        "platform": {"io_nodes": 2, "nodes_per_io_node": 2, "bandwidth": 1.0, **platform},
        "apps": [{"id": "A", "nodes": 2, "io_node": 0, "iterations": 2, "compute": 0.5, "io_volume": 0.5},
                 {"id": "B", "nodes": 1, "io_node": 1, "iterations": 2, "compute": 0.5, "io_volume": 0.5}],
        "emulator": {"ranks_per_app": "nodes", "unit_bytes": 1 << 20, "grid": 32},
    })


def test_srun_is_chosen_inside_an_allocation_and_mpiexec_outside():
    assert choose_launcher(None, ALLOC) == "srun"
    assert choose_launcher(None, {}) == "mpiexec"
    assert choose_launcher("mpiexec", ALLOC) == "mpiexec"   # asked for: mpiexec inside an allocation
    assert choose_launcher("SRUN", ALLOC) == "srun"
    with pytest.raises(RunError, match="needs a Slurm allocation"):
        choose_launcher("srun", {})
    with pytest.raises(RunError, match="must be one of"):
        choose_launcher("aprun", ALLOC)


def test_make_launcher_follows_the_environment(tmp_path, monkeypatch):
    s = spec()
    assert isinstance(make_launcher(None, s, make_plan(s), tmp_path, "mpiexec", {}), MpiexecApps)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    srun = make_launcher(None, s, make_plan(s), tmp_path, "mpiexec", ALLOC)
    assert isinstance(srun, SrunApps) and srun.allocation == SlurmAllocation("42", ("n1", "n2", "n3", "n4"))
    assert srun.nodes_of == {"A": ["n1", "n2"], "B": ["n3"]}


def test_allocation_nodes_map_onto_partitions_in_order():
    s = spec()
    assert app_nodes(s, make_plan(s), ["a", "b", "c", "d", "e"]) == {"A": ["a", "b"], "B": ["c"]}
    one_rank = spec()
    one_rank = one_rank.model_copy(update={"emulator": one_rank.emulator.model_copy(update={"ranks_per_app": 1})})
    assert app_nodes(one_rank, make_plan(one_rank), ["a", "b", "c", "d"]) == {"A": ["a"], "B": ["c"]}


def test_too_small_an_allocation_is_refused_before_anything_starts(tmp_path, monkeypatch):
    import ray

    from iolab.emulator.io.run import run_emulation

    for key, value in {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-3]"}.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(AllocationTooSmall, match=r"3 node\(s\) \(n1,n2,n3\) is too small for 2 I/O partition\(s\) x 2"):
        run_emulation(spec(), work_dir=tmp_path / "work")
    assert not ray.is_initialized()
    assert not (tmp_path / "work" / "logs").exists()      # no app, no Ray step was started


def test_an_io_spec_refuses_a_small_allocation_as_bad_usage_like_a_batch_spec(tmp_path, monkeypatch):
    """From the command line: exit 2 (bad usage, as for a batch spec), one line naming the sizes and
    the --nodes= to ask for, no traceback, no trace and no process."""
    import ray
    import yaml

    from iolab.cli import cli

    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-3]")
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec().model_dump(mode="json")))
    res = CliRunner().invoke(cli, ["emulate", str(path), "--out", str(tmp_path / "r.h5"), "--work-dir", str(tmp_path / "w")])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    assert "3 node(s) (n1,n2,n3) is too small" in lines[0] and "--nodes=4" in lines[0], lines[0]
    assert not ray.is_initialized()
    assert not (tmp_path / "r.h5").exists() and not (tmp_path / "w" / "logs").exists()


def test_cli_refuses_srun_outside_an_allocation(tmp_path, monkeypatch):
    import yaml

    from iolab.cli import cli

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec().model_dump(mode="json")))
    res = CliRunner().invoke(cli, ["emulate", str(path), "--launcher", "srun", "--out", str(tmp_path / "r.h5")])
    assert res.exit_code != 0
    assert "needs a Slurm allocation" in res.output


def test_a_batch_spec_refuses_an_allocation_smaller_than_its_platform_before_anything_starts(tmp_path, monkeypatch):
    """Under srun, node id k is the allocation's k-th node: fewer nodes than platform.nodes is bad usage
    (exit 2, one line naming both sizes and the --nodes= to ask for), found before any process starts."""
    import ray

    from iolab.cli import cli

    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    spec = REPO / "examples" / "controller-small.yaml"  # platform.nodes: 4
    for launcher in (["--launcher", "srun"], []):  # asked for, and the default inside an allocation
        res = CliRunner().invoke(cli, ["emulate", str(spec), *launcher, "--out", str(tmp_path / "r.h5"),
                                       "--work-dir", str(tmp_path / "w")])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in res.output, res.output
        assert "2 node(s) (n1,n2)" in lines[0] and "platform has 4" in lines[0] and "--nodes=4" in lines[0]
    assert not ray.is_initialized()
    assert not (tmp_path / "r.h5").exists() and not (tmp_path / "w" / "logs").exists()  # nothing started


def test_batch_jobs_run_on_the_allocation_nodes_their_node_ids_name(monkeypatch):
    from types import SimpleNamespace

    from iolab.emulator.batch.launch import MpiexecJobs, SrunJobs, job_nodes, make_job_launcher
    from iolab.emulator.slurm_control import StepLever
    from iolab.emulator.suspension import TreeLever
    from iolab.specs.load import load_spec

    assert job_nodes(["n1", "n2", "n3", "n4"], [0, 3], 2) == ["n1", "n4"]  # id k -> the k-th node
    assert job_nodes(["n1", "n2", "n3", "n4"], [1, 2], 1) == ["n2"]        # 1 rank: the first node of its set
    spec = load_spec(REPO / "examples" / "controller-small.yaml")
    local = make_job_launcher(None, spec, [], Path("/w"), "/venv/bin/mpiexec", {})
    assert isinstance(local, MpiexecJobs) and isinstance(local.lever, TreeLever)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    srun = make_job_launcher(None, spec, [], Path("/w"), "/venv/bin/mpiexec",
                             {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-5]"})
    assert isinstance(srun, SrunJobs) and srun.nodes == ("n1", "n2", "n3", "n4")  # the first platform.nodes
    assert isinstance(srun.lever, StepLever) and srun.lever.job_id == "42"
    j = SimpleNamespace(queued=SimpleNamespace(id="c"), hosts=[0, 3], ranks=2)
    assert srun.command(j, ["python", "-m", "iolab.apps.jacobi"], nice=10) == [
        "srun", "--nodes=2", "--ntasks=2", "--nodelist=n1,n4", "--mpi=pmi2", "--overcommit", "--job-name=iolab-c",
        "--export=ALL,MPIR_CVAR_CH4_NETMOD=ofi", "--overlap", "--kill-on-bad-exit=1", "nice", "-n", "10", "python", "-m",
        "iolab.apps.jacobi"]
    assert srun.coordinator("iolab.middleware.storage_client:coordinator", {"job": "c"}) == (
        "iolab.emulator.slurm_hosts:coordinator",
        {"job": "c", "inner": "iolab.middleware.storage_client:coordinator", "hosts_dir": "/w/hosts"})
    assert local.coordinator("x:y", {"job": "c"}) == ("x:y", {"job": "c"})  # the local way is unchanged
    assert local.hosts(SimpleNamespace(hosts=[0, 3])) == "n0,n3"
    with pytest.raises(IolabError, match="cannot name a Slurm step"):
        make_job_launcher(None, spec, [SimpleNamespace(id="my job")], Path("/w"), "mpiexec",
                          {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n[1-4]"})


def test_command_lines(monkeypatch):
    monkeypatch.delenv("IOLAB_NETWORK", raising=False)
    monkeypatch.delenv("SLURM_NNODES", raising=False)
    srun = SrunApps(SlurmAllocation("42", ("n1", "n2", "n3", "n4")), {"A": ["n1", "n2"]}, Path("/w/hosts"), Path("/w/logs"))
    assert srun.app_command("A", 2, ["python", "-m", "iolab.apps.jacobi"], nice=10) == [
        "srun", "--nodes=2", "--ntasks=2", "--nodelist=n1,n2", "--mpi=pmi2", "--overcommit", "--job-name=iolab-A",
        "--export=ALL,MPIR_CVAR_CH4_NETMOD=ofi", "--overlap", "--kill-on-bad-exit=1", "nice", "-n", "10", "python", "-m", "iolab.apps.jacobi"]
    local = MpiexecApps("/venv/bin/mpiexec", Path("/w/hosts"))
    lo = ["-genv", "FI_SOCKETS_IFACE", "lo", "-genv", "FI_TCP_IFACE", "lo", "-genv", "UCX_NET_DEVICES", "lo"]
    assert local.app_command("A", 2, ["python"], nice=10) == ["nice", "-n", "10", "/venv/bin/mpiexec", *lo, "-n", "2",
                                                              "python"]  # a local run: loopback (docs/emulator.md)
    assert local.app_command("A", 1, ["python"]) == ["/venv/bin/mpiexec", *lo, "-n", "1", "python"]
    assert local.coordinator("iolab.middleware.client:coordinator", {"app": "A"}) == (
        "iolab.emulator.slurm_hosts:coordinator",
        {"app": "A", "inner": "iolab.middleware.client:coordinator", "hosts_dir": "/w/hosts"})


def test_suspend_lines_for_jobs_and_steps():
    assert command("suspend", 42) == ["scontrol", "suspend", "42"]
    assert command("resume", "42") == ["scontrol", "resume", "42"]
    assert command("suspend", "42.3") == ["scancel", "--signal=STOP", "42.3"]
    assert command("resume", "42.3") == ["scancel", "--signal=CONT", "42.3"]
    assert scancel_signal_command("SIGUSR1", "7_2.batch") == ["scancel", "--signal=SIGUSR1", "7_2.batch"]
    for bad in [("STOP", "42"), ("stop", "42.0"), ("STOP; rm", "42.0"), ("STOP", "42.0 43.0")]:
        with pytest.raises(ValueError):
            scancel_signal_command(*bad)
    with pytest.raises(ValueError):
        command("kill", "42.3")


def test_each_rank_notes_its_node_then_hands_over(tmp_path, monkeypatch):
    cfg = slurm_hosts.wrap_config("iolab.apps.coordination:local", {"app": "A", "directory": str(tmp_path / "io")},
                                  tmp_path / "hosts")
    monkeypatch.setenv("SLURMD_NODENAME", "n2")
    inner = slurm_hosts.coordinator(cfg, 1, 2)
    monkeypatch.setenv("SLURMD_NODENAME", "n1")
    slurm_hosts.coordinator(cfg, 0, 2)
    slurm_hosts.coordinator(cfg, 2, 3)
    assert type(inner).__name__ == "LocalCoordinator" and not hasattr(inner, "hosts_dir")
    assert slurm_hosts.read_hosts(tmp_path / "hosts", "A") == "n1,n2"   # rank order, distinct
    assert slurm_hosts.read_hosts(tmp_path / "hosts", "B") == ""
    assert set(slurm_hosts.launch_seconds(tmp_path / "hosts", {"A": 0.0, "B": 0.0})) == {"A"}


@pytest.mark.parametrize("template", sorted((REPO / "slurm" / "templates").glob("*.sbatch")), ids=lambda p: p.name)
def test_sbatch_templates_parse(template):
    res = subprocess.run(["bash", "-n", str(template)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    text = template.read_text()
    assert "#SBATCH --nodes=" in text and ".venv/bin/activate" in text and "iolab " in text


def test_there_are_templates_for_the_common_studies():
    names = {p.name for p in (REPO / "slurm" / "templates").glob("*.sbatch")}
    assert {"emulate.sbatch", "validate.sbatch", "sweep.sbatch"} <= names
