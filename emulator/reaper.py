"""A killed driver leaves nothing behind: a small supervisor process that outlives it.

The driver of a real run (``iolab emulate``, a policy of ``iolab validate``) starts
``python -m iolab.emulator.reaper`` in a session of its own and writes to its standard input, every
second or so, one JSON line of what the run has (:class:`Supervisor`): every
process it started, with their start times (Ray's GCS, raylet, agents and workers; each app's
``mpiexec``, proxies and ranks), the apps' process groups, and the MPICH and hydra files those
processes use (:mod:`.run_residue`).  When the run ends in any way the driver survives (normally, on
an error, Ctrl-C, SIGTERM), the driver cleans up itself and tells the reaper to go.  When the driver
dies without a word (``kill -9``, the OOM killer), the pipe closes with it: the reaper stops
every recorded process that is still the same process (SIGTERM, then SIGKILL after 3 s), removes the
recorded files, and exits.  The trace the driver wrote while the run went (a partial trace,
``complete = False``) stays.

Linux only (``/proc``); elsewhere the supervisor is not started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from iolab.emulator.run_residue import Residue, descendants, mpi_processes, remove_files, start_time

UPDATE_EVERY = 1.0  # seconds between the driver's updates to the reaper


class Supervisor:
    """The driver's side: start the reaper, keep it told from a thread of its own (reading ``/proc``
    only: no Ray call, nothing the run's loop waits for), end it (see the module doc)."""

    def __init__(self, work: Path):
        self.residue = Residue()
        self.groups: set[int] = set()
        self.proc: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if not Path("/proc/self/stat").exists():
            return
        (work / "logs").mkdir(parents=True, exist_ok=True)
        with open(work / "logs" / "reaper.log", "ab") as log:
            self.proc = subprocess.Popen(  # its own session: a terminal's Ctrl-C or a killpg of the driver's
                [sys.executable, "-m", "iolab.emulator.reaper"],  # group leaves it, to clean up after them
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=work,
                start_new_session=True)
        self._thread = threading.Thread(target=self._run, name="iolab-reaper-feed", daemon=True)
        self._thread.start()

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.update()
            self._stop.wait(UPDATE_EVERY)

    def _send(self, data: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(data) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):  # the reaper is gone: nothing to tell
            pass

    def add_group(self, pgid: int) -> None:
        """An app's process group (its ``mpiexec``'s PID): signalled as a whole by the reaper."""
        self.groups.add(pgid)

    def update(self) -> None:
        """Tell the reaper the run's processes and files as they are now."""
        if self.proc is None:
            return
        with self._lock:
            me = os.getpid()
            procs = [(p, st) for p, st in descendants(me) if p != self.proc.pid]
            self.residue.scan(mpi_processes(me))
            if not self._stop.is_set():
                self._send({"procs": procs, "groups": sorted(self.groups), "files": sorted(self.residue.files)})

    def close(self) -> list[str]:
        """The run ended with the driver alive (it stopped its processes): remove the run's files,
        let the reaper go."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        gone = self.residue.remove()
        if self.proc is not None:
            self._send({"done": True})
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return gone


def _alive(pid: int, start: int) -> bool:
    return start_time(pid) == start


def reap(state: dict, log) -> None:
    """Stop the recorded processes that are still those processes, remove the recorded files."""
    procs = [(int(p), int(st)) for p, st in state.get("procs", []) if _alive(int(p), int(st))]
    residue = Residue(set(state.get("files", [])))
    residue.scan(p for p, _ in procs)  # files the last update had not seen yet
    for pgid in state.get("groups", []):
        try:
            os.killpg(int(pgid), signal.SIGTERM)
            os.killpg(int(pgid), signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass
    for p, st in procs:
        if _alive(p, st):
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(_alive(p, st) for p, st in procs):
        time.sleep(0.1)
    for pgid in state.get("groups", []):
        try:
            os.killpg(int(pgid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    left = [p for p, st in procs if _alive(p, st)]
    for p in left:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    gone = remove_files(residue.files)
    print(f"reaper: the driver died; stopped {len(procs)} process(es) ({len(left)} with SIGKILL), removed "
          f"{len(gone)} file(s): {' '.join(gone)}", file=log, flush=True)


def main() -> int:
    """Read the driver's states (one JSON line each) until its pipe closes; if the last one is not
    ``done``, the driver died: reap."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the driver's to handle
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # so is a SIGTERM sent to the whole session
    state: dict = {}
    for line in sys.stdin.buffer:  # EOF: every write end closed, i.e. the driver closed it or died
        try:
            state = json.loads(line)
        except ValueError:
            continue
    if state and not state.get("done"):
        reap(state, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
