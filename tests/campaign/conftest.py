"""One local Ray for the in-process campaign tests; the helpers live in campaign_helpers.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # campaign_helpers, and iolab_test_runtimes for the driver side
    sys.path.insert(0, str(HERE))

from campaign_helpers import sweep_env  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    """One local Ray (num_cpus=2, no dashboard) per test module; shut down at the module's end
    (a session-wide Ray would be inherited by other modules that start their own).

    PYTHONPATH is set while Ray starts so that its workers import the test runtimes.
    """
    ray = pytest.importorskip("ray")
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = sweep_env()["PYTHONPATH"]
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    try:
        yield ray
    finally:
        ray.shutdown()
