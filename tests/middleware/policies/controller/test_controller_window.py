"""The response window of dheenadayalan2017 (Eqs. 5-9) on hand-made response series."""

import pytest

from iolab.middleware.policies.controller import (ControllerParams, ResponseWindow, decay, penalty, sleep_interval,
                                                  window_size)


def test_window_size_is_eq5_and_the_paper_defaults_agree():
    assert window_size(3, 10) == 18  # §5: ws = 3 min, d = 10 s -> beta = 18
    assert window_size(1, 20) == 3
    assert ControllerParams().window == 18
    assert ControllerParams(beta=12).window == 12
    with pytest.raises(ValueError):
        window_size(0, 10)


def test_penalty_eq6():
    assert penalty(61.0, 60.0, 18) == 1
    assert penalty(59.0, 60.0, 18) == -6  # -floor(18 / 3)
    assert penalty(10.0, 60.0, 20) == -6  # floor(20 / 3) = 6
    assert penalty(60.0, 60.0, 18) == 1  # equality counts high (documented convention)


def test_decay_eq7_moves_negatives_only():
    assert decay(-6) == -5
    assert decay(-1) == 0
    assert decay(0) == 0
    assert decay(1) == 1


def test_a_low_prediction_loses_its_weight_after_beta_over_3_instances():
    w = ResponseWindow(beta=18, alpha=0.75, r_threshold=60)
    w.push(10.0)  # low: -6
    assert w.entries() == (-6,)
    for k in range(1, 7):
        w.push(100.0)
        assert w.entries()[0] == -6 + k  # the 33 % decay, one per new instance
    assert w.entries()[0] == 0
    w.push(100.0)
    assert w.entries()[0] == 0  # and stays at 0


def test_s_alpha_beta_eq8_on_a_series():
    w = ResponseWindow(beta=4, alpha=0.75, r_threshold=60)
    # beta = 4: a low prediction is -1 and decays to 0 at the next instance
    w.extend([100, 100])
    assert w.score() == pytest.approx(0.5) and not w.loaded()  # missing entries count 0
    w.push(100)
    assert w.score() == pytest.approx(0.75) and w.loaded()
    w.push(10)  # [1, 1, 1, -1]
    assert w.entries() == (1, 1, 1, -1) and w.score() == pytest.approx(0.5) and not w.loaded()
    w.push(100)  # the -1 decays to 0: [1, 1, 0, 1]
    assert w.entries() == (1, 1, 0, 1) and w.loaded()
    w.push(100)
    assert w.entries() == (1, 0, 1, 1) and w.loaded()


def test_one_low_prediction_unloads_a_full_window_for_a_while_then_decays():
    # beta = 18, alpha = 0.75: a window of 18 highs scores 1; one low (-6) drops the score
    # to (17 - 6) / 18 < 0.75; it recovers as the -6 decays: (17 - 6 + k) / 18 >= 0.75 at k = 3
    w = ResponseWindow(beta=18, alpha=0.75, r_threshold=60)
    w.extend([100] * 18)
    assert w.loaded() and w.score() == 1
    w.push(5)
    assert not w.loaded() and w.score() == pytest.approx(11 / 18)
    states = []
    for _ in range(4):
        w.push(100)
        states.append(w.loaded())
    # each push: the -6 decays by 1, the oldest 1 leaves, a new 1 enters: 12/18, 13/18, 14/18 >= 0.75
    assert states == [False, False, True, True]
    assert w.entries().count(-2) == 1


def test_sleep_interval_eq9():
    assert sleep_interval([10, 70], 60, 180, 60) == 180
    assert sleep_interval([10, 59.9], 60, 180, 60) == 60
    assert sleep_interval([], 60, 180, 60) == 60
    assert sleep_interval([60], 60, 180, 60) == 180
