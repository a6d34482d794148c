"""Nothing a local run listens on is reachable from another host (docs/emulator.md, "Network exposure").

The real program (``iolab emulate``, a subprocess) re-executes itself in a network namespace of its
own.  While a small real run goes, every port the run's process tree listens on is connected to
from the host's non-loopback address (a connection from another host arrives there): each must be
refused, and every process that listens must be in the run's namespace.  A port that another program
(another test's run) also listens on in the host's namespace is left out of the probe: it would answer
whatever the run does.  The driver's namespace is read on /proc (/proc/PID/net/dev, /proc/PID/net/tcp{,6}).
Without a namespace (``unshare`` refused), Ray and the ranks stay on 127.0.0.1 and one line says
what stays reachable.  Cheap checks of where the process lands (namespace or not, same PID) use a
spec path that is a FIFO: the command blocks reading it after the re-execution, while the test
looks at it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from iolab.emulator import netns
from iolab.trace import read_trace
from listening import command, interfaces, is_loopback, listening, listening_inodes, network_namespace, process_tree
from small_runs import small_io

IOLAB = str(Path(sys.executable).parent / "iolab")


def host_address() -> str:
    """The host's own non-loopback IPv4 address (the one a route out would use), else ""."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # UDP: no packet is sent, the kernel only picks a route
            address = s.getsockname()[0]
        except OSError:
            return ""
    return "" if address.startswith("127.") else address


HOST = host_address()


def reachable_from_host(port: int) -> bool:
    """Whether a TCP connection from the host's address to the host's address on ``port`` is accepted
    (what another host on the network would get, firewall aside)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(2)
        s.bind((HOST, 0))
        try:
            s.connect((HOST, port))
            return True
        except OSError:
            return False


def namespace_refused() -> str | None:
    return netns.probe()


def env(**extra) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("IOLAB_NETWORK", "SLURM_JOB_ID", "SLURM_NNODES",
                                                          netns.MARKER)}
    return {**e, **extra}


def spec_file(tmp_path: Path, name: str, iterations: int) -> Path:
    spec = small_io(name)
    spec["apps"] = [{**a, "iterations": iterations} for a in spec["apps"]]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def watch_run(tmp_path: Path, name: str, environ: dict[str, str]):
    """Start ``iolab emulate`` on a small spec; once its ranks run, return (driver, sockets seen, tree
    commands, output paths).  Sockets are sampled several times while the apps run."""
    path = spec_file(tmp_path, name, 12)  # ~12 s of ranks: the sampling needs 2.5 s of them
    out, work = tmp_path / f"{name}.h5", tmp_path / f"{name}.work"
    driver = subprocess.Popen([IOLAB, "emulate", str(path), "--out", str(out), "--work-dir", str(work), "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
    sockets: dict[tuple[int, str, int], str] = {}
    commands: set[str] = set()
    deadline = time.monotonic() + 180
    ranks_seen = 0
    while time.monotonic() < deadline and driver.poll() is None and ranks_seen < 5:
        rows = listening(driver.pid)
        for pid, cmd, addr, port in rows:
            sockets[(pid, addr, port)] = cmd
        tree = [command(p) for p in process_tree(driver.pid)]
        commands.update(tree)
        if sum("iolab.apps.jacobi" in c for c in tree) >= 2 and any(
                "jacobi" in c for (_, _, _), c in sockets.items()):
            ranks_seen += 1
        time.sleep(0.5)
    return driver, sockets, commands, out


def finish(driver: subprocess.Popen, out: Path) -> str:
    stdout, stderr = driver.communicate(timeout=240)
    assert driver.returncode == 0, stderr[-2000:]
    assert read_trace(out).attrs["complete"] is True
    return stderr


@pytest.mark.mpi
@pytest.mark.ray
@pytest.mark.long  # a real run of about a minute: make test runs it, make test-wheel does not
def test_no_socket_of_a_local_run_is_reachable_from_the_host_address(tmp_path):
    if not HOST:
        pytest.skip("this machine has no non-loopback address to connect from")
    if (reason := namespace_refused()) is not None:
        pytest.skip(f"no network namespace can be made here ({reason}): see the fallback test")
    driver, sockets, commands, out = watch_run(tmp_path, "exposure", env())
    try:
        assert driver.poll() is None, "the run ended before its sockets were sampled"
        # the driver (the same PID: exec) is in a namespace of its own, where only loopback exists
        run_ns = network_namespace(driver.pid)
        assert run_ns not in ("", network_namespace())
        assert interfaces(driver.pid) == ["lo"]
        ports = sorted({port for (_, _, port) in sockets})
        assert len(ports) >= 5, sockets  # Ray's GCS, raylet, workers; Hydra's control ports; the ranks
        assert any("iolab.apps.jacobi" in c for c in sockets.values()), "no rank was seen listening"
        # every process of the run seen listening is in the run's namespace (one that has ended reads "")
        outside = {(pid, c[:60]) for (pid, _, _), c in sockets.items() if network_namespace(pid) not in (run_ns, "")}
        assert outside == set()
        probed = [port for port in ports if reachable_from_host(port)]
        # a port that another program listens on in the host's namespace (another test's real run, a
        # service) answers whatever the run does; the run's sockets are all in its own namespace (above),
        # so such a port is a number both happen to use, not the run's
        others = {port for _, port in listening_inodes().values()}
        reachable = [(port, [c[:60] for (_, _, p), c in sockets.items() if p == port])
                     for port in probed if port not in others]
        assert reachable == []
        # inside the namespace, every listening socket (the run's and any other) is on loopback or on
        # the wildcard address of a namespace that has nothing but loopback
        inside = listening_inodes(driver.pid)
        assert inside and all(is_loopback(a) or a in ("0.0.0.0", "::") for a, _ in inside.values())
        # no dashboard process (Ray's API server, dashboard/dashboard.py) in the run's tree
        assert not [c for c in commands if "dashboard/dashboard.py" in c]
        print(f"\n{len(ports)} listening ports of the run, none reachable from {HOST}; addresses inside: "
              f"{sorted({a for a, _ in inside.values()})}")
    finally:
        if driver.poll() is None:
            stderr = finish(driver, out)
        else:
            stderr = driver.communicate()[1]
    assert "network:" not in stderr  # no fallback line when the namespace was made


@pytest.mark.mpi
@pytest.mark.ray
@pytest.mark.long  # a real run of about a minute: make test runs it, make test-wheel does not
def test_without_a_namespace_only_hydras_control_port_is_reachable_and_one_line_says_so(tmp_path):
    if not HOST:
        pytest.skip("this machine has no non-loopback address to connect from")
    refusing = tmp_path / "bin"
    refusing.mkdir()
    fake = refusing / "unshare"  # what a kernel without user namespaces answers
    fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    fake.chmod(0o755)
    environ = env(PATH=f"{refusing}{os.pathsep}{os.environ.get('PATH', '')}")
    driver, sockets, commands, out = watch_run(tmp_path, "fallback", environ)
    try:
        assert driver.poll() is None, "the run ended before its sockets were sampled"
        assert network_namespace(driver.pid) == network_namespace()
        ray_own = {k: c for k, c in sockets.items() if "/ray/" in c or c.startswith("ray::") or "iolab emulate" in c}
        assert ray_own and all(is_loopback(a) for (_, a, _) in ray_own), ray_own  # GCS, raylet, workers, driver
        assert not [c for c in commands if "dashboard/dashboard.py" in c]
        exposed = {(c.split()[0].rsplit("/", 1)[-1] if "jacobi" not in c else "rank", a, p)
                   for (_, a, p), c in sockets.items() if not is_loopback(a)}
        # what stays reachable: Hydra's control port, bound to 0.0.0.0 by mpiexec and its proxy (the
        # ranks hold it, inherited); nothing on the host's own address
        assert exposed and {name for name, _, _ in exposed} <= {"mpiexec", "hydra_pmi_proxy", "rank"}, exposed
        assert {a for _, a, _ in exposed} == {"0.0.0.0"}
        assert all(reachable_from_host(p) for _, _, p in exposed)
    finally:
        stderr = finish(driver, out) if driver.poll() is None else driver.communicate()[1]
    lines = [line for line in stderr.splitlines() if line.startswith("network:")]
    assert len(lines) == 1 and "Operation not permitted" in lines[0] and "Hydra's control port" in lines[0], stderr


# ------------------------------------------------------------------ where the process lands (cheap)

def reading_stdin(pid: int) -> bool:
    """Whether ``pid`` waits in a read of a pipe (its main thread)."""
    try:
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def as_from_a_terminal() -> None:
    """A child's SIGINT as a command typed at a terminal has it: a suite started in the background by a
    non-interactive shell (``make test &``, ``nohup``) ignores SIGINT, its children inherit that, and
    iolab leaves SIGINT as it got it (iolab/signals.py): Ctrl-C would then reach nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def blocked(out: Path, *args: str, environ: dict[str, str] | None = None) -> subprocess.Popen:
    """``iolab emulate - ...`` with a pipe as stdin that nothing is written to: the command blocks
    reading its spec, after any re-execution; returns once it waits there.  A pipe read with a child
    alive is not that read: it is the command waiting for its network-namespace probe (a child,
    ``iolab.emulator.netns.probe``), before it re-executes itself."""
    p = subprocess.Popen([IOLAB, "emulate", "-", "--out", str(out), *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ or env(),
                         preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        if reading_stdin(p.pid) and process_tree(p.pid) == [p.pid]:
            return p
        time.sleep(0.05)
    p.kill()
    pytest.fail(f"iolab did not get to reading its spec: {p.communicate()}")


def stop(p: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[int, str]:
    os.kill(p.pid, sig)
    _, err = p.communicate(timeout=30)
    return p.returncode, err


def test_the_local_run_is_the_same_process_in_a_namespace_that_has_only_loopback(tmp_path):
    if (reason := namespace_refused()) is not None:
        pytest.skip(f"no network namespace can be made here: {reason}")
    p = blocked(tmp_path / "o.h5")
    try:
        assert network_namespace(p.pid) not in ("", network_namespace())  # the PID we started: exec, not a child
        assert interfaces(p.pid) == ["lo"]
        assert process_tree(p.pid) == [p.pid]  # no unshare or shell left in between
    finally:
        code, err = stop(p, signal.SIGINT)  # Ctrl-C reaches the command: exit 130, no traceback
    assert code == 130 and "Traceback" not in err, err


@pytest.mark.parametrize("how", ["IOLAB_NETWORK=open", "SLURM_JOB_ID=7", "--address"])
def test_runs_that_span_hosts_stay_in_the_hosts_network(tmp_path, how):
    if how == "--address":
        p = blocked(tmp_path / "o.h5", "--address", "10.0.0.1:6379")
    else:
        key, value = how.split("=")
        p = blocked(tmp_path / "o.h5", environ=env(**{key: value}))
    try:
        assert network_namespace(p.pid) == network_namespace()
    finally:
        code, err = stop(p)
    assert code != 0 and "Traceback" not in err


def test_a_bad_iolab_network_is_refused_naming_the_variable(tmp_path):
    r = subprocess.run([IOLAB, "emulate", "--out", str(tmp_path / "o.h5")], capture_output=True, text=True,
                       env=env(IOLAB_NETWORK="wide"), timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "IOLAB_NETWORK must be one of loopback, open, got 'wide'" in r.stderr
    assert not (tmp_path / "o.h5").exists()


def test_a_user_without_root_gets_a_namespace_with_loopback_up(tmp_path):
    """``unshare --user --map-root-user --net`` for a non-root user: mapped to root inside, it can bring
    ``lo`` up.  Run as ``nobody`` with the system's Python on the module's file (it needs only the
    standard library; the project's interpreter may live under a home folder ``nobody`` cannot read)."""
    setpriv, system_python = shutil.which("setpriv"), shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not setpriv or not system_python:
        pytest.skip("needs root, setpriv and /usr/bin/python3 to act as another user")
    as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    prefix = subprocess.run([*as_nobody, system_python, "-c",
                             "import runpy, sys; m = runpy.run_path(sys.argv[1]); print(' '.join(m['unshare_prefix']()))",
                             netns.__file__], capture_output=True, text=True, timeout=60)
    assert prefix.returncode == 0, prefix.stderr
    words = prefix.stdout.split()
    assert words[1:] == ["--user", "--map-root-user", "--net", "--"]
    r = subprocess.run([*as_nobody, *words, system_python, netns.__file__], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "unshare failed" in r.stderr:
        pytest.skip(f"user namespaces are refused here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr  # lo brought up, and no interface but lo
    # and in that namespace, the host's address is not there at all
    if HOST:
        probe = subprocess.run([*as_nobody, *words, system_python, "-c",
                                f"import socket; s = socket.socket(); s.settimeout(2); s.connect(({HOST!r}, 9))"],
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode != 0 and "unreachable" in probe.stderr.lower(), probe.stderr


# ------------------------------------------------------------------ which command lines get a namespace

@pytest.mark.parametrize("args, spans", [
    (["emulate", "spec.yaml"], False),
    (["--version"], True),
    (["simulate", "spec.yaml"], True),                      # runs nothing that listens
    (["report", "run.h5"], True),
    (["emulate", "--help"], True),
    (["study", "lackner", "--quick"], False),
    (["sweep", "c.yaml", "--address", "10.0.0.1:6379"], True),
    (["validate", "s.yaml", "--address=auto"], True),
    (["emulate", "s.yaml", "--launcher", "srun"], True),
    (["emulate", "s.yaml", "--launcher=mpiexec"], False),
    (["emulate", "s.yaml", "--out", "emulate.h5"], False),
])
def test_which_command_lines_span_hosts(monkeypatch, args, spans):
    from iolab.cli.network import spans_hosts

    for key in ("IOLAB_NETWORK", "SLURM_JOB_ID", "SLURM_NNODES"):
        monkeypatch.delenv(key, raising=False)
    assert spans_hosts(args) is spans
    if not spans:  # the same command line in a Slurm allocation, or opened, spans hosts
        monkeypatch.setenv("SLURM_JOB_ID", "7")
        assert spans_hosts(args) is True
        monkeypatch.delenv("SLURM_JOB_ID")
        monkeypatch.setenv("IOLAB_NETWORK", "open")
        assert spans_hosts(args) is True


def test_ctrl_c_while_the_command_probes_for_a_namespace_exits_130_without_a_traceback(tmp_path):
    """The probe (a child, before the command re-executes itself) is outside the command's own Ctrl-C
    handling: a SIGINT then gave Python's traceback and death by the signal, not exit 130."""
    if (reason := namespace_refused()) is not None:
        pytest.skip(f"no network namespace can be made here: {reason}")
    for _ in range(5):  # the probe lasts a Python start (~50 ms): try until the signal lands in it
        p = subprocess.Popen([IOLAB, "emulate", "-", "--out", str(tmp_path / "o.h5")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
                             preexec_fn=as_from_a_terminal)
        deadline, sent = time.monotonic() + 60, False
        while time.monotonic() < deadline and p.poll() is None:
            if len(process_tree(p.pid)) > 1:  # the probe's child is alive
                os.kill(p.pid, signal.SIGINT)
                sent = True
                break
            time.sleep(0.002)
        _, err = p.communicate(timeout=60)
        if sent:
            break
    else:
        pytest.skip("the probe ended before a signal could be sent during it, five times")
    assert p.returncode == 130 and "Traceback" not in err and "interrupted" in err, (p.returncode, err)
