"""carretero2020 §3's single-vs-multiple experiment for real: the arbiter's ``shared`` bucket under a preset."""

from __future__ import annotations

import pytest

from iolab.middleware.policies.interference import InterferenceLaw
from iolab.validation.single_multi import single_vs_multiple

pytestmark = [pytest.mark.mpi, pytest.mark.ray, pytest.mark.long]


def test_four_real_apps_under_preset_b_get_f4_of_the_node_together(tmp_path):
    from iolab.emulator.io.run import run_emulation
    from iolab.emulator.ray_session import RaySession

    f4 = InterferenceLaw.preset("lustre-plafrim-b").factor(4)
    assert f4 == pytest.approx(0.84)  # the paper's d = 16 % (use case B)
    with RaySession.open():
        r = single_vs_multiple("lustre-plafrim-b", 4, lambda spec, out: run_emulation(spec, out=out), tmp_path)
    assert (tmp_path / "single.h5").is_file() and (tmp_path / "multi.h5").is_file()
    # the node's bandwidth is 1 unit/s: alone an app gets it (less its chunks' own costs), four get f(4) of it
    assert 0.9 <= r.single <= 1.01
    assert r.multi == pytest.approx(f4, rel=0.05)
    assert 0.10 <= r.d <= 0.20  # the paper's 16 %; a lossless shared node would give ~0
