"""A user's sharing policy for benchmarks/sharing_speed.py: 1/k each, ``shared``'s split, through the public API."""

from iolab.policy import Sharing


class EqualShares(Sharing):
    """Every stream on the I/O node an equal share."""

    def shares(self, streams, now):
        return [1.0 / len(streams)] * len(streams)
