"""The app-side client refuses clearly when it cannot reach the run's Ray."""

from __future__ import annotations

import pytest

from iolab.middleware.client import RayCoordinator, connect


def test_missing_config_keys_are_named():
    with pytest.raises(RuntimeError, match="lacks address, namespace"):
        RayCoordinator({"actor": "a", "app": "A"}, 0, 1)


def test_no_ray_at_the_address():
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray is up in this process")
    with pytest.raises(RuntimeError, match="no Ray listens at 127.0.0.1:1"):
        connect("127.0.0.1:1", "x", timeout=1)
    with pytest.raises(RuntimeError, match="host:port"):
        connect("nowhere", "x")
