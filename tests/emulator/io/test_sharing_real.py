"""A user's Sharing, from a file outside the repository, in a real run and in the simulator.

Three apps of 6, 2 and 4 nodes share one I/O node by their sizes (a user's size-fair, ``ByNodes``); the
real run paces each granted app on a token-bucket lane at its share (docs/sharing.md).  Checked:

- the world: the bytes the buckets booked are the spec's volumes, and every transfer lasts what its
  share makes it, replayed from the real transfers' own starts on the simulator's weighted link (the
  median within 5 %, three in four within 10 %: the pacing serves 2 MiB chunks, and a loaded machine
  holds a writer up now and then; measured: median 1.02, 12 of 13 within 6 %);
- the two runtimes: every app ends within 5 % of the simulation of the same spec, and nearer to it than
  to the simulation under ``shared`` (measured: within 2.5 %);
- a broken answer stops the real run with the rule, as in the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from iolab.invariants import InvariantViolation
from iolab.middleware.policies.sharing import SizeFair
from iolab.sim.io.run import simulate
from iolab.sim.weighted_link import WeightedLink
from iolab.specs import parse_spec

pytestmark = [pytest.mark.mpi, pytest.mark.ray, pytest.mark.long]

POLICY = '''
from iolab.policy import Sharing


class ByNodes(Sharing):
    """Each stream a share proportional to its app's nodes (size-fair, written by a user)."""

    def shares(self, streams, now):
        total = sum(s.nodes for s in streams)
        return [s.nodes / total for s in streams]


class Over(Sharing):
    """Too much for everyone once two transfer."""

    def shares(self, streams, now):
        return [1.0] if len(streams) == 1 else [0.6] * len(streams)
'''
UNIT = 4 << 20


def spec(path, cls="ByNodes"):
    return parse_spec({
        "name": "sharing-real", "policy": {"kind": "python", "path": str(path), "class": cls},
        "platform": {"io_nodes": 1, "nodes_per_io_node": 16, "bandwidth": 1.0},
        "apps": [{"id": "a1", "nodes": 6, "iterations": 4, "compute": 4, "io_volume": 4},
                 {"id": "a2", "nodes": 2, "iterations": 4, "compute": 4, "io_volume": 4},
                 {"id": "a3", "nodes": 4, "iterations": 5, "compute": 3, "io_volume": 3}],
        "emulator": {"time_scale": 0.5, "unit_bytes": UNIT, "ranks_per_app": 1, "grid": 64,
                     "compute_mode": "duration", "bandwidth_cap": True, "lease": 30},
    }, "<test>")


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "elsewhere" / "by_nodes.py"  # outside the repository
    path.parent.mkdir()
    path.write_text(POLICY)
    return path


def replay(trace, nodes: dict[str, int]) -> dict[tuple[str, int], float]:
    """Each real transfer's duration on the simulator's weighted link under size-fair, every transfer
    joining at its real start with its volume (b = 1)."""
    p = trace.phases
    rows = sorted((float(s), str(j), int(i), float(v)) for j, i, k, s, e, v in
                  zip(p["job"], p["index"], p["kind"], p["start"], p["end"], p["volume"]) if k != "compute" and v > 0)
    link = WeightedLink(1.0, None, SizeFair(), lambda key: (f"{key[0]}#{key[1]}", key[0], 0, nodes[key[0]], ""))
    began, out, k = {}, {}, 0
    while k < len(rows) or len(link):
        done = link.next_completion()
        if k < len(rows) and rows[k][0] <= done:
            start, job, idx, vol = rows[k]
            k += 1
            began[(job, idx)] = start
            link.add((job, idx), vol, start)
        else:
            for key in link.pop_finished(done):
                out[key] = done - began[key]
    return out


def test_a_users_sharing_runs_for_real_as_in_the_simulator(policy_file, tmp_path):
    from iolab.emulator.io.run import run_emulation
    from iolab.emulator.ray_session import RaySession

    s = spec(policy_file)
    with RaySession.open():
        real = run_emulation(s, work_dir=tmp_path / "work", out=tmp_path / "run.h5")
    sim = simulate(s, strict=True)
    shared = simulate(s.model_copy(update={"policy": "shared"}), strict=True)
    assert list(real.jobs["status"]) == ["ok"] * 3
    assert real.attrs["policy"] == sim.attrs["policy"] == "by_nodes.py:ByNodes"

    # the world: the buckets booked every byte of every transfer
    assert sum(real.attrs["bytes_booked"]) == (4 * 4 + 4 * 4 + 5 * 3) * UNIT

    # each transfer as long as its share makes it, from the real starts
    p = real.phases
    took = {(str(j), int(i)): float(e) - float(st) for j, i, k, st, e, v in
            zip(p["job"], p["index"], p["kind"], p["start"], p["end"], p["volume"]) if k != "compute" and v > 0}
    want = replay(real, {"a1": 6, "a2": 2, "a3": 4})
    assert sorted(took) == sorted(want) and len(took) == 13
    ratio = np.array([took[key] / want[key] for key in took])
    assert abs(np.median(ratio) - 1) <= 0.05, sorted(ratio)
    assert np.mean(np.abs(ratio - 1) <= 0.10) >= 0.75, sorted(ratio)

    # the two runtimes: every app ends where the simulation of the same spec says
    end = lambda t: dict(zip(map(str, t.jobs["id"]), map(float, t.jobs["end"])))  # noqa: E731
    r, m, f = end(real), end(sim), end(shared)
    for app in r:
        assert abs(r[app] / m[app] - 1) <= 0.05, (app, r[app], m[app])
    assert sum(abs(r[a] - m[a]) for a in r) < sum(abs(r[a] - f[a]) for a in r), (r, m, f)


def test_a_broken_sharing_stops_a_real_run_with_the_rule(policy_file, tmp_path):
    from iolab.emulator.io.run import run_emulation
    from iolab.emulator.ray_session import RaySession

    with RaySession.open(), pytest.raises(InvariantViolation) as err:
        run_emulation(spec(policy_file, "Over"), work_dir=tmp_path / "work", out=tmp_path / "run.h5")
    assert err.value.rule == "malformed-decision" and "sum to 1.2" in err.value.detail
    assert err.value.time == pytest.approx(4.0, abs=0.5)  # when a1 and a2 first transfer together
