"""The launch layer: exact command lines of every builder, the hostlist parser, the
shell seam (run for real) and the Slurm state mapping.

Builders run nothing, so their tests compare whole argument lists; the shell seam
is exercised with real processes; one test runs an mpiexec line for real.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from iolab.emulator import launchers
from iolab.emulator.launchers import (
    MpiexecNotFound,
    expand_hostlist,
    mpiexec_command,
    partition_nodes,
    ray_start_commands,
    scontrol_command,
    srun_command,
)
from iolab.emulator.shell import CommandTimeout, execute_wait, kill_tree, spawn
from iolab.emulator.slurm_state import SlurmJobState, parse_state

PY = ["python", "app.py"]


# ---------------------------------------------------------------- mpiexec

def test_mpiexec_minimal_line():
    assert mpiexec_command(4, PY, mpiexec="mpiexec", network="open") == ["mpiexec", "-n", "4", "python", "app.py"]


def test_mpiexec_keeps_the_ranks_on_loopback_unless_the_network_is_opened(monkeypatch):
    monkeypatch.delenv("IOLAB_NETWORK", raising=False)
    monkeypatch.delenv("SLURM_NNODES", raising=False)
    lo = ["-genv", "FI_SOCKETS_IFACE", "lo", "-genv", "FI_TCP_IFACE", "lo", "-genv", "UCX_NET_DEVICES", "lo"]
    assert mpiexec_command(2, PY, mpiexec="m") == ["m", *lo, "-n", "2", "python", "app.py"]
    monkeypatch.setenv("IOLAB_NETWORK", "open")
    assert mpiexec_command(2, PY, mpiexec="m") == ["m", "-n", "2", "python", "app.py"]
    monkeypatch.setenv("IOLAB_NETWORK", "")
    monkeypatch.setenv("SLURM_NNODES", "3")  # Hydra spreads the ranks over an allocation's nodes
    assert mpiexec_command(2, PY, mpiexec="m") == ["m", "-n", "2", "python", "app.py"]
    monkeypatch.setenv("IOLAB_NETWORK", "wide")
    with pytest.raises(ValueError, match="IOLAB_NETWORK must be one of loopback, open"):
        mpiexec_command(2, PY, mpiexec="m")
    with pytest.raises(ValueError, match="cannot go with hosts"):
        mpiexec_command(2, PY, mpiexec="m", hosts=["a"], network="loopback")


def test_mpiexec_global_options_come_before_n():
    cmd = mpiexec_command(
        2, PY, mpiexec="/x/mpiexec", env={"B": "2", "A": "x y"}, hosts="n[1-2]"
    )
    assert cmd == [
        "/x/mpiexec", "-hosts", "n1,n2", "-genv", "A", "x y", "-genv", "B", "2",
        "-n", "2", "python", "app.py",
    ]


def test_mpiexec_hosts_as_list():
    cmd = mpiexec_command(1, PY, mpiexec="m", hosts=["a", "b"])
    assert cmd[:3] == ["m", "-hosts", "a,b"]


def test_mpiexec_default_is_the_one_next_to_the_interpreter():
    beside = Path(sys.executable).parent / "mpiexec"
    if not beside.is_file():
        pytest.skip(f"no mpiexec in {beside.parent} (the mpich wheel is not installed)")
    assert mpiexec_command(1, PY)[0] == str(beside)


def test_mpiexec_missing_everywhere_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MpiexecNotFound, match="pip install mpich"):
        mpiexec_command(1, PY)
    assert issubclass(MpiexecNotFound, FileNotFoundError)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
def test_mpiexec_rejects_bad_nprocs(bad):
    with pytest.raises(ValueError, match=f"nprocs must be a positive int, got {bad!r}"):
        mpiexec_command(bad, PY, mpiexec="m")


def test_mpiexec_rejects_bad_argv_and_env():
    with pytest.raises(TypeError, match="not a string"):
        mpiexec_command(1, "python app.py", mpiexec="m")
    with pytest.raises(ValueError, match="argv is empty"):
        mpiexec_command(1, [], mpiexec="m")
    with pytest.raises(ValueError, match="not an option: '-n'"):
        mpiexec_command(1, ["-n", "2"], mpiexec="m")
    with pytest.raises(ValueError, match="bad variable name 'A-B'"):
        mpiexec_command(1, PY, mpiexec="m", env={"A-B": "1"})
    with pytest.raises(ValueError, match="hosts is empty"):
        mpiexec_command(1, PY, mpiexec="m", hosts=[])


@pytest.mark.mpi
def test_mpiexec_line_runs_for_real():
    """The built line really starts one communicator with the -genv variable set."""
    code = (
        "from mpi4py import MPI; import os; c = MPI.COMM_WORLD; "
        "s = c.gather(os.environ['IOLAB_T']); "
        "print(c.size, *s) if c.rank == 0 else None"
    )
    try:
        cmd = mpiexec_command(3, [sys.executable, "-c", code], env={"IOLAB_T": "v"},
                              hosts=["localhost"])
    except MpiexecNotFound as exc:
        pytest.skip(str(exc))
    rc, out, err = execute_wait(cmd, timeout=120)
    assert rc == 0, err
    assert out.split() == ["3", "v", "v", "v"]


# ---------------------------------------------------------------- srun

OFI = "--export=ALL,MPIR_CVAR_CH4_NETMOD=ofi"


def test_srun_default_line():
    assert srun_command(4, PY, nodes=2) == [
        "srun", "--nodes=2", "--ntasks=4", "--mpi=pmi2", OFI, "python", "app.py",
    ]


def test_srun_env_is_exported_sorted_and_may_override_the_pmi2_default():
    assert srun_command(1, PY, nodes=1, env={"ZZ": "1", "AA": "x y"}) == [
        "srun", "--nodes=1", "--ntasks=1", "--mpi=pmi2",
        "--export=ALL,AA=x y,MPIR_CVAR_CH4_NETMOD=ofi,ZZ=1", "python", "app.py"]
    assert srun_command(1, PY, nodes=1, env={"MPIR_CVAR_CH4_NETMOD": "ucx"})[4] == \
        "--export=ALL,MPIR_CVAR_CH4_NETMOD=ucx"
    assert not any(a.startswith("--export") for a in srun_command(1, PY, nodes=1, mpi="none"))
    with pytest.raises(ValueError, match="bad variable name '1X'"):
        srun_command(1, PY, nodes=1, env={"1X": "v"})
    with pytest.raises(ValueError, match="cannot carry a comma"):
        srun_command(1, PY, nodes=1, env={"L": "a,b"})


def test_srun_full_line():
    cmd = srun_command(
        4, PY, nodes=2, nodelist="n[3-4]", mpi="none", overcommit=True,
        job_name="jacobi-7", extra=("--kill-on-bad-exit=1",),
    )
    assert cmd == [
        "srun", "--nodes=2", "--ntasks=4", "--nodelist=n3,n4", "--mpi=none",
        "--overcommit", "--job-name=jacobi-7", "--kill-on-bad-exit=1", "python", "app.py",
    ]


def test_srun_mpi_none_leaves_the_plugin_to_mpidefault():
    assert srun_command(1, PY, nodes=1, mpi=None, nodelist=["n1"]) == [
        "srun", "--nodes=1", "--ntasks=1", "--nodelist=n1", "python", "app.py",
    ]


def test_srun_errors_name_the_bad_value():
    with pytest.raises(ValueError, match="ntasks=1 < nodes=2"):
        srun_command(1, PY, nodes=2)
    with pytest.raises(ValueError, match=r"nodelist names 3 nodes \(n1,n2,n3\) but nodes=2"):
        srun_command(4, PY, nodes=2, nodelist="n[1-3]")
    with pytest.raises(ValueError, match="node names repeat: n1"):
        srun_command(2, PY, nodes=2, nodelist=["n1", "n1"])
    with pytest.raises(ValueError, match="bad plugin name 'pmi 2'"):
        srun_command(1, PY, nodes=1, mpi="pmi 2")
    with pytest.raises(ValueError, match="job_name .* got 'a b'"):
        srun_command(1, PY, nodes=1, job_name="a b")
    with pytest.raises(TypeError, match="extra must be a sequence"):
        srun_command(1, PY, nodes=1, extra="--exclusive")
    with pytest.raises(ValueError, match="nodes must be a positive int, got 0"):
        srun_command(1, PY, nodes=0)


# ---------------------------------------------------------------- ray

def test_ray_head_on_first_node_workers_on_the_others():
    cmds = ray_start_commands("n[1-3]", head_ip="10.0.0.1", port=6380, num_cpus=2)
    assert cmds == [
        ["srun", "--nodes=1", "--ntasks=1", "--overlap", "-w", "n1", "ray", "start",
         "--head", "--block", "--node-ip-address=10.0.0.1", "--port=6380", "--num-cpus=2"],
        ["srun", "--nodes=1", "--ntasks=1", "--overlap", "-w", "n2", "ray", "start",
         "--block", "--address=10.0.0.1:6380", "--num-cpus=2"],
        ["srun", "--nodes=1", "--ntasks=1", "--overlap", "-w", "n3", "ray", "start",
         "--block", "--address=10.0.0.1:6380", "--num-cpus=2"],
    ]


def test_ray_single_node_without_overlap_nor_cpus():
    assert ray_start_commands(["n1"], head_ip="h", overlap=False, ray="/v/bin/ray",
                              extra=["--include-dashboard=false"]) == [
        ["srun", "--nodes=1", "--ntasks=1", "-w", "n1", "/v/bin/ray", "start", "--head",
         "--block", "--node-ip-address=h", "--port=6379", "--include-dashboard=false"],
    ]


def test_ray_errors():
    with pytest.raises(ValueError, match="nodes is empty"):
        ray_start_commands([], head_ip="h")
    with pytest.raises(ValueError, match="port must be an int in 1..65535, got 70000"):
        ray_start_commands(["n1"], head_ip="h", port=70000)
    with pytest.raises(ValueError, match="head_ip must be a host address, got ''"):
        ray_start_commands(["n1"], head_ip="")
    with pytest.raises(ValueError, match="num_cpus must be a positive int, got 0"):
        ray_start_commands(["n1"], head_ip="h", num_cpus=0)


# ---------------------------------------------------------------- scontrol

def test_scontrol_lines():
    assert scontrol_command("suspend", 42) == ["scontrol", "suspend", "42"]
    assert scontrol_command("resume", "42_3") == ["scontrol", "resume", "42_3"]


@pytest.mark.parametrize("action,jobid,msg", [
    ("hold", 1, "action must be one of suspend, resume, got 'hold'"),
    ("suspend", 0, "jobid must be a positive job id .* got 0"),
    ("suspend", "4 2", "got '4 2'"),
    ("suspend", True, "got True"),
])
def test_scontrol_errors(action, jobid, msg):
    with pytest.raises(ValueError, match=msg):
        scontrol_command(action, jobid)


# ---------------------------------------------------------------- hostlists

@pytest.mark.parametrize("text,names", [
    ("n[1-3,5],gpu7", ["n1", "n2", "n3", "n5", "gpu7"]),
    ("n[01-03]", ["n01", "n02", "n03"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("n[098-101]", ["n098", "n099", "n100", "n101"]),
    ("n1", ["n1"]),
    ("vm", ["vm"]),
    (" n1 , n2 ", ["n1", "n2"]),
    ("", []),
    ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
    ("n[3]x", ["n3x"]),
    ("a[1-2],b[1,3]", ["a1", "a2", "b1", "b3"]),
])
def test_expand_hostlist(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize("text,msg", [
    ("n[1-3", "'\\[' is never closed"),
    ("n1-3]", "'\\]' without '\\[' at position 4"),
    ("n[[1]]", "nested '\\[' at position 2"),
    ("n[]", "empty brackets"),
    ("n[3-1]", "range '3-1' runs backwards"),
    ("n[a-b]", "bad range 'a-b'"),
    ("n[1-]", "bad range '1-'"),
    ("n[1,,2]", "bad range ''"),
    ("n1,,n2", "empty name between commas"),
    ("n 1", "bad characters in 'n 1'"),
])
def test_expand_hostlist_errors(text, msg):
    with pytest.raises(ValueError, match=msg):
        expand_hostlist(text)


def test_expand_hostlist_needs_a_string():
    with pytest.raises(TypeError, match="hostlist must be a str, got list"):
        expand_hostlist(["n1"])


# ---------------------------------------------------------------- partitions

def test_partition_nodes_in_order():
    assert partition_nodes("n[1-6]", 3, 2) == [["n1", "n2"], ["n3", "n4"], ["n5", "n6"]]
    assert partition_nodes(["a", "b", "c"], 1, 3) == [["a", "b", "c"]]


def test_partition_nodes_leaves_extra_nodes_out():
    assert partition_nodes("n[1-5]", 2, 2) == [["n1", "n2"], ["n3", "n4"]]


def test_partition_nodes_too_small_allocation():
    with pytest.raises(ValueError, match=r"allocation of 3 node\(s\) \(n1,n2,n3\) is too small "
                                         r"for 2 I/O partition\(s\) x 2 node\(s\) = 4 nodes"):
        partition_nodes("n[1-3]", 2, 2)
    with pytest.raises(ValueError, match=r"allocation of 0 node\(s\) \(none\)"):
        partition_nodes([], 1, 1)


def test_partition_nodes_bad_arguments():
    with pytest.raises(ValueError, match="io_nodes must be a positive int, got 0"):
        partition_nodes("n1", 0, 1)
    with pytest.raises(ValueError, match="nodes_per_io_node must be a positive int, got -2"):
        partition_nodes("n1", 1, -2)
    with pytest.raises(ValueError, match="node names repeat: n1"):
        partition_nodes(["n1", "n1"], 1, 1)


def test_builders_are_pure():
    """Building twice gives equal, independent lists (nothing cached or shared)."""
    a = srun_command(2, PY, nodes=1)
    b = srun_command(2, PY, nodes=1)
    a.append("x")
    assert b == ["srun", "--nodes=1", "--ntasks=2", "--mpi=pmi2", OFI, "python", "app.py"]
    assert launchers.SCONTROL_ACTIONS == ("suspend", "resume")


# ---------------------------------------------------------------- shell seam

def test_execute_wait_returns_code_and_both_streams():
    rc, out, err = execute_wait(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (rc, out, err) == (3, "out\n", "err\n")


def test_execute_wait_adds_env_and_uses_cwd(tmp_path):
    rc, out, _ = execute_wait(["sh", "-c", 'echo "$IOLAB_V $PWD $HOME"'],
                              env={"IOLAB_V": "42"}, cwd=tmp_path)
    assert rc == 0
    assert out.split() == ["42", str(tmp_path), os.environ["HOME"]]


def test_execute_wait_timeout_kills_the_group_and_keeps_output(tmp_path):
    marker = tmp_path / "child.pid"
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout, match="timed out after 0.5s") as info:
        execute_wait(["sh", "-c", f"sleep 30 & echo $! > {marker}; echo started; wait"],
                     timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert info.value.stdout == "started\n"
    _assert_gone(int(marker.read_text()))


def test_execute_wait_refuses_strings_and_reports_missing_programs():
    with pytest.raises(TypeError, match="not a string"):
        execute_wait("echo hi")
    with pytest.raises(ValueError, match="cmd is empty"):
        execute_wait([])
    with pytest.raises(FileNotFoundError):
        execute_wait(["/nonexistent/iolab-program"])


def test_spawn_own_group_and_log(tmp_path):
    log = tmp_path / "logs" / "app.log"
    p = spawn(["sh", "-c", "echo to-out; echo to-err >&2"], log_path=log)
    assert p.wait(timeout=10) == 0
    assert os.getpgid(0) != p.pid  # it was its own group leader, not in ours
    assert sorted(log.read_text().split()) == ["to-err", "to-out"]


def test_kill_tree_kills_grandchildren(tmp_path):
    marker = tmp_path / "pids"
    p = spawn(["sh", "-c", f"sleep 60 & echo $! > {marker}; sleep 60"])
    assert os.getpgid(p.pid) == p.pid
    grandchild = _wait_for_int(marker)
    rc = kill_tree(p, grace=5)
    assert rc == -signal.SIGTERM
    _assert_gone(grandchild)


def test_kill_tree_on_a_stopped_group_and_a_stubborn_child(tmp_path):
    ready = tmp_path / "ready"
    # Ignores SIGTERM: only the SIGKILL after the grace period ends it.
    p = spawn(["sh", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done"])
    _wait_for_file(ready)
    os.killpg(p.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    assert kill_tree(p, grace=0.5) == -signal.SIGKILL
    assert 0.4 < time.monotonic() - t0 < 5
    assert kill_tree(p) == -signal.SIGKILL  # again: harmless, same code


def test_kill_tree_rejects_negative_grace():
    p = spawn(["true"])
    p.wait()
    with pytest.raises(ValueError, match="grace must be >= 0 seconds, got -1"):
        kill_tree(p, grace=-1)


def _wait_for_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _wait_for_int(path: Path) -> int:
    deadline = time.monotonic() + 10
    while True:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text)
        assert time.monotonic() < deadline, f"{path} never got a PID"
        time.sleep(0.02)


def _assert_gone(pid: int, timeout: float = 5.0) -> None:
    """The process is dead (gone, or a zombie waiting for a lazy init to reap it)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        assert time.monotonic() < deadline, f"pid {pid} still alive (state {state})"
        time.sleep(0.05)


# ---------------------------------------------------------------- job states

@pytest.mark.parametrize("text,state", [
    ("PD", SlurmJobState.PENDING), ("R", SlurmJobState.RUNNING), ("CG", SlurmJobState.COMPLETING),
    ("CD", SlurmJobState.COMPLETED), ("F", SlurmJobState.FAILED), ("CA", SlurmJobState.CANCELLED),
    ("TO", SlurmJobState.TIMEOUT), ("S", SlurmJobState.SUSPENDED), ("NF", SlurmJobState.NODE_FAIL),
    ("OOM", SlurmJobState.OUT_OF_MEMORY), ("PR", SlurmJobState.PREEMPTED), ("BF", SlurmJobState.BOOT_FAIL),
    ("DL", SlurmJobState.DEADLINE), ("CF", SlurmJobState.CONFIGURING), ("ST", SlurmJobState.STOPPED),
    ("RQ", SlurmJobState.REQUEUED), ("RH", SlurmJobState.REQUEUED), ("SE", SlurmJobState.REQUEUED),
    ("RD", SlurmJobState.PENDING), ("RV", SlurmJobState.CANCELLED), ("SO", SlurmJobState.STAGE_OUT),
    ("PENDING", SlurmJobState.PENDING), ("running", SlurmJobState.RUNNING),
    ("OUT_OF_MEMORY", SlurmJobState.OUT_OF_MEMORY), ("CANCELLED by 0", SlurmJobState.CANCELLED),
    ("CANCELLED+", SlurmJobState.CANCELLED), ("  TIMEOUT \n", SlurmJobState.TIMEOUT),
    ("REQUEUE_HOLD", SlurmJobState.REQUEUED), ("UNKNOWN", SlurmJobState.UNKNOWN),
    ("XX", SlurmJobState.UNKNOWN), ("", SlurmJobState.UNKNOWN), ("BOGUS_STATE", SlurmJobState.UNKNOWN),
])
def test_parse_state(text, state):
    assert parse_state(text) is state


def test_state_predicates_partition_the_enum():
    for s in SlurmJobState:
        flags = [s.is_terminal, s.is_waiting, s.is_active, s.is_paused]
        assert sum(flags) == (0 if s is SlurmJobState.UNKNOWN else 1), s
    assert SlurmJobState.COMPLETED.succeeded and not SlurmJobState.FAILED.succeeded
    assert SlurmJobState.SUSPENDED.is_paused and not SlurmJobState.SUSPENDED.is_terminal
    assert SlurmJobState.TIMEOUT.is_terminal and SlurmJobState.COMPLETING.is_active


def test_parse_state_needs_a_string():
    with pytest.raises(TypeError, match="state must be a str, got int"):
        parse_state(3)
