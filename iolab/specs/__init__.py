"""Input specs (pydantic v2): platforms, workloads, experiments, campaigns."""

from .io import IO_POLICIES, LIST_POLICIES, App, IOExperiment, Mapping, Phase, Platform
from .load import KINDS, load_spec, parse_spec

__all__ = [
    "IO_POLICIES", "LIST_POLICIES", "App", "IOExperiment", "Mapping", "Phase", "Platform",
    "KINDS", "load_spec", "parse_spec",
]
