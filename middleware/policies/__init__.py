"""Every decision rule of iolab, as plain Python.

Nothing in this package imports Ray, MPI, h5py, a clock or a process module:
callers pass the time and a snapshot of the state in, and get a decision back.
The simulator (``sim``) and the Ray actors (``middleware``) call the very same
objects, so a validation compares the runtimes, never two copies of a policy.

The I/O level's names below are loaded at their first use (a module ``__getattr__``):
``from iolab.middleware.policies import get_policy`` works as ever, and a batch run, which
imports only ``iolab.middleware.policies.batch``, does not load the I/O level's policies.
"""

import importlib

_EXPORTS = {
    "IONodeArbiter": "arbiter",
    "POLICIES": "io_order", "IORequest": "io_order", "ListPolicy": "io_order", "SharedPolicy": "io_order",
    "get_policy": "io_order",
    "Pack": "mapping", "PackJob": "mapping", "first_fit": "mapping", "lpt_assign": "mapping", "make_pack": "mapping",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = list(_EXPORTS)
