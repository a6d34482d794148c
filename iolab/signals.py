"""Stop signals turned into ``KeyboardInterrupt``, so a run cleans up the way Ctrl-C makes it.

``kill PID``, ``scancel`` and a Slurm time limit send SIGTERM, whose default
action ends Python at once: no ``finally``, children left running, no partial
result.  Inside :func:`sigterm_as_interrupt` SIGTERM raises
``KeyboardInterrupt`` instead (main thread only; the previous handler is put
back on the way out).  Install it *after* ``ray.init``, which sets its own
SIGTERM handler.

SIGINT is left as the process got it: a run started in the background by a
non-interactive shell (``nohup iolab emulate ... &``) ignores Ctrl-C, as the
shell meant.  Where it is Python's default, :func:`ctrl_c_noted` also notes that
it came: Python drops the ``KeyboardInterrupt`` of a signal that arrives while a
weakref callback or a ``__del__`` runs (it prints "Exception ignored in ..." and
goes on; an import's module lock is freed that way), and a command would then
finish as if nobody had pressed Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


def raise_interrupt(signum, frame) -> None:
    """A signal handler: behave as if Ctrl-C was pressed."""
    raise KeyboardInterrupt


_noted = False


def _note_and_raise(signum, frame) -> None:
    global _noted
    _noted = True
    raise KeyboardInterrupt


@contextmanager
def ctrl_c_noted() -> Iterator[None]:
    """Within: Ctrl-C raises ``KeyboardInterrupt`` as by default and is also noted, for :func:`ctrl_c_came`
    to tell whether one came, also one whose ``KeyboardInterrupt`` Python dropped; forgotten on the way out.
    Left alone where SIGINT is not Python's default handler (ignored in a background run, or another
    handler is installed) and outside the main thread."""
    global _noted
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    _noted = False
    signal.signal(signal.SIGINT, _note_and_raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _noted = False


def ctrl_c_came() -> bool:
    """Whether a Ctrl-C came within :func:`ctrl_c_noted`: a long loop's progress hook asks, and the command
    after its work, and raise ``KeyboardInterrupt`` themselves if Python dropped the signal's."""
    return _noted


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
