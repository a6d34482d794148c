"""A real `shared` run under an interference law, transfer by transfer against its fair-share replay.

The arbiter's bucket gives k overlapping writers ``b x f(k)`` in total, shared fairly; replayed on the
simulator's fair-share link from the real transfers' own starts (iolab.validation.fair_replay), every
transfer should last what the replay says, up to the pacing's granularity (2 MiB chunks served one after
another) and a writer the machine holds up.  What is left over is the noise `validate --seeds` resamples:
around 1, not the factor 1.5-3 that the sharing itself would be if read as noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from iolab.middleware.policies.interference import law_of
from iolab.specs.load import parse_spec
from iolab.validation.fair_replay import fair_share_durations
from iolab.validation.spread import duration_ratios

pytestmark = [pytest.mark.mpi, pytest.mark.ray, pytest.mark.long]

LAW = {"table": {2: 0.8, 3: 0.6}}  # two writers lose 20 % of the node, three 40 %


def spec():
    return parse_spec({
        "name": "shared-law", "policy": "shared",
        "platform": {"io_nodes": 1, "nodes_per_io_node": 16, "bandwidth": 1.0, "interference": LAW},
        "apps": [{"id": "a1", "nodes": 4, "iterations": 4, "compute": 6, "io_volume": 4},
                 {"id": "a2", "nodes": 4, "iterations": 6, "compute": 4, "io_volume": 2.5},
                 {"id": "a3", "nodes": 4, "iterations": 8, "compute": 3, "io_volume": 2}],
        "emulator": {"time_scale": 0.5, "unit_bytes": 4 << 20, "ranks_per_app": 1, "grid": 64,
                     "compute_mode": "duration", "bandwidth_cap": True, "lease": 30},
    })


def test_every_real_shared_transfer_lasts_its_fair_share_under_the_law(tmp_path):
    from iolab.emulator.io.run import run_emulation
    from iolab.emulator.ray_session import RaySession

    s = spec()
    with RaySession.open():
        t = run_emulation(s, "shared", work_dir=tmp_path / "work", out=tmp_path / "run.h5")
    assert list(t.jobs["status"]) == ["ok"] * 3
    p = t.phases
    real = {(str(j), int(i)): float(e) - float(st) for j, i, k, st, e, v in
            zip(p["job"], p["index"], p["kind"], p["start"], p["end"], p["volume"]) if k != "compute" and v > 0}
    assert len(real) == 4 + 6 + 8
    law = law_of(s.platform.interference)
    replay = fair_share_durations(t, 1.0, law)
    lossless = fair_share_durations(t, 1.0)
    ratio = np.array([real[key] / replay[key] for key in real])
    # the transfers did share: some k >= 2 stretches, where the law costs something
    shared = [key for key in real if replay[key] > 1.05 * lossless[key]]
    assert len(shared) >= 4, "too few transfers overlapped for the law to act"
    # each transfer as long as b x f(k) shared fairly makes it: the median within 3 %, three in four within
    # 10 %; none much shorter: the pacing serves 2 MiB chunks in turn, so of k equal sharers of n chunks the
    # first ends k - 1 turns early (1 - 2 / 3n = 0.83 for 3 sharers of a3's 4 chunks; 0.88 seen), a lossless
    # node would give 0.6 with 3; a writer the loaded machine holds up makes its transfer longer (+22 % and
    # +26 % seen at load 12-14)
    assert abs(np.median(ratio) - 1) <= 0.03, sorted(ratio)
    assert np.mean(np.abs(ratio - 1) <= 0.10) >= 0.75, sorted(ratio)
    assert ratio.min() >= 0.8, sorted(ratio)
    # and closer to the law's replay than to a lossless node's, on the transfers the law stretched
    off_law = np.median([abs(real[k] / replay[k] - 1) for k in shared])
    off_lossless = np.median([abs(real[k] / lossless[k] - 1) for k in shared])
    assert off_law < off_lossless, (off_law, off_lossless)
    # what `validate --seeds` resamples for this run: noise around 1, sharing taken off
    r = duration_ratios(t, s, 1.0)
    assert len(r["io"]) == len(real) and abs(np.median(r["io"]) - 1) <= 0.03
    volume = {(str(j), int(i)): float(v) for j, i, v in zip(p["job"], p["index"], p["volume"])}
    assert max(real[k] / volume[k] for k in real) > 1.3  # over volume / b the sharing would read as noise
