"""carretero2020 §3's single-vs-multiple experiment, simulated: the paper's loss d at four applications."""

from __future__ import annotations

import pytest

from iolab.sim.io.run import simulate
from iolab.validation.single_multi import UNITS, single_vs_multiple

# carretero2020 §3's text: 4 applications at once lost 2 %, 16 % and 11 % of the aggregate (use cases A, B, C)
PAPER_D = {"lustre-plafrim-a": 0.02, "lustre-plafrim-b": 0.16, "lustre-plafrim-c": 0.11}


@pytest.mark.parametrize("preset", sorted(PAPER_D))
def test_four_apps_together_lose_the_papers_share_of_one_alone(preset):
    traces = []

    def run(spec, path):
        traces.append(simulate(spec))
        return traces[-1]

    r = single_vs_multiple(preset, 4, run)
    assert r.d == pytest.approx(PAPER_D[preset], abs=1e-3)
    # alone, the app gets the node's whole bandwidth (1 unit/s); together, the four write 160 units at (1 - d)
    assert r.single == pytest.approx(1.0, rel=1e-3) and r.single_span == pytest.approx(UNITS, rel=1e-3)
    assert r.multi_span == pytest.approx(4 * UNITS / (1 - PAPER_D[preset]), rel=1e-3)
    # shared fairly: the four write phases start together and end together
    writes = [x for x in traces[1].phases.rows() if x["kind"] == "write"]
    assert len(writes) == 4
    assert max(x["end"] for x in writes) - min(x["end"] for x in writes) == pytest.approx(0.0, abs=1e-6)


def test_without_a_law_four_apps_lose_nothing():
    r = single_vs_multiple(None, 4)
    assert r.d == pytest.approx(0.0, abs=1e-9) and r.multi == pytest.approx(r.single, rel=1e-9)
