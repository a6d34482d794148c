"""Feitelson-1996 job model with lackner2019's I/O model (§IV-B) and estimate noise (§V-B).

Fully determined by ``seed`` (numpy ``SeedSequence``; no global RNG).  The
workload and the estimate noise use two independent child streams, so the
same seed gives the same jobs whatever theta is: only the estimates change.

Our instantiation of Feitelson's model (Packing schemes for gang scheduling,
JSSPP 1996; the parameters of lackner2019 Table I are the defaults):

- **sizes**: ``n`` in 1..``max_nodes`` with probability proportional to
  ``n**-size_exponent`` (harmonic of order 1.5), weight multiplied by
  ``pow2_boost`` when ``n`` is a power of two (small jobs and powers of two
  dominate, as in the logs Feitelson modelled);
- **runtimes**: hyper-exponential, correlated with size: the long branch is
  taken with probability ``q(n) = q_min + (q_max - q_min)(n-1)/(N-1)``; each
  branch is an exponential truncated to [shortest, longest] (Table I: 1800 s
  and 86400 s) with mean parameter ``short_mean`` or ``long_mean`` (as a
  fraction of longest - shortest) above ``shortest``;
- **repetitions**: a job is run ``r`` times, ``P(r) ∝ r**-2.5`` for
  r = 1..``max_repetitions`` (Table I: 2); run k+1 is submitted when run k
  would end (Feitelson's repeated runs; zero think time) with the same size,
  runtime and user;
- **arrivals**: new (non-repeated) jobs arrive as a Poisson process of mean
  inter-arrival ``arrival_factor`` seconds (Table I: 500);
- ``jobs`` jobs in all (Table I: 500), sorted by submit time, ids "1".."n";
  a user per repeated job, drawn uniformly among ``users``.

I/O (lackner2019 §IV-B), with volumes set by filling a fraction of the
runtime at the fixed rate R_lps (``lps_rate``):

- input and output: each a fraction of the runtime drawn from
  N(io_fraction / 2, io_fraction_sd), clipped to [0, io_fraction]; together
  10 % of the runtime on average; ``input = f_in * runtime * R_lps``;
- checkpoints: a checkpoint is ``nodes * memory_per_node`` bytes; jobs
  shorter than ``checkpoint_min_runtime`` do not checkpoint; the others
  write ``k = floor(checkpoint_fraction * runtime * R_lps / size)``
  checkpoints (the frequency that fills that fraction of the runtime);
  ``data = k * size`` (no checkpoint if k = 0);
- requested HPS capacity: ``storage = max(input, output) + checkpoint size``;
- walltime = runtime (users know their jobs, lackner2019 §III-B).

Those are the defaults.  For a large machine (docs/batch-policies.md, "An I/O model for a large
machine"), ``io_rate: share`` fills the fractions at the job's share of the link,
``R_lps * nodes / N`` (N the machine's nodes), instead of R_lps, and ``checkpoint`` replaces the
checkpoint rule: ``{interval: I}`` writes ``k = floor(runtime / I)``, ``{daly: {node_mtbf: B}}``
``k = floor(runtime / sqrt(2 C M))`` with ``C = size / rate`` (the rate of ``io_rate``) and
``M = B / nodes``; ``checkpoint_min_runtime`` holds for every rule.  They change only the
volumes: the draws are the same.

The I/O part is :func:`lackner_io`, the one implementation: :func:`feitelson_jobs`
draws it after the job model (same stream), :func:`with_io` applies it to the
jobs of a trace (``source: swf`` with ``io: lackner``; seeded from the spec's
``seed``; a trace's walltime is its request, kept as it is).

Inaccurate estimates (§V-B): with ``theta > 0`` the user states
``N(x, (theta x)^2)`` (clipped at 0) for each of input, output and data;
the stated storage is ``max(stated input, stated output) + checkpoint
size`` (the checkpoint size follows from the node memory and is known).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from iolab.errors import SpecError
from iolab.specs.batch import FeitelsonWorkload, Job

from iolab.workloads.job_columns import JobColumns, jobs_from_columns

GB = 10**9


@dataclass(frozen=True)
class ModelShape:
    """The constants of our Feitelson instantiation (see the module doc)."""

    size_exponent: float = 1.5
    pow2_boost: float = 3.0
    q_min: float = 0.1
    q_max: float = 0.9
    short_mean: float = 0.05  # fraction of (longest - shortest)
    long_mean: float = 0.4
    repetition_exponent: float = 2.5


def size_distribution(max_nodes: int, shape: ModelShape = ModelShape()) -> np.ndarray:
    """P(n) for n = 1..max_nodes."""
    n = np.arange(1, max_nodes + 1, dtype=float)
    w = n ** -shape.size_exponent
    pow2 = (np.arange(1, max_nodes + 1) & np.arange(0, max_nodes)) == 0
    w[pow2] *= shape.pow2_boost
    return w / w.sum()


def long_branch_probability(n: np.ndarray, max_nodes: int, shape: ModelShape = ModelShape()) -> np.ndarray:
    frac = (n - 1) / (max_nodes - 1) if max_nodes > 1 else np.zeros_like(n, dtype=float)
    return shape.q_min + (shape.q_max - shape.q_min) * frac


def truncated_exp_mean(mu: float, span: float) -> float:
    """Mean of an exponential of mean ``mu`` truncated to [0, span]."""
    if span <= 0:
        return 0.0
    x = span / mu
    return mu - span * math.exp(-x) / (-math.expm1(-x))


def _truncated_exp(rng: np.random.Generator, mu: np.ndarray, span: float, size: int) -> np.ndarray:
    u = rng.random(size)
    return -mu * np.log1p(-u * (-np.expm1(-span / mu)))


def expected_runtime(params: FeitelsonWorkload, max_nodes: int, shape: ModelShape = ModelShape()) -> float:
    """Analytic mean runtime of a new (non-repeated) job, for plausibility checks."""
    span = params.longest - params.shortest
    p = size_distribution(max_nodes, shape)
    q = long_branch_probability(np.arange(1, max_nodes + 1, dtype=float), max_nodes, shape)
    m_s = truncated_exp_mean(shape.short_mean * span, span)
    m_l = truncated_exp_mean(shape.long_mean * span, span)
    return params.shortest + float(np.sum(p * (q * m_l + (1 - q) * m_s)))


def repetition_distribution(max_rep: int, shape: ModelShape = ModelShape()) -> np.ndarray:
    r = np.arange(1, max_rep + 1, dtype=float)
    w = r ** -shape.repetition_exponent
    return w / w.sum()


@dataclass(frozen=True)
class IOVolumes:
    """The §IV-B I/O of a list of jobs (arrays, one entry per job, bytes)."""

    input: np.ndarray
    output: np.ndarray
    data: np.ndarray
    storage: np.ndarray
    checkpoint: np.ndarray  # the checkpoint size a job holds on HPS (0 if it writes none)


def job_io_rate(nodes: np.ndarray, p: Any, lps_rate: float, machine_nodes: int | None) -> Any:
    """The rate each job's I/O fractions are filled at: ``lps_rate`` (``io_rate: link``, lackner2019:
    a float, the same for every job) or ``lps_rate * nodes / machine_nodes`` (``io_rate: share``:
    an array, the job's share of the link by its nodes)."""
    if getattr(p, "io_rate", "link") == "link":
        return lps_rate
    if machine_nodes is None or machine_nodes < 1:
        raise ValueError("io_rate: share needs the machine's nodes (machine_nodes >= 1)")
    return lps_rate * np.asarray(nodes, dtype=float) / machine_nodes


def checkpoint_counts(p: Any, runtime: np.ndarray, nodes: np.ndarray, ckpt: np.ndarray, rate: Any) -> np.ndarray:
    """``k``, the checkpoints each job writes (floats, whole): the rule of ``p.checkpoint``
    (see the module doc), then 0 for runtimes below ``p.checkpoint_min_runtime``."""
    rule = getattr(p, "checkpoint", None)
    if rule is None:  # lackner2019: the checkpoints fill checkpoint_fraction of the runtime at ``rate``
        k = np.floor(p.checkpoint_fraction * runtime * rate / ckpt)
    elif rule.interval is not None:
        k = np.floor(runtime / rule.interval)
    else:  # Young-Daly: C = ckpt / rate, M = node_mtbf / nodes, interval sqrt(2 C M)
        interval = np.sqrt(2.0 * (ckpt / rate) * (rule.daly.node_mtbf / np.asarray(nodes, dtype=float)))
        k = np.floor(runtime / interval)
    k[runtime < p.checkpoint_min_runtime] = 0
    return k


def lackner_io(rng: np.random.Generator, nodes: np.ndarray, runtime: np.ndarray, p: Any, *,
               lps_rate: float, memory_per_node: float, machine_nodes: int | None = None,
               where: str = "workload") -> IOVolumes:
    """lackner2019 §IV-B's I/O of jobs of ``nodes`` nodes running ``runtime`` seconds (see the
    module doc): two normal draws per job from ``rng`` (all input fractions, then all output
    fractions); ``p`` holds ``io_fraction``, ``io_fraction_sd``, ``checkpoint_fraction``,
    ``checkpoint_min_runtime``, ``io_rate`` and ``checkpoint`` (a :class:`FeitelsonWorkload` or an
    SWF workload's ``io``); ``machine_nodes``, the platform's nodes, is needed by ``io_rate: share``.
    Volumes that overflow are refused (:class:`SpecError` naming the field under ``where``, the
    path of ``p`` in the spec)."""
    n = len(runtime)
    runtime = np.asarray(runtime, dtype=float)
    half = p.io_fraction / 2
    f_in = np.clip(rng.normal(half, p.io_fraction_sd, n), 0.0, p.io_fraction)
    f_out = np.clip(rng.normal(half, p.io_fraction_sd, n), 0.0, p.io_fraction)
    rate = job_io_rate(nodes, p, lps_rate, machine_nodes)
    with np.errstate(over="ignore", divide="ignore"):  # an overflow is refused below, naming the field
        return _volumes(p, where, nodes, runtime, f_in, f_out, rate, memory_per_node)


def _volumes(p: Any, where: str, nodes: np.ndarray, runtime: np.ndarray, f_in: np.ndarray, f_out: np.ndarray,
             rate: Any, memory_per_node: float) -> IOVolumes:
    inp = np.floor(f_in * runtime * rate)
    out = np.floor(f_out * runtime * rate)
    ckpt = np.asarray(nodes) * float(memory_per_node)
    k = checkpoint_counts(p, runtime, nodes, ckpt, rate)
    data = k * ckpt
    ckpt_held = np.where(k > 0, ckpt, 0.0)
    storage = np.maximum(inp, out) + ckpt_held
    _check_volumes(p, where, nodes, runtime, k, inp + out, data + storage)
    return IOVolumes(inp, out, data, storage, ckpt_held)


MAX_CHECKPOINTS = 1_000_000  # a job's checkpoints (two steps each in a run): above, the rule is refused


def _check_volumes(p: Any, where: str, nodes: np.ndarray, runtime: np.ndarray, k: np.ndarray, io: np.ndarray,
                  ckpt: np.ndarray) -> None:
    """Refuse (SpecError, naming the field) volumes that overflow and checkpoint counts above
    :data:`MAX_CHECKPOINTS` a job: a tiny interval or node MTBF (or memory_per_node) gives a job
    (nearly) infinitely many checkpoints, a huge runtime at a high rate infinite bytes."""
    bad_io = np.flatnonzero(~np.isfinite(io))
    bad_k = np.flatnonzero(~(np.isfinite(ckpt) & (k <= MAX_CHECKPOINTS)))
    if not len(bad_io) and not len(bad_k):
        return
    rule = getattr(p, "checkpoint", None)
    if len(bad_io):
        i, field, what = int(bad_io[0]), "io_fraction", "input and output volumes that overflow (not finite)"
    else:
        i = int(bad_k[0])
        field = ("checkpoint_fraction" if rule is None else "checkpoint.interval" if rule.interval is not None
                 else "checkpoint.daly.node_mtbf")
        what = (f"{float(k[i]):g} checkpoints, above the limit of {MAX_CHECKPOINTS:g} a job (a phase each)"
                + ("" if rule is not None else " at this R_lps and memory_per_node"))
    raise SpecError("the workload's I/O model", [(f"{where}.{field}", (
        f"gives a job of {float(runtime[i]):g} s on {int(np.asarray(nodes)[i])} nodes {what} "
        f"({len(bad_io) or len(bad_k)} such jobs)"))])


def feitelson_columns(params: FeitelsonWorkload | None = None, *, seed: int = 0, max_nodes: int = 128,
                      lps_rate: float = 1 * GB, memory_per_node: float = 16 * GB,
                      shape: ModelShape = ModelShape(), **overrides: Any) -> JobColumns:
    """The workload as columns (``overrides`` replace fields of ``params``); ``max_nodes`` is the
    machine's nodes (the largest job, and N of ``io_rate: share``)."""
    p = params or FeitelsonWorkload()
    if overrides:  # validated with the fields given (so that the cross-field checks see what was set)
        p = FeitelsonWorkload.model_validate({**p.model_dump(exclude_unset=True), **overrides})
    if max_nodes < 1 or not (lps_rate > 0) or not (memory_per_node > 0):
        raise ValueError("max_nodes, lps_rate and memory_per_node must be > 0")
    work_ss, noise_ss = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(work_ss)
    n_fam = p.jobs  # enough families: each has >= 1 run
    sizes = rng.choice(np.arange(1, max_nodes + 1), size=n_fam, p=size_distribution(max_nodes, shape))
    span = p.longest - p.shortest
    long = rng.random(n_fam) < long_branch_probability(sizes.astype(float), max_nodes, shape)
    mu = np.where(long, shape.long_mean * span, shape.short_mean * span)
    runtimes = p.shortest + _truncated_exp(rng, mu, span, n_fam)
    reps = rng.choice(np.arange(1, p.max_repetitions + 1), size=n_fam,
                      p=repetition_distribution(p.max_repetitions, shape))
    arrivals = np.cumsum(rng.exponential(p.arrival_factor, size=n_fam))
    arrivals -= arrivals[0]  # the first job arrives at 0
    users = rng.integers(p.users, size=n_fam)
    # Expand repetitions and keep the first ``jobs`` runs in family order (run r of a family: r = its
    # position minus the family's first position).
    fam = np.repeat(np.arange(n_fam), reps)
    rep_idx = np.arange(len(fam)) - np.repeat(np.cumsum(reps) - reps, reps)
    fam, rep_idx = fam[: p.jobs], rep_idx[: p.jobs]
    submit = arrivals[fam] + rep_idx * runtimes[fam]
    order = np.lexsort((rep_idx, fam, submit))
    fam, rep_idx, submit = fam[order], rep_idx[order], submit[order]
    n = len(fam)
    nodes = sizes[fam]
    runtime = runtimes[fam]
    # I/O, drawn per run in submit order.
    io = lackner_io(rng, nodes, runtime, p, lps_rate=lps_rate, memory_per_node=memory_per_node,
                    machine_nodes=max_nodes)
    inp, out, data, ckpt_held = io.input, io.output, io.data, io.checkpoint
    est = None
    if p.theta > 0:
        noise = np.random.default_rng(noise_ss)
        e_in = np.maximum(0.0, noise.normal(inp, p.theta * inp))
        e_out = np.maximum(0.0, noise.normal(out, p.theta * out))
        e_data = np.maximum(0.0, noise.normal(data, p.theta * data))
        est = (e_in, e_out, e_data, np.maximum(e_in, e_out) + ckpt_held)
    user_ids, user_of_job = np.unique(users[fam], return_inverse=True)
    names = [f"u{u}" for u in user_ids.tolist()]
    return JobColumns(ids=[str(i) for i in range(1, n + 1)], users=[names[u] for u in user_of_job.tolist()],
                      submit=submit, nodes=nodes, walltime=runtime, runtime=runtime, input=inp, output=out,
                      data=data, storage=io.storage, estimate=est)


def feitelson_jobs(params: FeitelsonWorkload | None = None, *, seed: int = 0, max_nodes: int = 128,
                   lps_rate: float = 1 * GB, memory_per_node: float = 16 * GB,
                   shape: ModelShape = ModelShape(), validate_each: bool = False, **overrides: Any) -> list[Job]:
    """Generate the workload (``overrides`` replace fields of ``params``): :func:`feitelson_columns`
    as ``Job`` objects, checked on the arrays (``validate_each``: each through pydantic, the slow
    reference; :mod:`.job_columns`)."""
    cols = feitelson_columns(params, seed=seed, max_nodes=max_nodes, lps_rate=lps_rate,
                             memory_per_node=memory_per_node, shape=shape, **overrides)
    return jobs_from_columns(cols, validate_each=validate_each)


def with_io(jobs: list[Job], io: Any, *, seed: int | list[int], lps_rate: float, memory_per_node: float,
            machine_nodes: int | None = None) -> list[Job]:
    """``jobs`` (an SWF trace's, which carry no I/O) with the volumes of the I/O model ``io`` (an
    ``IOModelSpec``: lackner2019 §IV-B, :func:`lackner_io`; ``machine_nodes``, the platform's nodes,
    for ``io_rate: share``) drawn for their nodes and runtimes, in list order, from
    ``default_rng(SeedSequence(seed))``; walltimes, runtimes and the rest unchanged."""
    if not jobs:
        return []
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    nodes = np.array([j.nodes for j in jobs], dtype=float)
    runtime = np.array([float(j.runtime) for j in jobs])
    v = lackner_io(rng, nodes, runtime, io, lps_rate=lps_rate, memory_per_node=memory_per_node,
                   machine_nodes=machine_nodes, where="workload.io")
    return [j.model_copy(update={"input": float(v.input[i]), "output": float(v.output[i]), "data": float(v.data[i]),
                                 "storage": float(v.storage[i])}) for i, j in enumerate(jobs)]
