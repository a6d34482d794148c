"""What a batch policy allows the kernel (``fast_paths.BatchFastPaths``): one record, read once.

A policy that sets none of the attributes gets the general path; a guarded (user's) scheduler gets the
guard's; strict mode and read plans turn off the paths that skip what they read."""

from __future__ import annotations

from dataclasses import fields

import pytest

from iolab.middleware.policies.batch import get_scheduler
from iolab.middleware.policies.batch.fast_paths import BatchFastPaths, fast_paths, set_projection
from iolab.middleware.policies.guard import GuardedScheduler


class Plain:
    """A scheduler that sets nothing."""

    def decide(self, snap):
        return []


def test_a_policy_that_sets_nothing_gets_the_defaults_which_are_the_general_path():
    assert fast_paths(Plain()) == BatchFastPaths()
    d = BatchFastPaths()
    assert not d.quick and not d.reads_fitting_prefix and d.reads_profile and d.quick_reads_releases
    assert not d.stateful and not d.sees_every_change and not d.reads_node_ids and not d.plans_in_start_order


def test_a_guarded_scheduler_gets_the_guards_flags_and_its_users_sees_every_change():
    class Every(Plain):
        sees_every_change = True

    a = fast_paths(GuardedScheduler(Plain(), "plain.py:Plain"))
    assert not a.quick and not a.reads_profile and a.stateful and a.reads_node_ids and not a.sees_every_change
    assert fast_paths(GuardedScheduler(Every(), "every.py:Every")).sees_every_change


@pytest.mark.parametrize("kind", ["easy", "fcfs"])
def test_quick_and_the_prefix_only_while_nobody_else_reads_the_decision(kind):
    policy = get_scheduler(kind)
    set_projection(policy, record_plans=False)
    lean = fast_paths(policy)
    assert lean.quick and not lean.reads_profile
    assert lean.reads_fitting_prefix == (kind == "fcfs")
    for readers in ({"observed": True}, {"plans_read": True}):
        a = fast_paths(policy, **readers)
        assert not a.quick and not a.reads_fitting_prefix
        assert a.reads_profile == lean.reads_profile  # the policy's own promise stays
    a = fast_paths(policy, decisions_read=True)
    assert not a.quick and a.reads_fitting_prefix == lean.reads_fitting_prefix


def test_projection_is_asked_only_if_someone_reads_it():
    policy = get_scheduler("easy")
    set_projection(policy, record_plans=True)
    assert policy.project  # recorded plans: left as set
    set_projection(policy, record_plans=False)
    assert not policy.project and fast_paths(policy).quick
    set_projection(policy, record_plans=False, tracked=True)
    assert policy.project and not fast_paths(policy).quick


def test_the_record_is_frozen_and_every_field_has_a_default():
    a = BatchFastPaths()
    with pytest.raises(AttributeError):
        a.quick = True  # type: ignore[misc]
    assert all(f.default is not None for f in fields(BatchFastPaths))
