"""The transport of Batsim's protocol, Batsim's end: a ZeroMQ REQ socket connected to the scheduler's REP socket
(pybatsim binds ``-s ENDPOINT``, default ``tcp://*:28000``; Batsim, and iolab, connect).

Each message waits for its answer at most ``timeout`` seconds: a scheduler that does not answer (not started,
crashed, stuck) stops the run with :class:`~iolab.middleware.policies.batsim.SchedulerTimeout` naming the message
it did not answer, instead of a run that hangs.  It counts the bytes each way and the wall seconds spent waiting.
"""

from __future__ import annotations

import re
import time

from iolab.errors import IolabError
from iolab.middleware.policies.batsim.messages import SchedulerTimeout

try:
    import zmq
except ImportError:  # pragma: no cover - the extra is in the test install
    zmq = None

_ENDPOINT = re.compile(r"(tcp://[^\s:/]+:\d{1,5}|ipc://\S+)\Z")


class EndpointError(IolabError):
    """A socket endpoint iolab cannot connect to (exit 2)."""


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` itself if it is ``tcp://HOST:PORT`` or ``ipc://PATH``; else :class:`EndpointError`."""
    if not isinstance(endpoint, str) or not _ENDPOINT.match(endpoint):
        raise EndpointError(f"--socket: {endpoint!r} is not a ZeroMQ endpoint iolab connects to: give "
                            "tcp://HOST:PORT (pybatsim's -s) or ipc://PATH")
    if endpoint.startswith("tcp://") and not 0 < int(endpoint.rsplit(":", 1)[1]) < 65536:
        raise EndpointError(f"--socket: {endpoint!r}: a port from 1 to 65535")
    return endpoint


class SchedulerSocket:
    """A REQ socket connected to ``endpoint``; :meth:`exchange` is the adapter's transport."""

    def __init__(self, endpoint: str, timeout: float):
        if zmq is None:
            raise EndpointError("Batsim's protocol needs pyzmq: pip install 'iolab[batsim]'")
        self.endpoint = check_endpoint(endpoint)
        if not (timeout > 0):
            raise EndpointError(f"--timeout: {timeout!r}: seconds > 0")
        self.timeout = float(timeout)
        self.context = zmq.Context()
        self.sock = self.context.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(self.endpoint)
        self.waited = 0.0  # wall seconds between a message sent and its answer
        self.sent = self.received = 0  # bytes

    def exchange(self, text: str, now: float, about: str) -> str:
        data = text.encode()
        t0 = time.perf_counter()
        if not self.sock.poll(int(self.timeout * 1000), zmq.POLLOUT):
            raise SchedulerTimeout(now, self.endpoint, f"could not send {about} within {self.timeout:g} s")
        self.sock.send(data)
        if not self.sock.poll(int(self.timeout * 1000), zmq.POLLIN):
            self.waited += time.perf_counter() - t0
            raise SchedulerTimeout(now, self.endpoint, f"the scheduler did not answer {about} within {self.timeout:g} s "
                                   "(is it running, listening there, and still alive?)")
        reply = self.sock.recv()
        self.waited += time.perf_counter() - t0
        self.sent += len(data)
        self.received += len(reply)
        try:
            return reply.decode()
        except UnicodeDecodeError:
            return reply.decode("utf-8", "replace")  # read_reply names it: not JSON

    def close(self) -> None:
        self.sock.close(linger=0)
        self.context.term()
