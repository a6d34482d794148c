"""The Gymnasium environment on a batch spec: Gymnasium's own checker, a vector of environments, the same episode
under the same seed, an agent that always picks the head of the queue makes FCFS's trace job for job, the reward
adds up to the bounded slowdown ``iolab report`` gives, and an agent's function decides a run through the public
policy API."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="the environment needs gymnasium (pip install 'iolab[gym]')")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from iolab.gym import AgentScheduler, BatchSchedulingEnv  # noqa: E402
from iolab.metrics.batch import bounded_slowdown  # noqa: E402
from iolab.sim.batch.run import run_batch, simulate_batch  # noqa: E402
from iolab.specs.batch import BatchExperiment  # noqa: E402

from shared_data import REPO, shared_file  # noqa: E402


def kth(limit: int | None = 1500, scheduler="fcfs") -> BatchExperiment:
    return BatchExperiment.model_validate({
        "kind": "batch", "name": "kth",
        "platform": {"nodes": 100, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                     "stage_rate": "5 GB/s"},
        "scheduler": scheduler,
        "workload": {"source": "swf", "path": str(shared_file("KTH-SP2-1996-2.1-cln.swf.gz")),
                     **({"limit": limit} if limit else {})}})


def lackner() -> BatchExperiment:
    """lackner2019's Feitelson workload with I/O, HPS requests and I/O nodes: every observation has content."""
    return BatchExperiment.model_validate({
        "kind": "batch", "name": "lackner",
        "platform": {"nodes": 64, "lps": {"rate": "1 GB/s"}, "hps": {"rate": "15 GB/s", "capacity": "2048 GB"},
                     "stage_rate": "5 GB/s", "io_nodes": 4, "io_node": {"rate": "4 GB/s"}},
        "scheduler": "sas", "workload": {"source": "feitelson", "jobs": 300}})


def play(env, agent, seed):
    obs, info = env.reset(seed=seed)
    seen, total, done = [obs], 0.0, False
    while not done:
        obs, reward, done, truncated, info = env.step(agent(obs, info))
        assert not truncated
        seen.append(obs)
        total += reward
    return seen, total, info


def test_gymnasiums_checker_passes_with_tiers_and_io_nodes():
    env = BatchSchedulingEnv(lackner(), k=8, tiers=True, window=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of gymnasium's either
        check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert obs["jobs"].shape == (8, 7) and obs["io_nodes"].shape == (4,) and env.action_space.n == 17
    assert info["action_mask"][16] == 1  # waiting is always possible


def test_the_same_seed_gives_the_same_episode_and_another_seed_another():
    def agent_of(seed):
        rng = np.random.default_rng(seed)
        return lambda obs, info: int(rng.integers(17))

    runs = [play(BatchSchedulingEnv(lackner(), k=8, tiers=True, window=80), agent_of(7), seed) for seed in (3, 3, 4)]
    (a, ra, ia), (b, rb, ib), (c, _, _) = runs
    assert len(a) == len(b) and ra == rb and ia["mean_bsld"] == ib["mean_bsld"]
    assert all(np.array_equal(x[k], y[k]) for x, y in zip(a, b) for k in x)
    assert not np.array_equal(a[0]["jobs"], c[0]["jobs"])  # another window of another Feitelson draw


def test_an_agent_that_always_picks_the_head_of_the_queue_makes_fcfss_trace():
    env = BatchSchedulingEnv(kth(), k=8)
    _, total, info = play(env, lambda obs, info: 0, seed=0)
    got = {s.queued.id: (s.start, s.end) for s in env.last_run.jobs}
    want = {s.queued.id: (s.start, s.end) for s in run_batch(kth(), rows=False).jobs}
    assert got == want
    # the return is minus the bounded slowdowns iolab's metrics give
    rec = env.last_run.jobs
    bsld = bounded_slowdown(np.array([s.queued.submit for s in rec]), np.array([s.start for s in rec]),
                            np.array([s.end for s in rec]))
    assert -total == pytest.approx(float(np.sum(bsld))) and info["jobs"] == len(rec) == 1500


def test_a_vector_of_environments_steps_and_resets_its_episodes():
    envs = gym.vector.SyncVectorEnv([lambda: BatchSchedulingEnv(lackner(), k=4, window=15) for _ in range(3)])
    obs, _ = envs.reset(seed=1)
    ended = 0
    for _ in range(120):
        obs, reward, term, trunc, info = envs.step(envs.action_space.sample())
        ended += int(term.sum())
    assert obs["jobs"].shape == (3, 4, 7) and ended >= 3
    envs.close()


def test_an_agents_function_decides_a_run_through_the_public_policy_api(tmp_path):
    agent = tmp_path / "agents.py"
    agent.write_text((REPO / "examples" / "gym" / "agents.py").read_text())
    doc = json.loads(kth(800).model_dump_json())
    doc["scheduler"] = {"kind": "python", "module": "iolab.gym.agent", "class": "AgentScheduler",
                        "options": {"agent": f"{agent}:head", "k": 4}}
    trace = simulate_batch(BatchExperiment.model_validate(doc), strict=True)
    fcfs = simulate_batch(kth(800), strict=True)
    assert list(trace.jobs["start"]) == list(fcfs.jobs["start"])
    assert "AgentScheduler" in trace.attrs["scheduler"]
    with pytest.raises(ValueError, match="no function nope"):
        AgentScheduler(f"{agent}:nope")
