"""Python imports this module at start-up when ``benchmarks/code_walk.py --every-process`` puts its folder
first on ``PYTHONPATH``: with ``IOLAB_CODE_WALK`` set, the walk's hook goes into this process (a real run's
MPI ranks, its Ray workers, the command re-executed in its network namespace); without it, nothing."""

import os
import sys

if os.environ.get("IOLAB_CODE_WALK"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        import code_walk
    finally:
        del sys.path[0]
    code_walk.instrument_this_process()
