"""The built-in sharing policies (ThemisIO's job-fair, size-fair, user-fair; Lustre's TBF) on hand-made
streams, their spec forms and the errors that name the field."""

from __future__ import annotations

import math

import pytest

from iolab.errors import SpecError
from iolab.middleware.policies.interference import InterferenceLaw
from iolab.middleware.policies.io_guard import io_policy
from iolab.middleware.policies.io_order import Sharing, Stream
from iolab.middleware.policies.sharing import JobFair, SizeFair, TBFRule, TokenBucketFilter, UserFair
from iolab.specs import parse_spec


def st(job: str, nodes: int = 1, user: str = "", part: str = "") -> Stream:
    return Stream(job + part, job, 0, nodes, 10.0, 0.0, 0.0, user)


def test_every_builtin_is_a_public_sharing():
    for p in (JobFair(), SizeFair(), UserFair(), TokenBucketFilter(rate=1.0)):
        assert isinstance(p, Sharing) and not p.exclusive and not getattr(p, "equal", False)


def test_job_fair_splits_a_job_among_its_streams():
    assert JobFair().shares([st("a"), st("b"), st("c")], 0.0) == pytest.approx([1 / 3] * 3)
    # two streams of a (two I/O nodes' parts would be on two nodes; here a made-up pair): a's half, halved
    assert JobFair().shares([st("a", part="@1"), st("a", part="@2"), st("b")], 0.0) == pytest.approx([.25, .25, .5])


def test_size_fair_is_proportional_to_nodes():
    assert SizeFair().shares([st("a", 6), st("b", 2)], 0.0) == pytest.approx([0.75, 0.25])
    assert SizeFair().shares([st("a", 4), st("a", 4, part="@x"), st("b", 4)], 0.0) == pytest.approx([.25, .25, .5])


def test_user_fair_gives_each_user_an_equal_share_then_each_of_their_jobs():
    s = UserFair().shares([st("a", user="u"), st("b", user="u"), st("c", user="v")], 0.0)
    assert s == pytest.approx([0.25, 0.25, 0.5])
    assert math.fsum(s) == pytest.approx(1.0)


def test_tbf_first_matching_rule_gives_the_rate_and_default_the_rest():
    tbf = TokenBucketFilter([TBFRule(0.3, job="app[12]"), TBFRule(0.5, job="app*"), TBFRule(0.9, max_nodes=2)],
                            default_rate=0.1, rate=1.0)
    assert tbf.shares([st("app1")], 0.0) == pytest.approx([0.3])  # first match, not the later app*
    assert tbf.shares([st("app3")], 0.0) == pytest.approx([0.5])
    assert tbf.shares([st("x", nodes=2)], 0.0) == pytest.approx([0.9])
    assert tbf.shares([st("x", nodes=3)], 0.0) == pytest.approx([0.1])  # no rule: the default


def test_tbf_leaves_bandwidth_unused_below_capacity_and_scales_above():
    tbf = TokenBucketFilter([TBFRule(0.2, job="a")], default_rate=0.3, rate=1.0)
    assert tbf.shares([st("a"), st("b")], 0.0) == pytest.approx([0.2, 0.3])  # 0.5 of the node unused
    three = tbf.shares([st("a"), st("b"), st("c"), st("d")], 0.0)  # 0.2 + 3 x 0.3 = 1.1 > 1
    assert three == pytest.approx([0.2 / 1.1, 0.3 / 1.1, 0.3 / 1.1, 0.3 / 1.1])
    assert math.fsum(three) == pytest.approx(1.0)


def test_tbf_rates_are_absolute_so_the_law_raises_the_share():
    law = InterferenceLaw("table", points=((1, 1.0), (2, 0.5)))
    tbf = TokenBucketFilter([], default_rate=0.2, rate=1.0, law=law)
    # two streams: the node carries 0.5; 0.2 of it is a share of 0.4
    assert tbf.shares([st("a"), st("b")], 0.0) == pytest.approx([0.4, 0.4])


def test_tbf_without_a_cap_is_an_equal_split_when_congested():
    tbf = TokenBucketFilter(rate=2.0)
    assert tbf.shares([st("a"), st("b")], 0.0) == pytest.approx([0.5, 0.5])


def test_tbf_per_user_bucket_is_split_among_the_users_streams():
    tbf = TokenBucketFilter([TBFRule(0.4, user="alice")], default_rate=0.2, classify="user", rate=1.0)
    s = tbf.shares([st("a", user="alice"), st("b", user="alice"), st("c", user="bob")], 0.0)
    assert s == pytest.approx([0.2, 0.2, 0.2])


def test_tbf_needs_its_node_rate_and_sane_options():
    with pytest.raises(ValueError, match="rate"):
        TokenBucketFilter([TBFRule(1.0)])
    with pytest.raises(ValueError, match="only user"):
        TokenBucketFilter([TBFRule(1.0, job="x")], classify="user", rate=1.0)
    with pytest.raises(ValueError, match="rate must be"):
        TBFRule(0.0)


# ---------------------------------------------------------------- spec forms

def io_spec(policy) -> dict:
    return {"name": "t", "platform": {"io_nodes": 1, "nodes_per_io_node": 8, "bandwidth": 2.0}, "policy": policy,
            "apps": [{"id": "a", "nodes": 1, "phases": [{"write": 1.0}]}]}


@pytest.mark.parametrize("name", ["job-fair", "Size_Fair", "user-fair"])
def test_sharing_names_in_a_spec(name):
    s = parse_spec(io_spec(name), "<t>")
    p = io_policy(s.policy)
    assert p.name == name.lower().replace("_", "-") and isinstance(p, Sharing)


def test_tbf_mapping_in_an_io_spec_builds_with_the_node_rate():
    s = parse_spec(io_spec({"kind": "TBF", "rules": [{"job": "a*", "rate": 0.5, "name": "r1"}], "default_rate": 1}),
                   "<t>")
    p = io_policy(s.policy, rate=s.platform.bandwidth)
    assert isinstance(p, TokenBucketFilter) and p.rate == 2.0
    assert p.shares([st("a")], 0.0) == pytest.approx([0.25])  # 0.5 of a node of 2 units/s


def test_tbf_in_a_batch_platform_takes_rates_with_units():
    spec = parse_spec({"kind": "batch", "platform": {
        "nodes": 4, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "1 GB/s", "capacity": "1 TB"}, "stage_rate": "1 GB/s",
        "io_nodes": 1, "io_node": {"rate": "2 GB/s", "policy": {"kind": "tbf", "rules": [{"min_nodes": 2,
                                                                                             "rate": "500 MB/s"}]}}},
        "scheduler": "fcfs", "workload": [{"id": "j", "submit": 0, "nodes": 1, "walltime": 10, "runtime": 5}]}, "<t>")
    p = io_policy(spec.platform.io_node.policy, rate=spec.platform.io_node.rate)
    assert p.rules[0].rate == 5e8 and p.shares([st("big", nodes=2)], 0.0) == pytest.approx([0.25])


@pytest.mark.parametrize("policy, where, why", [
    ({"kind": "tbf", "rules": [{"job": "a", "rate": -1}]}, "policy.rules[0].rate", "greater than 0"),
    ({"kind": "tbf", "rules": [{"job": "a", "rate": 1, "nodes": 3}]}, "policy.rules[0].nodes", "unknown field"),
    ({"kind": "tbf", "default_rate": "fast"}, "policy.default_rate", "not a size"),
    ({"kind": "tbf", "rules": [{"min_nodes": 4, "max_nodes": 2, "rate": 1}]}, "policy.rules[0]", "no job matches"),
    ({"kind": "tbf", "classify": "user", "rules": [{"job": "a", "rate": 1}]}, "policy", "names only user"),
    ("tbf", "policy", "needs its rules"),
    ("fair", "policy", "job-fair"),  # the unknown name lists the known ones, sharing names included
])
def test_bad_sharing_values_are_refused_naming_the_field(policy, where, why):
    with pytest.raises(SpecError) as err:
        parse_spec(io_spec(policy), "<t>")
    assert any(p == where and why in r for p, r in err.value.problems), err.value.problems


def test_cli_policy_takes_the_names_and_an_inline_mapping():
    from iolab.cli.options import IO_POLICY

    assert IO_POLICY.convert("Job_Fair", None, None) == "job-fair"
    assert IO_POLICY.convert("{kind: tbf, default_rate: 0.25}", None, None) == {"kind": "tbf", "default_rate": 0.25}
    with pytest.raises(Exception, match="not a mapping"):
        IO_POLICY.convert("{kind: [", None, None)
