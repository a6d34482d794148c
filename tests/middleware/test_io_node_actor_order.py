"""When the real I/O-node actor decides (docs/storage.md, "When the arbiter decides"): at each call, first
come, where the simulator dispatches once per instant.  The actor's class is driven with asyncio, no Ray."""

from __future__ import annotations

import asyncio
import time

from iolab.middleware.io_node_actor import _IONodesActor
from iolab.workloads.steps import Step


def actor(policy: str) -> _IONodesActor:
    a = _IONodesActor(dict(io_nodes=1, policy=policy, rate=1.0, rates={"lps": 10.0, "hps": 10.0, "stage": 10.0},
                           strict=True))
    a.state.start(time.time())
    for rank, (job, nbytes) in enumerate((("big", 100), ("small", 10))):
        a.state.add_job(job, rank, {0: {"ranks": [0], "bytes": [0, nbytes]}},
                        [Step("compute", 1.0), Step("write", float(nbytes), "lps")], [0, 1], 0.0, time.time())
    return a


async def _two_requests(policy: str) -> list[str]:
    """``big`` asks, then ``small`` a moment later; each then releases once granted.  The grant order."""
    a = actor(policy)
    order: list[str] = []

    async def one(job: str, nbytes: int):
        await a.request(job, 0, 1, "write", nbytes)
        order.append(job)
        await asyncio.sleep(0.01)
        await a.part_done(job, 0, 1, 0)

    first = asyncio.create_task(one("big", 100))
    await asyncio.sleep(0.005)  # a few milliseconds later: the I/O node is already big's
    await one("small", 10)
    await first
    a.state.close(time.time())
    return order


def test_the_actor_grants_an_idle_io_node_to_the_first_request_whatever_the_policy_ranks_first():
    # shortest-io ranks small (10 B) before big (100 B) when both wait; the actor decides at big's call
    assert asyncio.run(_two_requests("shortest-io")) == ["big", "small"]


def test_requests_waiting_together_are_ranked_by_the_policy():
    # the simulator's instant: both wait when the I/O node dispatches, and the policy puts small first
    a = actor("shortest-io")
    now = time.time()
    a.state.request("big", 0, 1, "write", 100, now)
    a.state.request("small", 0, 1, "write", 10, now)
    assert [g[0] for g in a.state.dispatch(now)] == ["small"]


def test_a_call_and_what_it_decides_are_one_instant():
    """As in the simulator, a request to an idle I/O node is granted at the time it was made, and the request
    waiting behind it at the time of the release that freed the node: the actor dispatches at the time of
    the call that changed its books, not a moment later."""
    async def run() -> list[tuple]:
        a = actor("fifo")

        async def one(job: str, nbytes: int, hold: float):
            await a.request(job, 0, 1, "write", nbytes)
            a.state.book(job, 0, nbytes, time.time())  # strict mode counts the bytes each part moved
            await asyncio.sleep(hold)
            await a.part_done(job, 0, 1, 0)

        first = asyncio.create_task(one("big", 100, 0.05))
        await asyncio.sleep(0.01)  # small asks while big holds the node
        await one("small", 10, 0.0)
        await first
        a.state.close(time.time())
        return a.state.records()["grants"]

    rows = {r[0]: r for r in asyncio.run(run())}  # (job, step, node, request, grant, release), spec seconds
    assert rows["big"][3] == rows["big"][4], rows["big"]  # an idle node: no wait
    assert rows["small"][3] < rows["small"][4] == rows["big"][5], (rows["big"], rows["small"])  # at big's release
