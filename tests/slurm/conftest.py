"""Fixtures for tests against the local Slurm from ``slurm/start-cluster.sh``.

The tests need a running cluster; they never start one (bring-up installs packages
and starts root daemons, which a test run must not do behind your back). Without a
reachable cluster every test here is skipped, with the reason and the command that
fixes it:

    eval "$(slurm/start-cluster.sh)"     # sets SLURM_CONF
    .venv/bin/python -m pytest tests/slurm -q
    slurm/stop-cluster.sh

The config is taken from ``SLURM_CONF``, else from the script's default state dir
(``slurm/.local/slurm.conf``) when that file exists.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from iolab.emulator.launchers import expand_hostlist
from iolab.emulator.shell import CommandTimeout, execute_wait

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONF = REPO / "slurm" / ".local" / "slurm.conf"
EMULATE = REPO / "slurm" / "templates" / "emulate.sbatch"
HOW = 'start one with: eval "$(slurm/start-cluster.sh)"'


@dataclass(frozen=True)
class Cluster:
    """A reachable local cluster: the environment for its clients and its idle nodes."""

    conf: Path
    idle_nodes: tuple[str, ...]

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, cmd: list[str], timeout: float = 60) -> tuple[int, str, str]:
        """Run a client command (sinfo, sbatch, ...) against this cluster."""
        return execute_wait(cmd, timeout=timeout, env=self.env)

    def sbatch_wait(self, template: Path, args: list[str], *, nodes: int, job_name: str, workdir: Path) -> str:
        """``sbatch --wait`` of one of iolab's templates (``IOLAB_REPO`` set) on ``nodes`` nodes, run in
        ``workdir``; asserts it succeeded and returns the job's output (``workdir/job.out``)."""
        log = workdir / "job.out"
        rc, _, se = execute_wait(
            ["sbatch", "--wait", "--parsable", f"--nodes={nodes}", f"--job-name={job_name}", f"--output={log}",
             f"--chdir={workdir}", str(template), *args],
            timeout=150, env={**self.env, "IOLAB_REPO": str(REPO)})
        text = log.read_text() if log.exists() else "<no job output>"
        assert rc == 0, f"sbatch rc={rc} {se}\n{text[-3000:]}"
        return text

    def emulate(self, spec: dict, workdir: Path, job_name: str, nodes: int = 4) -> tuple[Path, str, list[str]]:
        """``slurm/templates/emulate.sbatch SPEC OUT`` on ``nodes`` nodes (skipped if fewer are idle), ``spec``
        written to ``workdir/spec.yaml``: the trace's path, the job's output, and the allocation's nodes in
        order (from the output's first line, "job J on n[1-4], spec ...")."""
        if len(self.idle_nodes) < nodes:
            pytest.skip(f"needs {nodes} idle nodes, the cluster has {self.idle_nodes}")
        path, out = workdir / "spec.yaml", workdir / "run.h5"
        path.write_text(yaml.safe_dump(spec))
        text = self.sbatch_wait(EMULATE, [str(path), str(out), "--keep-work"], nodes=nodes, job_name=job_name, workdir=workdir)
        return out, text, expand_hostlist(text.split(" on ", 1)[1].split(",", 1)[0])


def _controller_refuses(conf: Path) -> str | None:
    """Why slurmctld cannot be reached, found in ~ms by a TCP connect (``sinfo``
    retries for ~10 s before it gives up); None if it listens or the conf is odd."""
    text = conf.read_text()
    host = re.search(r"^SlurmctldHost=([^(\s]+)(?:\(([^)]+)\))?", text, re.M)
    port = re.search(r"^SlurmctldPort=(\d+)", text, re.M)
    if not host:
        return None
    addr = (host.group(2) or host.group(1), int(port.group(1)) if port else 6817)
    try:
        with socket.create_connection(addr, timeout=2):
            return None
    except OSError as exc:
        return f"slurmctld at {addr[0]}:{addr[1]} is not listening ({exc.strerror or exc})"


def _find_cluster() -> Cluster | str:
    """The cluster, or the reason there is none."""
    conf_text = os.environ.get("SLURM_CONF")
    if conf_text:
        conf = Path(conf_text)
    elif DEFAULT_CONF.is_file():
        conf = DEFAULT_CONF
    else:
        return f"no local Slurm: SLURM_CONF is unset and {DEFAULT_CONF} does not exist; {HOW}"
    if not conf.is_file():
        return f"no local Slurm: SLURM_CONF={conf} does not exist; {HOW}"
    refused = _controller_refuses(conf)
    if refused:
        return f"no local Slurm (SLURM_CONF={conf}): {refused}; {HOW}"
    try:
        rc, out, err = execute_wait(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=15,
                                    env={"SLURM_CONF": str(conf)})
    except FileNotFoundError:
        return f"no local Slurm: sinfo is not installed; {HOW}"
    except CommandTimeout:
        return f"no local Slurm: sinfo (SLURM_CONF={conf}) did not answer in 15 s; {HOW}"
    if rc != 0:
        return f"no local Slurm: sinfo failed (SLURM_CONF={conf}): {err.strip()}; {HOW}"
    idle = tuple(line.split()[0] for line in out.splitlines()
                 if len(line.split()) == 2 and line.split()[1] == "idle")
    if len(idle) < 2:
        return f"local Slurm (SLURM_CONF={conf}) has {len(idle)} idle node(s), tests need 2: {out!r}"
    return Cluster(conf=conf, idle_nodes=idle)


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    found = _find_cluster()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def job_name(cluster: Cluster) -> Iterator[str]:
    """A unique job name; every job of that name is cancelled after the test."""
    name = f"iolab-test-{uuid.uuid4().hex[:8]}"
    yield name
    cluster.run(["scancel", f"--name={name}"], timeout=30)
