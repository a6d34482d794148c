"""The job-side proxy of a batch run with I/O nodes: ``--coordinator iolab.middleware.io_node_client:coordinator``.

A :class:`~iolab.middleware.storage_client.StorageCoordinator` (the job's tier directory, quota,
phase reports, the tier's token bucket) that also goes through the job's I/O nodes
(:mod:`iolab.middleware.io_node_actor`):

- every rank knows the I/O node it forwards through (``io_nodes[rank]`` in the config); the ranks on
  one I/O node form the job's *part* there;
- ``begin_part`` (every rank, at the start of an I/O phase): the part's lowest rank asks the I/O
  node's arbiter for the phase, for the part's bytes (its ranks' shares of the phase); the others wait
  for that grant.  Parts are granted independently;
- ``throttle`` (every rank): books its bytes on the I/O node's link *and* on the tier's link (both
  calls in flight at once) and moves them when both intervals have started; they are carried when
  both have ended (two resources in series, approximated by their two buckets).  On the tier the
  stream is the *part*, ``<job>@io<node>``: a job's parts through two I/O nodes are two clients of the
  file system, so two streams for the tier's law and for the load controller's count, as in the
  simulator;
- ``end_part`` (every rank, once its bytes are carried): the part's grant is released when its last
  rank is done.

Config keys: those of the storage coordinator, plus ``io_actor`` (the I/O-node actor's name) and
``io_nodes`` (the I/O node of every rank, in rank order).
"""

from __future__ import annotations

import time
from typing import Any

from iolab.apps.checkpoint import share

from iolab.middleware.storage_client import StorageCoordinator


def part_stream(job: str, io_node: int) -> str:
    """The name of a job's part on its tier's bucket: one stream per (job, I/O node)."""
    return f"{job}@io{int(io_node)}"


class IONodeCoordinator(StorageCoordinator):
    module = "iolab.middleware.io_node_client"

    _phase: int | None = None  # the phase this rank's part is in (None: none, or a part of 0 bytes)

    def __init__(self, config: dict[str, Any], rank: int, size: int):
        import ray  # lazy: an app rank loads Ray only when it joins the run's Ray

        nodes = config.get("io_nodes")
        if not config.get("io_actor") or not isinstance(nodes, list) or len(nodes) != size:
            raise RuntimeError(f"{self.module}: coordinator config needs io_actor and io_nodes (one I/O node per "
                               f"rank, {size} ranks), got {config.get('io_actor')!r}, {nodes!r}")
        super().__init__(config, rank, size)
        try:
            self.io = ray.get_actor(config["io_actor"], namespace=config["namespace"])
        except ValueError:
            raise RuntimeError(f"no I/O-node actor {config['io_actor']!r} in Ray namespace "
                               f"{config['namespace']!r}") from None
        self.size = size
        self.node = int(nodes[rank])
        self.part = [r for r in range(size) if int(nodes[r]) == self.node]  # the ranks of this rank's part
        self.leader = self.part[0] == rank
        self.stream = part_stream(self.job, self.node)  # this rank's stream on the tier

    def begin_part(self, phase: int, kind: str, nbytes: int) -> None:
        """Block until this rank's part holds its grant for ``phase`` (``nbytes``: the whole job's)."""
        part_bytes = sum(share(int(nbytes), self.size, r) for r in self.part)
        self._phase = phase if part_bytes > 0 else None
        if part_bytes <= 0:  # nothing to move on this I/O node: nothing to arbitrate (every rank agrees)
            return
        if self.leader:
            self._call(self.io.request.remote(self.job, self.node, int(phase), kind, int(part_bytes)))
        else:
            self._call(self.io.wait_grant.remote(self.job, self.node, int(phase)))

    def end_part(self, phase: int) -> None:
        """This rank has moved its bytes of ``phase``: wait until both links carried them, then say so
        (the part's last rank releases its grant)."""
        self._carried()
        if self._phase == phase:
            self._call(self.io.part_done.remote(self.job, self.node, int(phase), self.rank))
        self._phase = None

    def throttle(self, nbytes: int) -> None:
        if nbytes <= 0:
            return self._carried()
        at = time.time()
        refs = []
        if self._phase is not None:  # the part holds (or asks again for) its grant
            refs.append(self.io.book.remote(self.job, self.node, int(nbytes), at))
        if self.capped:
            refs.append(self.actor.book.remote(self.link, int(nbytes), self.stream, at))
        if not refs:
            return
        spans = [self._call(r) for r in refs]
        start = max(s for s, _ in spans)
        self._served_at = max(e for _, e in spans)
        delay = start - time.time()
        if delay > 0:
            time.sleep(delay)


def coordinator(config: dict[str, Any], rank: int, size: int) -> IONodeCoordinator:
    return IONodeCoordinator(config, rank, size)
