"""Synthetic periodic workloads of carretero2020 §6.2.2.

For a target I/O load alpha_gen:

- the proportion beta of low-I/O apps is drawn uniformly on [0, 1] and
  round(beta * n) apps are low-I/O, the others high-I/O;
- the number of apps n is uniform on [25, 100];
- each app is periodic: n_i iterations uniform on [250, 1000], compute
  w_i uniform on [10, 100] seconds, and an I/O load v_i / (b w_i) drawn from a
  normal (mean 0.1 for low, 0.9 for high; sd 0.1) truncated on [x, y] (the paper writes
  "variance sigma = 0.1": ``sigma`` is read as the standard deviation; a variance of 0.1 would be
  ``sigma=(0.316, 0.316)``);
- Q_i is drawn from {2^j, j = 0..log2 P} with mean
  Q = P (beta mu1 + (1-beta) mu2) / (alpha_gen (1 + beta mu1 + (1-beta) mu2)).

Two choices the paper leaves open, made here and exposed as parameters: the
truncation interval [x, y] of the I/O load (default [0.01, 2]), and the
distribution of Q_i over the powers of two: a truncated geometric law over
the exponent j, p_j proportional to exp(lambda j), with lambda solved so that
the mean of 2^j is Q (the maximum-entropy law over j with that mean).  The
actual load of the workload is Eq. 6, not alpha_gen.

Every draw comes from one ``numpy.random.Generator`` seeded by ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iolab.specs.io import IOExperiment


@dataclass(frozen=True)
class CarreteroParams:
    nodes_per_io_node: int = 2048
    bandwidth: float = 1.0
    apps: tuple[int, int] = (25, 100)
    iterations: tuple[int, int] = (250, 1000)
    compute: tuple[float, float] = (10.0, 100.0)
    mu: tuple[float, float] = (0.1, 0.9)
    sigma: tuple[float, float] = (0.1, 0.1)
    load_bounds: tuple[float, float] = (0.01, 2.0)

    def __post_init__(self):
        if self.nodes_per_io_node < 1 or self.nodes_per_io_node & (self.nodes_per_io_node - 1):
            raise ValueError(f"nodes_per_io_node must be a power of two, got {self.nodes_per_io_node}")
        for name in ("apps", "iterations", "compute", "load_bounds"):
            lo, hi = getattr(self, name)
            if not 0 <= lo <= hi:
                raise ValueError(f"{name}: need 0 <= low <= high, got ({lo}, {hi})")


def mean_nodes(alpha_gen: float, beta: float, p: CarreteroParams) -> float:
    m = beta * p.mu[0] + (1 - beta) * p.mu[1]
    return p.nodes_per_io_node * m / (alpha_gen * (1 + m))


def power_of_two_law(mean: float, max_exp: int) -> np.ndarray:
    """p_j over j = 0..max_exp, proportional to exp(lambda j), with E[2^j] = mean."""
    values = 2.0 ** np.arange(max_exp + 1)
    mean = min(max(mean, 1.0), values[-1])
    if max_exp == 0:
        return np.ones(1)

    def law(lam: float) -> np.ndarray:
        z = lam * np.arange(max_exp + 1)
        z -= z.max()
        w = np.exp(z)
        return w / w.sum()

    lo, hi = -60.0, 60.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if float(law(mid) @ values) < mean:
            lo = mid
        else:
            hi = mid
    return law((lo + hi) / 2)


def truncated_normal(rng: np.random.Generator, mean: float, sd: float, lo: float, hi: float) -> float:
    if sd <= 0:
        return min(max(mean, lo), hi)
    for _ in range(10_000):
        x = rng.normal(mean, sd)
        if lo <= x <= hi:
            return float(x)
    raise ValueError(f"truncated normal N({mean}, {sd}) on [{lo}, {hi}] has (almost) no mass")


def generate(alpha_gen: float, seed: int, params: CarreteroParams = CarreteroParams(),
             io_nodes: int = 1, name: str | None = None) -> IOExperiment:
    """One workload as an experiment spec (mapping first-fit, policy fifo)."""
    if alpha_gen <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha_gen}")
    p = params
    rng = np.random.default_rng(seed)
    beta = float(rng.uniform(0.0, 1.0))
    n = int(rng.integers(p.apps[0], p.apps[1] + 1))
    low = np.zeros(n, dtype=bool)
    low[: int(round(beta * n))] = True
    rng.shuffle(low)
    law = power_of_two_law(mean_nodes(alpha_gen, beta, p), int(math.log2(p.nodes_per_io_node)))
    apps = []
    for i in range(n):
        iters = int(rng.integers(p.iterations[0], p.iterations[1] + 1))
        w = float(rng.uniform(*p.compute))
        k = 0 if low[i] else 1
        load = truncated_normal(rng, p.mu[k], p.sigma[k], *p.load_bounds)
        q = int(2 ** rng.choice(len(law), p=law))
        apps.append({
            "id": f"a{i:03d}", "nodes": q, "release": 0.0, "iterations": iters,
            "compute": round(w, 6), "io_volume": round(load * w * p.bandwidth, 6),
        })
    return IOExperiment.model_validate({
        "name": name or f"carretero-alpha{alpha_gen:g}-seed{seed}",
        "platform": {"io_nodes": io_nodes, "nodes_per_io_node": p.nodes_per_io_node, "bandwidth": p.bandwidth},
        "policy": "fifo", "mapping": {"kind": "first-fit"}, "seed": seed, "apps": apps,
    })
