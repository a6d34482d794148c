"""Least attained service at an I/O node: the app (or job) that has had the least I/O time so far goes first.

The worked example of docs/policies.md, an exclusive order (one transfer at a time per I/O node, as
carretero2020's list policies).  A request's ``io_received`` is the seconds of I/O its app completed
before asking; the smallest goes first, ties to the earlier request, then the lower system id.  It favours
apps that do little I/O (their few transfers are not stuck behind a heavy writer), as the ``bandwidth``
order does, without reading the time: its key is taken once, when the request arrives.

    iolab policy check examples/policies/las.py
    (spec) policy: policies/las.py:LAS   (an I/O experiment) or platform.io_node.policy (a batch platform)
"""

from iolab.policy import IOOrder


class LAS(IOOrder):
    """Least attained I/O service first."""

    def key(self, request, now):
        return request.io_received
