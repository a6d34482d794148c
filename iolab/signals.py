"""Stop signals turned into ``KeyboardInterrupt``, so a run cleans up the way Ctrl-C makes it.

``kill PID``, ``scancel`` and a Slurm time limit send SIGTERM, whose default
action ends Python at once: no ``finally``, children left running, no partial
result.  Inside :func:`sigterm_as_interrupt` SIGTERM raises
``KeyboardInterrupt`` instead (main thread only; the previous handler is put
back on the way out).  Install it *after* ``ray.init``, which sets its own
SIGTERM handler.

SIGINT is left as the process got it: a run started in the background by a
non-interactive shell (``nohup iolab emulate ... &``) ignores Ctrl-C, as the
shell meant.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


def raise_interrupt(signum, frame) -> None:
    """A signal handler: behave as if Ctrl-C was pressed."""
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt(enabled: bool = True) -> Iterator[None]:
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
