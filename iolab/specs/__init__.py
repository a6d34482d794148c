"""Input specs (pydantic v2): platforms, workloads, experiments, campaigns."""

from iolab.specs.io import IO_POLICIES, LIST_POLICIES, App, IOExperiment, Mapping, Phase, Platform
from iolab.specs.load import KINDS, load_spec, parse_spec

__all__ = [
    "IO_POLICIES", "LIST_POLICIES", "App", "IOExperiment", "Mapping", "Phase", "Platform",
    "KINDS", "load_spec", "parse_spec",
]
