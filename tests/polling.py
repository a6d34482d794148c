"""Waiting in a test for something to happen: poll it with a deadline, and say what was awaited if it did not.

    wait_until("the run's processes to end", lambda: not processes_mentioning(work), timeout=30)

``check`` is called every ``every`` seconds until it returns something true (returned), or ``timeout``
seconds have passed: then the test fails with ``timed out after T s waiting for WHAT`` and, if given,
``detail()`` (what the state was then).  :func:`settled` waits for a reading to stop changing (what a
stopped writer had in flight has landed).
"""

from __future__ import annotations

import time
from typing import Any, Callable


def wait_until(what: str, check: Callable[[], Any], timeout: float = 30.0, every: float = 0.05,
               detail: Callable[[], object] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            more = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{more}")
        time.sleep(every)


def settled(read: Callable[[], Any], every: float = 0.1, timeout: float = 5.0) -> Any:
    """``read()`` once two reads ``every`` seconds apart agree."""
    last = [read()]

    def same() -> bool:
        now = read()
        agree, last[0] = now == last[0], now
        return agree

    wait_until("the writes in flight when the processes stopped to land", same, timeout=timeout, every=every,
               detail=lambda: last[0])
    return last[0]
