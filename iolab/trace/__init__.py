"""Traces: what happened in a run, in one schema for the simulator and the emulator."""

from .hdf5 import read_trace, write_trace
from .model import Table, Trace, TraceBuilder
from .schema import PHASE_KINDS, SCHEMA_VERSION, TABLES

__all__ = ["PHASE_KINDS", "SCHEMA_VERSION", "TABLES", "Table", "Trace", "TraceBuilder",
           "read_trace", "write_trace"]
