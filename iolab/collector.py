"""Python's cyclic garbage collector paused while a burst of acyclic objects is made.

A workload's jobs, or a batch kernel's job states, are made by the hundred thousand; the collector
would run a generation-0 pass every 700 of them and walk them again in its older generations, for
objects none of which can be part of a reference cycle (SDSC-BLUE's read: a third of its time).
:func:`paused` turns it off for the block and back on after it, if it was on before; objects are
still freed when their last reference goes.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["paused"]


@contextmanager
def paused():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
