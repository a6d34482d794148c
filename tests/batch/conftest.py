"""Helpers of the batch tests: the real input files (skipped with a reason when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_data import SHARED_DATA as DATA  # noqa: E402,F401
from shared_data import shared_file as data_path  # noqa: E402


@pytest.fixture
def kth() -> Path:
    return data_path("KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.fixture
def sdsc_blue() -> Path:
    return data_path("SDSC-BLUE-2000-4.2-cln.swf.gz")


@pytest.fixture
def theta_file() -> Path:
    return data_path("theta-2022-week4-io-jobs.yaml")
