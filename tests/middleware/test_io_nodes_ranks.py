"""A real batch run's I/O nodes with more ranks than nodes, without Ray: the parts are split by the job's
nodes (the simulator's rule), whatever its ranks, and each I/O node carries its part for that part's time."""

from __future__ import annotations

import pytest

from iolab.emulator.batch.jobs import job_parts, rank_io_nodes
from iolab.middleware.io_node_state import IONodesState
from iolab.workloads.steps import Step


def state(cap=None):
    st = IONodesState(2, policy="fifo", rate=1.0, rates={"lps": 10.0, "hps": 10.0, "stage": 10.0}, cap=cap,
                      strict=True)
    st.start(0.0)
    return st


def test_three_ranks_on_two_nodes_make_two_parts_of_half_the_phase_each():
    # nodes 0 and 1, one per I/O node; ranks 0, 1 on node 0 and rank 2 on node 1 (blocks, as srun places them)
    ranks = rank_io_nodes([0, 1], 3, lambda n: n)
    assert ranks == [0, 0, 1]
    parts = job_parts(ranks, [["compute", 1.0], ["write", 300]], node_io_nodes=[0, 1])
    assert parts == {0: {"ranks": [0, 1], "bytes": [0, 200], "nodes": 1},
                     1: {"ranks": [2], "bytes": [0, 100], "nodes": 1}}
    st = state(cap=100.0)
    st.add_job("a", 0, parts, [Step("compute", 1.0), Step("write", 300.0, "lps")], [0, 1], 0.0, 0.0, 2)
    assert (st.parts[("a", 0)].pace, st.parts[("a", 1)].pace) == pytest.approx((0.75, 1.5))
    for node in (0, 1):
        assert not st.request("a", node, 1, "write", parts[node]["bytes"][1], 1.0)
        assert st.parts[("a", node)].req.volume == 150.0  # half of the 300 B each: the job's nodes, not ranks
    assert sorted(st.dispatch(1.0)) == [("a", 0, 1), ("a", 1, 1)]
    # each part's ranks book their real bytes; each I/O node carries 150 B at 100 B/s: 1.5 s
    ends = [st.book("a", 0, 100, 1.0)[1], st.book("a", 0, 100, 1.0)[1], st.book("a", 1, 100, 1.0)[1]]
    assert ends == pytest.approx([1.75, 2.5, 2.5])
    for rank, node in enumerate(ranks):
        st.part_done("a", node, 1, rank, 2.5)
    st.close(2.5)
    assert sorted(e[2:] for e in st.records()["ends"]) == [(0, 2.5, 150.0), (1, 2.5, 150.0)]
    assert sorted(g[2:] for g in st.records()["grants"]) == [(0, 1.0, 1.0, 2.5), (1, 1.0, 1.0, 2.5)]


def test_a_compute_node_without_a_rank_is_refused():
    with pytest.raises(ValueError, match="every compute node of the job needs a rank"):
        job_parts([0], [["write", 100]], node_io_nodes=[0, 1])
