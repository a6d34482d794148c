"""A real run whose ``/dev/shm`` and ``/tmp`` are folders of the test's own, for the tests that check what a
run leaves behind (MPICH's ``/dev/shm/mpich_shm_*`` segments, hydra's ``/tmp/hydra_hwloc_xmlfile_*`` files).

The host's own ``/dev/shm`` and ``/tmp`` hold such files from every other run on the machine (other users,
other test sessions; some of them killed), and new ones appear while a test runs, so a before/after diff of
the host's folders cannot say whose a file is.  :meth:`PrivateTmp.wrap` runs the command in a mount namespace
of its own where ``/dev/shm`` is ``ROOT/shm`` and ``/tmp`` is ``ROOT/tmp`` (the test's ``tmp_path`` bound at
its own path inside it, so the spec, trace and work folder keep their paths): every file of those kinds in
there was made by this run, and the diff is exact.  The command ``exec``\\ s, so its PID is the driver's.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import REPO

KINDS = {"shm": "mpich_shm_", "tmp": "hydra_hwloc_xmlfile_"}


def _usable() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare command"
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True)
    return None if r.returncode == 0 else f"cannot make a mount namespace here: {r.stderr.strip()[:200]}"


class PrivateTmp:
    def __init__(self, tmp_path: Path):
        why = _usable()
        if why:
            pytest.skip(why)
        self.tmp_path = tmp_path.resolve()
        self.root = self.tmp_path / "host"
        (self.root / "shm").mkdir(parents=True)
        (self.root / "tmp").mkdir()
        # what the command needs that may live under /tmp stays reachable at its own path inside: the test's
        # tmp_path, the interpreter's venv (a CI checkout, or `make test-wheel`'s venv, may be under /tmp) and
        # the checkout itself
        needed = {self.tmp_path, Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent, REPO.resolve()}
        self.kept: list[tuple[Path, Path]] = []
        for path in sorted(p for p in needed if p.is_relative_to("/tmp") and p != Path("/tmp")):
            if any(path.is_relative_to(outer) for outer, _ in self.kept):
                continue  # inside one kept already
            inside = self.root / "tmp" / path.relative_to("/tmp")
            inside.mkdir(parents=True, exist_ok=True)
            self.kept.append((path, inside))
        self.before = self.files()

    def wrap(self, cmd: list[str]) -> list[str]:
        binds = [f"mount --bind {shlex.quote(str(self.root / 'shm'))} /dev/shm"]
        for path, inside in self.kept:  # recursive: a tmpfs a test mounted inside tmp_path is kept
            binds.append(f"mount --rbind {shlex.quote(str(path))} {shlex.quote(str(inside))}")
        binds.append(f"mount --rbind {shlex.quote(str(self.root / 'tmp'))} /tmp")
        script = " && ".join(binds) + ' && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *cmd]

    def files(self) -> set[str]:
        """The MPICH segments and hydra files in the run's /dev/shm and /tmp, as ``shm/NAME``, ``tmp/NAME``."""
        return {f"{d}/{p.name}" for d, prefix in KINDS.items() for p in (self.root / d).glob(prefix + "*")}

    def new(self) -> set[str]:
        """Those made since this object was (the run started after it)."""
        return self.files() - self.before


class Watch:
    """The run's files as seen while it runs (``poll`` in the test's wait loop): proof that the check after
    the run is not vacuous."""

    def __init__(self, private: PrivateTmp):
        self.private, self.seen = private, set()

    def poll(self) -> None:
        self.seen |= self.private.new()

    def kinds(self) -> set[str]:
        return {f.split("/")[0] for f in self.seen}
