"""Input specs (pydantic v2): platforms, workloads, experiments, campaigns.

The I/O experiment's models (``App``, ``IOExperiment``, ``Mapping``, ``Phase``, ``Platform``) are built
at their first use (a module ``__getattr__``): ``from iolab.specs import App`` works as ever, and a
command that reads a batch spec does not build them.
"""

from iolab.specs.io_policies import IO_POLICIES, LIST_POLICIES
from iolab.specs.load import KINDS, load_spec, parse_spec

_IO_MODELS = frozenset({"App", "IOExperiment", "Mapping", "Phase", "Platform"})


def __getattr__(name: str):
    if name in _IO_MODELS:
        from iolab.specs import io  # lazy: the I/O experiment's models, built only for whoever asks for them

        return getattr(io, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IO_POLICIES", "LIST_POLICIES", "App", "IOExperiment", "Mapping", "Phase", "Platform",
    "KINDS", "load_spec", "parse_spec",
]
