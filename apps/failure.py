"""Failure-aware waiting: a rank that fails tells rank 0 before the job is aborted.

An MPI job whose rank raises must die, not hang: the failing rank calls
``MPI_Abort``.  But rank 0 is the one that talks to the coordinator, and it
should say *why* the application failed (``finish(False, reason)``) so that
the middleware can release the app's I/O grant at once instead of waiting for
a lease to expire.

So every wait of the application goes through :class:`Watch`:

* a failing rank other than 0 sends its reason to rank 0 on a private
  communicator, waits up to ``grace`` seconds (rank 0 normally aborts the job
  before that), then calls ``Abort`` itself;
* rank 0 never blocks in a plain ``Wait``: it tests its requests and, between
  tests, probes for failure messages; one turns into :class:`PeerFailed`,
  which the application handles like its own exception (report, then abort).

Non-zero ranks wait with a plain ``Waitall``: if anything goes wrong, the
abort from rank 0 (or from the failing rank) ends them.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Sequence

import numpy as np
from mpi4py import MPI

from iolab.mpich_segments import unlink_mapped

FAIL_TAG = 7001


class PeerFailed(RuntimeError):
    """Raised on rank 0 when another rank reported a failure."""

    def __init__(self, rank: int, message: str):
        super().__init__(f"rank {rank} failed: {message}")
        self.rank = rank
        self.message = message


class Watch:
    """Waits, barriers and broadcasts that notice failed ranks (see module doc)."""

    def __init__(self, comm: MPI.Comm, grace: float = 2.0, yield_every: int = 64):
        self.comm = comm.Dup()
        self.rank = self.comm.Get_rank()
        self.grace = grace
        self.yield_every = yield_every
        self._status = MPI.Status()

    # -- waiting -------------------------------------------------------------------
    def check(self) -> None:
        """Rank 0: raise :class:`PeerFailed` if a rank has reported a failure."""
        if self.rank == 0 and self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=FAIL_TAG, status=self._status):
            source = self._status.Get_source()
            message = self.comm.recv(source=source, tag=FAIL_TAG)
            raise PeerFailed(source, message)

    def wait(self, requests: Sequence[MPI.Request]) -> None:
        """Complete ``requests``; on rank 0, watch for failure reports meanwhile."""
        if self.rank != 0:
            MPI.Request.Waitall(list(requests))
            return
        requests = list(requests)
        polls = 0
        while not MPI.Request.Testall(requests):
            self.check()
            polls += 1
            if polls % self.yield_every == 0:
                os.sched_yield()  # be fair to the other ranks on an oversubscribed node

    def barrier(self) -> None:
        self.wait([self.comm.Ibarrier()])

    def bcast_array(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        self.wait([self.comm.Ibcast(array, root=root)])
        return array

    def bcast_object(self, obj=None, root: int = 0):
        """Broadcast a picklable object from ``root`` (length first, then the bytes)."""
        if self.rank == root:
            data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
            length = np.array([data.size], dtype=np.int64)
        else:
            length = np.zeros(1, dtype=np.int64)
        self.bcast_array(length, root)
        if self.rank != root:
            data = np.empty(int(length[0]), dtype=np.uint8)
        self.bcast_array(data, root)
        return obj if self.rank == root else pickle.loads(data.tobytes())

    # -- failing -------------------------------------------------------------------
    def fail(self, message: str) -> None:
        """A rank other than 0 failed: tell rank 0, give it ``grace`` seconds, then abort."""
        request = self.comm.isend(message, dest=0, tag=FAIL_TAG)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            request.Test()  # drive progress; rank 0 normally aborts us before the deadline
            time.sleep(0.01)
        abort(self.comm)


def abort(comm) -> None:
    """End the whole job now. MPICH's ``MPI_Abort`` may return before the kill lands: never go on.
    The node's MPICH segment is unlinked first: an aborted job never reaches ``MPI_Finalize``, which would."""
    sys.stdout.flush()
    sys.stderr.flush()
    unlink_mapped()
    comm.Abort(1)
    os._exit(1)
