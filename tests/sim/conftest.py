"""The single-file reference programs of benchmarks/ (scripts with no iolab import), loaded by path for
the test_reference_*.py files of tests/sim/batch and tests/sim/io."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_reference(name: str):
    """The module ``benchmarks/<name>.py``, imported by path (once per process)."""
    key = f"_iolab_reference_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, BENCHMARKS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # dataclasses look their module up by name
        spec.loader.exec_module(mod)
    return sys.modules[key]


@pytest.fixture(scope="session")
def reference_easy():
    return load_reference("reference_easy")


@pytest.fixture(scope="session")
def reference_carretero():
    return load_reference("reference_carretero")


@pytest.fixture(scope="session")
def reference_weighted_ps():
    return load_reference("reference_weighted_ps")
