"""Batsim's protocol as a decision point: an external scheduler (pybatsim's, or any program that speaks Batsim 4's
JSON protocol) decides through the public policy API (:class:`~.adapter.BatsimScheduler`).  Pure: the socket is
the front's (``iolab.batsim``)."""

from iolab.middleware.policies.batsim.adapter import BatsimScheduler
from iolab.middleware.policies.batsim.intervals import format_ids, parse_ids
from iolab.middleware.policies.batsim.messages import BatsimProtocolError, SchedulerTimeout

__all__ = ["BatsimProtocolError", "BatsimScheduler", "SchedulerTimeout", "format_ids", "parse_ids"]
