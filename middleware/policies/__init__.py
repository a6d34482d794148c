"""Every decision rule of iolab, as plain Python.

Nothing in this package imports Ray, MPI, h5py, a clock or a process module:
callers pass the time and a snapshot of the state in, and get a decision back.
The simulator (``sim``) and the Ray actors (``middleware``) call the very same
objects, so a validation compares the runtimes, never two copies of a policy.
"""

from iolab.middleware.policies.arbiter import IONodeArbiter
from iolab.middleware.policies.io_order import POLICIES, IORequest, ListPolicy, SharedPolicy, get_policy
from iolab.middleware.policies.mapping import Pack, PackJob, first_fit, lpt_assign, make_pack

__all__ = [
    "IONodeArbiter", "POLICIES", "IORequest", "ListPolicy", "SharedPolicy", "get_policy",
    "Pack", "PackJob", "first_fit", "lpt_assign", "make_pack",
]
