"""The simulator's volume model fitted to measured response times (``iolab controller fit``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from iolab.cli import cli
from iolab.sim.batch.load_controller import VolumeModel
from iolab.sim.batch.volume_fit import fit_volume_model
from iolab.trace import TraceBuilder, write_trace

P = 1e9


def samples(r0, probe_rate, counts, rng, tail=0.0):
    """Responses around r0 + p (k + 1) / probe_rate, with noise and (optionally) a long tail."""
    w, r = [], []
    for k, n in counts.items():
        base = r0 + P * (k + 1) / probe_rate
        x = base * (1 + 0.05 * rng.standard_normal(n))
        if tail:
            x[: max(1, int(tail * n))] *= 10  # a few slow fsyncs
        w += [k] * n
        r += list(x)
    return w, r


def test_the_fit_recovers_a_known_line_despite_a_long_tail():
    rng = np.random.default_rng(5)
    w, r = samples(0.2, 5e9, {0: 40, 1: 40, 2: 40, 4: 40}, rng, tail=0.1)
    f = fit_volume_model(w, r, P)
    assert f.r0 == pytest.approx(0.2, rel=0.1) and f.probe_rate == pytest.approx(5e9, rel=0.1)
    assert (f.gamma, f.knee) == (0.0, 1) and f.mae < 0.02
    # the simulator's response with the fitted spec is the fitted line
    m = VolumeModel(1e9, **{k: v for k, v in f.spec().items() if k in ("gamma", "knee", "r0", "probe_rate")})
    for k, _, _, model in f.rows:
        assert m.response(k, P) == pytest.approx(model, rel=1e-5)


def test_a_flat_response_and_a_single_writer_count_are_constants():
    rng = np.random.default_rng(6)
    w, r = samples(0.3, 1e30, {0: 20, 3: 20}, rng)
    flat = fit_volume_model(w, r, P)
    assert flat.r0 == pytest.approx(0.3, rel=0.05) and flat.probe_rate > 1e11
    one = fit_volume_model([2] * 9, [0.1 * i for i in range(1, 10)], P)
    assert one.r0 == pytest.approx(0.5) and math.isinf(one.probe_rate) and one.spec()["probe_rate"] == 1e30
    with pytest.raises(ValueError):
        fit_volume_model([math.nan], [1.0], P)


def test_without_a_probe_rate_the_model_is_the_tier_rate_as_before():
    m = VolumeModel(1e9, gamma=0.5, knee=1, r0=0.1)
    assert m.response(2, P) == pytest.approx(0.1 + P * 3 / (1e9 / (1 + 0.5 * 2)))
    assert VolumeModel(1e9, gamma=0.5, knee=1, r0=0.1, probe_rate=1e9).response(2, P) == pytest.approx(m.response(2, P))


def _real_trace(path, w, r, runtime="emulator-batch"):
    tb = TraceBuilder()
    tb.extend("samples", [(float(i), "lps", float(x), int(k), 0.0, 0.0, 0.0, float(x), 0.0, 0.0)
                          for i, (k, x) in enumerate(zip(w, r))])
    write_trace(tb.build(runtime=runtime, spec={"controller": {"p": P}}), path)
    return path


def test_controller_fit_prints_the_spec_section_of_the_fit(tmp_path):
    rng = np.random.default_rng(8)
    w, r = samples(0.25, 2e10, {0: 15, 1: 15, 3: 30}, rng)
    t = _real_trace(tmp_path / "real.h5", w, r)
    res = CliRunner().invoke(cli, ["controller", "fit", str(t), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    f = fit_volume_model(w, r, P)
    assert out["model"] == f.spec() and out["samples"] == 60 and [row["writers"] for row in out["rows"]] == [0, 1, 3]
    text = CliRunner().invoke(cli, ["controller", "fit", str(t)])
    assert text.exit_code == 0 and "model: {gamma: 0, knee: 1, r0:" in text.output
    sim = _real_trace(tmp_path / "sim.h5", w, r, runtime="sim-batch")
    bad = CliRunner().invoke(cli, ["controller", "fit", str(sim)])
    assert bad.exit_code == 2 and "simulated trace" in bad.output


def test_the_spread_is_the_quantiles_of_response_over_the_fitted_line():
    rng = np.random.default_rng(9)
    w, r = samples(0.2, 5e9, {0: 50, 1: 50, 3: 50}, rng, tail=0.1)
    f = fit_volume_model(w, r, P, quantiles=11)
    # the reference: every sample over the fitted model at its writer count, sorted, read at 0, 10 %, ... 100 %
    line = {k: model for k, _, _, model in f.rows}
    ratios = np.sort([x / line[k] for k, x in zip(w, r)])
    want = [float(np.quantile(ratios, q)) for q in np.linspace(0, 1, 11)]
    assert f.spread == pytest.approx(want, rel=1e-12)
    assert f.spread[5] == pytest.approx(1.0, abs=0.05)  # the line goes through the medians
    assert f.spread[-1] > 8  # the 10 % of slow fsyncs (x10) are the top of the spread
    assert f.spec()["spread"][-1] == pytest.approx(f.spread[-1], rel=1e-3)
    assert fit_volume_model(w, r, P, quantiles=0).spread == () and "spread" not in fit_volume_model(w, r, P, 0).spec()


def test_a_simulated_volume_draws_its_response_from_the_spread():
    spread = (0.5, 0.8, 1.0, 1.2, 6.0)
    m = VolumeModel(1e9, r0=0.1, probe_rate=1e10, spread=spread)
    # linear between the quantiles (np.interp is the reference)
    for u in (0.0, 0.1, 0.37, 0.5, 0.74, 0.99, 1.0):
        assert m.ratio(u) == pytest.approx(float(np.interp(u, np.linspace(0, 1, 5), spread)), rel=1e-12)
    assert VolumeModel(1e9).ratio(0.3) == 1.0
