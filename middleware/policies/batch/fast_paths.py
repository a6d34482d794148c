"""What a batch policy allows the batch kernel to skip: one record, built once per run.

A policy that sets none of the attributes read here is correct: every default is the slow, general
path (the kernel decides on a full snapshot, keeps everything a policy may read, asks at every
change).  The built-in policies set them for speed (``iolab/policy.py``: they are the built-ins'
own, not part of the public API); a user's scheduler is called through its guard
(:class:`~iolab.middleware.policies.guard.GuardedScheduler`), which says what the kernel must keep
for any scheduler.  :func:`fast_paths` reads them once, when the kernel is set up
(:class:`~.kernel.BatchKernel`), together with who else reads the kernel's decisions (strict mode's
observer, plans recorded or tracked, an ``on_decision`` callback), and the kernel then reads only
the record.  docs/batch-policies.md, "What a policy allows the kernel", is the same list for a
reader.

``project`` and ``backfill_depth`` are not in the record: the first is what the run asks of the
policy (:func:`set_projection`: compute the starts of the jobs that do not start now only if
someone reads them; set before the record is built, since other attributes follow from it), the
second a parameter of the algorithm (it changes the schedule); the policies read both themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BatchFastPaths", "fast_paths", "set_projection"]


@dataclass(frozen=True, slots=True)
class BatchFastPaths:
    """What the batch kernel may skip for one policy in one run.  Each field is named after the policy
    attribute it comes from; its default is that of a policy that sets none of them."""

    #: decide through ``policy.quick_starts`` (the jobs to start, from the kernel's queue and sorted
    #: releases: no snapshot, no decision object, no running views kept).  The policy's ``quick``, and
    #: only while nobody else reads a decision (no observer, no plans recorded or tracked, no
    #: ``on_decision``)
    quick: bool = False
    #: ``quick_starts`` reads the running jobs' sorted releases (False: a quick run keeps none)
    quick_reads_releases: bool = True
    #: decisions build a profile from the kept releases (False: the kept releases carry no profile
    #: columns; a profile built from them is the same, so False is a promise about speed only)
    reads_profile: bool = True
    #: a decision reads the queue only up to the first job whose nodes are not free (FCFS deciding its
    #: starts only): a snapshot holds that prefix.  The policy's ``reads_fitting_prefix``, and only while
    #: nobody else reads the snapshot's queue (no observer, no plans recorded or tracked)
    reads_fitting_prefix: bool = False
    #: the policy reads the free node ids (``Snapshot.free_node_ids``): the kernel gives every job ids
    reads_node_ids: bool = False
    #: planned starts never decrease along a plan (nobody overtakes): plan tracking replays only until
    #: the node sets join the last pass's (``nodes.replay_in_start_order``)
    plans_in_start_order: bool = False
    #: the policy keeps state between decisions: it is asked even when no waiting job fits
    stateful: bool = False
    #: the policy is asked also when nothing waits, at every change (public: ``BatchScheduler``)
    sees_every_change: bool = False


def fast_paths(policy, *, observed: bool = False, plans_read: bool = False,
               decisions_read: bool = False) -> BatchFastPaths:
    """The record of ``policy`` for a run in which ``observed`` (strict mode's observer sees every
    snapshot and decision), ``plans_read`` (plans recorded or tracked: every waiting job's planned start
    is read) and ``decisions_read`` (an ``on_decision`` callback is given each decision).  Read once:
    a policy's attributes may be properties of its settings (``project``, ``hps_requests``), which are
    set before the kernel is built."""
    snapshot_only = not observed and not plans_read  # nobody but the policy reads a snapshot
    return BatchFastPaths(
        quick=snapshot_only and not decisions_read and bool(getattr(policy, "quick", False)),
        quick_reads_releases=bool(getattr(policy, "quick_reads_releases", True)),
        reads_profile=bool(getattr(policy, "reads_profile", True)),
        reads_fitting_prefix=snapshot_only and bool(getattr(policy, "reads_fitting_prefix", False)),
        reads_node_ids=bool(getattr(policy, "reads_node_ids", False)),
        plans_in_start_order=bool(getattr(policy, "plans_in_start_order", False)),
        stateful=bool(getattr(policy, "stateful", False)),
        sees_every_change=bool(getattr(policy, "sees_every_change", False)),
    )


def set_projection(policy, *, record_plans: bool, tracked: bool = False) -> None:
    """Ask ``policy`` for the starts of the jobs it does not start now (its ``project``) if the plan
    tracker reads them (``tracked``), not if nobody reads a plan, and leave it as it was set if only
    recorded plans read them; a policy whose decisions need the whole plan ignores it."""
    if tracked:
        policy.project = True
    elif not record_plans:
        policy.project = False
