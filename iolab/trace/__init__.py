"""Traces: what happened in a run, in one schema for the simulator and the emulator."""

from iolab.trace.hdf5 import read_trace, write_trace
from iolab.trace.model import Table, Trace, TraceBuilder
from iolab.trace.schema import PHASE_KINDS, SCHEMA_VERSION, TABLES

__all__ = ["PHASE_KINDS", "SCHEMA_VERSION", "TABLES", "Table", "Trace", "TraceBuilder",
           "read_trace", "write_trace"]
