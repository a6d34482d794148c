"""Batsim's protocol, iolab's side: a run of a batch spec decided by an external scheduler over ZeroMQ.

:mod:`.socket` is the transport (a ZeroMQ REQ socket, as Batsim's, with a time limit on every answer);
:mod:`.run` builds the pure adapter (:class:`iolab.middleware.policies.batsim.BatsimScheduler`) on it and runs the
spec in the simulator or for real, through the guard, as any batch scheduler.  docs/batsim.md.
"""
