"""A coordinator for tests: grants like ``iolab.apps.coordination:local`` and logs every call.

Used as ``--coordinator recording_coordinator:factory`` with this folder on
``PYTHONPATH``; config ``{"directory": DIR, "record": FILE}``.  Each call is
appended to FILE as one JSON line ``{"rank", "call", "args", "t"}``; throttle
calls are summed per rank and logged once, at ``close``.
"""

from __future__ import annotations

import json
import os
import time

from iolab.apps.coordination import Grant, LocalCoordinator


class Recording(LocalCoordinator):
    def __init__(self, config, rank, size):
        super().__init__(config, rank, size)
        self.record = config["record"]
        self.throttled = 0
        self.throttle_calls = 0

    def _log(self, call, *args):
        line = json.dumps({"rank": self.rank, "call": call, "args": list(args), "t": time.time()}) + "\n"
        fd = os.open(self.record, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def begin_io(self, phase, kind, nbytes) -> Grant:
        self._log("begin_io", phase, kind, nbytes)
        return super().begin_io(phase, kind, nbytes)

    def end_io(self, phase, nbytes):
        self._log("end_io", phase, nbytes)

    def report(self, phase, kind, start, end, nbytes):
        self._log("report", phase, kind, start, end, nbytes)

    def throttle(self, nbytes):
        self.throttled += nbytes
        self.throttle_calls += 1

    def finish(self, ok, message=""):
        self._log("finish", ok, message)

    def close(self):
        self._log("close", self.throttled, self.throttle_calls)


def factory(config, rank, size):
    return Recording(config, rank, size)
