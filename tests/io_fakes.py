"""Deliberately broken parts of the I/O level, for the strict-mode tests to catch."""

from __future__ import annotations

from iolab.middleware.policies import IONodeArbiter


class GrantsTwice(IONodeArbiter):
    """A broken arbiter: hands a busy I/O node to the next waiting request too."""

    def dispatch(self, now):
        granted = super().dispatch(now)
        if self.active and self._waiting:
            req = self.policy.pick(list(self._waiting.values()), now)
            del self._waiting[req.app]
            self._heap = [e for e in self._heap if e[2].app != req.app]
            self.active[req.app] = req
            granted.append(req)
        return granted
