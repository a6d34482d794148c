"""Helpers of the batch tests: the real input files (skipped with a reason when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("IOLAB_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


def data_path(name: str) -> Path:
    path = DATA / name
    if not path.is_file():
        pytest.skip(f"{name} not found in {DATA} (set IOLAB_SHARED_DATA to the folder holding it)")
    return path


@pytest.fixture
def kth() -> Path:
    return data_path("KTH-SP2-1996-2.1-cln.swf.gz")


@pytest.fixture
def sdsc_blue() -> Path:
    return data_path("SDSC-BLUE-2000-4.2-cln.swf.gz")


@pytest.fixture
def theta_file() -> Path:
    return data_path("theta-2022-week4-io-jobs.yaml")
