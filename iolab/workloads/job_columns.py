"""Jobs held as columns (one numpy array per field), and :class:`iolab.specs.batch.Job` objects
made from them at the speed of the arrays.

A generator (``feitelson_columns``) computes its jobs as arrays.  Building one pydantic ``Job``
per row through full validation costs ~17 µs a job (17 s for a million); here the checks
``Job`` makes (ids and users, finite non-negative times and volumes, positive walltimes, node
counts in range, an HPS request that holds the input and the output, the same for an estimate)
run once on the arrays, and the objects are then made without validating each again: the same
objects, field for field (``tests/workloads/test_io_model_scale.py`` compares them with the validated
ones), in about a tenth of the time and less than half the memory (docs/performance.md).  If a check fails, every job is built
through validation instead, so the error is the one ``Job`` raises, naming the field.

The objects of one call share one ``model_fields_set`` set (a set of 11 names is 0.7 kB a job;
a ``Job`` is frozen and ``model_copy`` copies that set before changing it), and their dicts one
table of keys (:func:`_shared_key_dict`).  The cyclic garbage
collector is paused while the objects are made (none of them can be part of a cycle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from iolab import collector
from iolab.names import NAME_PATTERN
from iolab.specs.batch import IOEstimate, Job

_NAME = re.compile(NAME_PATTERN)
_MAX_NAME = 64  # Job.id and Job.user: at most 64 characters
_MAX_NODES = 10_000_000  # Job.nodes: le
VOLUMES = ("input", "output", "data", "storage")


@dataclass(frozen=True)
class JobColumns:
    """The jobs of a workload as columns, row ``i`` being job ``i`` (bytes and seconds)."""

    ids: list[str]
    users: list[str]
    submit: np.ndarray
    nodes: np.ndarray
    walltime: np.ndarray
    runtime: np.ndarray
    input: np.ndarray
    output: np.ndarray
    data: np.ndarray
    storage: np.ndarray
    estimate: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None  # stated input, output, data, storage

    def __len__(self) -> int:
        return len(self.ids)


def _volumes_ok(inp: np.ndarray, out: np.ndarray, data: np.ndarray, storage: np.ndarray) -> bool:
    for v in (inp, out, data, storage):
        if not (np.all(np.isfinite(v)) and np.all(v >= 0)):
            return False
    held = storage > 0  # an HPS request holds the larger of input and output (Job._storage_holds_io)
    return bool(np.all(storage[held] >= np.maximum(inp[held], out[held])))


def columns_valid(c: JobColumns) -> bool:
    """Whether every row passes ``Job``'s validation (its field constraints and its
    ``_storage_holds_io``), checked on the arrays."""
    n = len(c)
    if any(len(col) != n for col in (c.users, c.submit, c.nodes, c.walltime, c.runtime, c.input, c.output,
                                     c.data, c.storage)):
        return False
    if not all(isinstance(i, str) and len(i) <= _MAX_NAME and _NAME.fullmatch(i) for i in c.ids):
        return False
    if not all(isinstance(u, str) and len(u) <= _MAX_NAME for u in set(c.users)):
        return False
    nodes = np.asarray(c.nodes)
    if nodes.dtype.kind not in "iu" or not (np.all(nodes >= 1) and np.all(nodes <= _MAX_NODES)):
        return False
    for times, positive in ((c.submit, False), (c.walltime, True), (c.runtime, False)):
        t = np.asarray(times, dtype=float)
        if not (np.all(np.isfinite(t)) and np.all(t > 0 if positive else t >= 0)):
            return False
    if not _volumes_ok(*(np.asarray(getattr(c, f), dtype=float) for f in VOLUMES)):
        return False
    return c.estimate is None or (all(len(col) == n for col in c.estimate)
                                  and _volumes_ok(*(np.asarray(col, dtype=float) for col in c.estimate)))


def _shared_key_dict(cls: type) -> dict:
    """An instance dict of ``cls`` holding every field (values None) whose copies share one table of
    keys: CPython *splits* the dicts of a class's instances whose attributes are set one by one, and
    a ``copy()`` of a split dict is split too (296 B a ``Job`` against 464 B for the plain dict
    pydantic builds; same keys in the same order).  Where an interpreter does not split it, it is
    simply a plain dict.  (``iolab/workloads/swf.py`` builds its jobs' dicts the same way.)"""
    probe = cls.__new__(cls)
    for name in cls.model_fields:
        object.__setattr__(probe, name, None)
    return probe.__dict__


def _maker(cls: type) -> Any:
    """``make(**values)``: a ``cls`` holding ``values`` (all of its fields, in field order), made as
    ``cls.model_construct`` makes it, without its per-call walk over the fields and defaults."""
    fields_set = set(cls.model_fields)
    template = _shared_key_dict(cls)
    new, put, copy = cls.__new__, object.__setattr__, template.copy

    def make(**values: Any) -> Any:
        m = new(cls)
        d = copy()
        d.update(values)
        put(m, "__dict__", d)
        put(m, "__pydantic_fields_set__", fields_set)
        put(m, "__pydantic_extra__", None)
        put(m, "__pydantic_private__", None)
        return m
    return make


def _validated(c: JobColumns) -> list[Job]:
    est = [None] * len(c) if c.estimate is None else [
        IOEstimate(input=float(a), output=float(b), data=float(d), storage=float(s)) for a, b, d, s in zip(*c.estimate)]
    return [Job(id=c.ids[i], user=c.users[i], submit=float(c.submit[i]), nodes=int(c.nodes[i]),
                walltime=float(c.walltime[i]), runtime=float(c.runtime[i]), input=float(c.input[i]),
                output=float(c.output[i]), data=float(c.data[i]), storage=float(c.storage[i]), estimate=est[i])
            for i in range(len(c))]


def jobs_from_columns(c: JobColumns, *, validate_each: bool = False) -> list[Job]:
    """The ``Job`` of every row; ``validate_each``: build each through pydantic's validation (the
    reference the fast path is tested against; also taken when :func:`columns_valid` fails)."""
    if validate_each or not columns_valid(c):
        return _validated(c)
    with collector.paused():  # a million new objects would run the cyclic collector hundreds of times (half the time)
        return _construct(c)


def _construct(c: JobColumns) -> list[Job]:
    if c.estimate is None:
        est: Any = [None] * len(c)
    else:
        make_est = _maker(IOEstimate)
        est = [make_est(input=a, output=b, data=d, storage=s)
               for a, b, d, s in zip(*(np.asarray(col, dtype=float).tolist() for col in c.estimate))]
    make = _maker(Job)
    lists: dict[int, list] = {}  # one list per distinct array (a generator's walltime is its runtime)
    for a in (c.submit, c.walltime, c.runtime, c.input, c.output, c.data, c.storage):
        if id(a) not in lists:
            lists[id(a)] = np.asarray(a, dtype=float).tolist()
    cols = [lists[id(a)] for a in (c.submit, c.walltime, c.runtime, c.input, c.output, c.data, c.storage)]
    nodes = np.asarray(c.nodes).tolist()
    return [make(id=i, user=u, submit=s, nodes=n, walltime=w, runtime=r, input=a, output=b, data=d, storage=st,
                 estimate=e)
            for i, u, n, s, w, r, a, b, d, st, e in zip(c.ids, c.users, nodes, *cols, est)]


__all__ = ["JobColumns", "columns_valid", "jobs_from_columns"]
