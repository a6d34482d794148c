"""Small real runs several emulator tests start and stop: an I/O spec (two 1-rank apps on one
I/O node, ~40 iterations), a batch spec (two SAS jobs staging 10 GB, time scale 0.01) and a tiny one
(two jobs of 1.5-2 s wall, one staging 5 GB)."""

from __future__ import annotations


def small_io(name: str, **extra) -> dict:
    return {
        "name": name, **extra, "platform": {"io_nodes": 1, "nodes_per_io_node": 4, "bandwidth": 1.0},
        "apps": [{"id": a, "nodes": 2, "iterations": 40, "compute": 0.5, "io_volume": 0.5} for a in "AB"],
        "emulator": {"ranks_per_app": 1, "unit_bytes": 1 << 20, "grid": 32, "lease": 20},
    }


def small_batch(name: str) -> dict:
    return {
        "kind": "batch", "name": name,
        "platform": {"nodes": 4, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "15 GB/s", "capacity": "150 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": "sas",
        "workload": [{"id": j, "submit": 0, "nodes": 2, "walltime": 9000, "runtime": 8000, "input": "10GB",
                      "output": "10GB", "storage": "30GB"} for j in "ab"],
        "emulator": {"time_scale": 0.01, "bytes_scale": 1e-4},
    }


def tiny_batch(name: str) -> dict:
    return {
        "kind": "batch", "name": name,
        "platform": {"nodes": 2, "memory_per_node": "8GB", "lps": {"rate": "1 GB/s"},
                     "hps": {"rate": "10 GB/s", "capacity": "50 GB"}, "stage_rate": "5 GB/s"},
        "scheduler": "sas",
        "workload": [{"id": "io", "submit": 0, "nodes": 1, "walltime": 300, "runtime": 200, "input": "5GB",
                      "output": "2GB", "storage": "10GB"},
                     {"id": "cpu", "submit": 0, "nodes": 1, "walltime": 300, "runtime": 150}],
        "emulator": {"time_scale": 0.01, "bytes_scale": 0.0001},
    }
