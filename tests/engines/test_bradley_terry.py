"""Seed 001 sections 7 and 8: the Bradley-Terry rater, the accuracy ceiling, the reward-model loss and normalisation."""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from app.cli.figures import bradley_terry as figure
from engines.bradley_terry import (
    BradleyTerrySettings,
    LabelledSetSettings,
    Normalizer,
    accuracy_vs_tau,
    bt_loss,
    bt_loss_gradient,
    bt_loss_np,
    bt_prob,
    fit_normalizer,
    oracle_accuracy,
    sample_labels,
    sigmoid,
)

scores = st.floats(-50, 50)
temperatures = st.floats(0.05, 20)


def test_check_yourself_rater():
    p = bt_prob(np.array([0.0, 1.0, 2.0]), 0.0, 0.5)
    np.testing.assert_allclose(p.round(3), [0.5, 0.881, 0.982])
    assert round(float(oracle_accuracy([0.0, 1.0, 2.0], 0.0, 0.5)), 3) == 0.788
    assert round(float(bt_prob(1.0, 0.0, 0.5)), 2) == 0.88  # section 7's worked example


def test_worked_loss_example():
    assert round(float(bt_prob(1.0, 0.2, 1.0)), 3) == 0.690
    assert round(bt_loss_np(1.0, 0.2), 3) == 0.371
    d_w, d_l = bt_loss_gradient(1.0, 0.2)
    assert (round(float(d_w), 3), round(float(d_l), 3)) == (-0.310, 0.310)
    assert round(bt_loss_np(0.2, 1.0), 3) == 1.171
    assert round(float(abs(bt_loss_gradient(0.2, 1.0)[0])), 3) == 0.690
    assert round(bt_loss_np(0.0, 0.0), 3) == 0.693 and bt_loss_np(3.0, 3.0) == pytest.approx(math.log(2))


def test_torch_loss_against_hand_values_autograd_and_bce():
    w = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    l = torch.tensor([0.2], dtype=torch.float64, requires_grad=True)
    loss = bt_loss(w, l)
    loss.backward()
    assert round(loss.item(), 3) == 0.371
    assert (round(w.grad.item(), 3), round(l.grad.item(), 3)) == (-0.310, 0.310)
    rw, rl = torch.randn(50, dtype=torch.float64), torch.randn(50, dtype=torch.float64)
    bce = F.binary_cross_entropy_with_logits(rw - rl, torch.ones(50, dtype=torch.float64))
    assert bt_loss(rw, rl).item() == pytest.approx(bce.item())
    assert bt_loss_np(rw.numpy(), rl.numpy()) == pytest.approx(bce.item())
    assert math.isfinite(bt_loss(torch.tensor([0.0]), torch.tensor([1000.0])).item())  # no log 0


def test_three_reward_models():
    losses = [round(bt_loss_np(w, l), 3) for w, l in [(5.0, 3.0), (105.0, 103.0), (2.5, 1.5)]]
    assert losses == [0.127, 0.127, 0.313]
    rng = np.random.default_rng(0)
    a = rng.normal(4.0, 1.5, size=10)
    normalized = [fit_normalizer(ref)(ref) for ref in (a, a + 100.0, a / 2.0)]
    np.testing.assert_allclose(normalized[1], normalized[0], atol=1e-12)
    np.testing.assert_allclose(normalized[2], normalized[0], atol=1e-12)


def test_normalizer():
    norm = fit_normalizer([1.0, 2.0, 3.0, 4.0])
    assert norm == Normalizer(mu=2.5, sigma=float(np.std([1.0, 2.0, 3.0, 4.0])))
    z = norm([1.0, 2.0, 3.0, 4.0])
    assert z.mean() == pytest.approx(0.0) and z.std() == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fit_normalizer([2.0, 2.0])
    with pytest.raises(ValueError):
        fit_normalizer([1.0])


def test_accuracy_vs_tau_against_a_loop():
    gaps, taus = [0.0, 1.0, -2.0, 3.5], [0.1, 0.5, 1.0, 5.0, 100.0]
    expected = [np.mean([max(p, 1 - p) for p in (1 / (1 + math.exp(-g / t)) for g in gaps)]) for t in taus]
    np.testing.assert_allclose(accuracy_vs_tau(gaps, taus), expected)
    curve = accuracy_vs_tau([1.0, 2.0], np.linspace(0.1, 50, 40))
    assert np.all(np.diff(curve) < 0) and curve[-1] > 0.5


def test_sigmoid_is_stable_in_both_tails():
    assert sigmoid(-800.0) == pytest.approx(math.exp(-800.0), rel=1e-12) and sigmoid(800.0) == 1.0
    assert float(bt_prob(-1e6, 0.0, 1.0)) == 0.0 and not np.any(np.isnan(bt_prob([-1e300, 1e300], 0.0, 1.0)))


@settings(max_examples=50, deadline=None)
@given(scores, scores, temperatures)
def test_probabilities_of_both_orders_sum_to_one(a, b, tau):
    assert float(bt_prob(a, b, tau) + bt_prob(b, a, tau)) == pytest.approx(1.0, abs=1e-12)
    assert 0.5 <= float(oracle_accuracy([a], [b], tau)) <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(scores, min_size=1, max_size=8), temperatures)
def test_oracle_accuracy_lies_between_a_coin_and_certainty(gaps, tau):
    acc = float(oracle_accuracy(gaps, 0.0, tau))
    assert 0.5 <= acc <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(scores, min_size=1, max_size=8), st.floats(-1e3, 1e3))
def test_loss_invariant_to_a_common_shift(w, shift):
    rw = torch.tensor(w, dtype=torch.float64)
    rl = torch.tensor(w[::-1], dtype=torch.float64)
    assert bt_loss(rw + shift, rl + shift).item() == pytest.approx(bt_loss(rw, rl).item(), abs=1e-9)
    assert bt_loss_np(rw + shift, rl + shift) == pytest.approx(bt_loss_np(rw, rl), abs=1e-9)


def test_label_frequencies_within_4_binomial_se():
    gaps = np.array([-1.5, 0.0, 0.3, 1.0, 2.0])
    n = 20_000
    labels = sample_labels(gaps, 0.0, 0.5, np.random.default_rng(1), size=n)
    assert labels.shape == (n, 5)
    p = bt_prob(gaps, 0.0, 0.5)
    assert np.all(np.abs(labels.mean(0) - p) <= 4 * np.sqrt(p * (1 - p) / n))


@pytest.mark.parametrize("bad", [dict(tau=0.0), dict(tau=-1.0), dict(tau=float("inf")), dict(gaps=()),
                                 dict(gaps=(0.0, float("nan"))), dict(samples=0), dict(seed=-1)])
def test_invalid_settings_raise(bad):
    with pytest.raises(ValueError):
        BradleyTerrySettings(**bad)


@pytest.mark.parametrize("bad", [dict(tau=0.0), dict(tau=float("nan")), dict(gaps="uniform"), dict(s=0.0),
                                 dict(s=float("inf")), dict(n=0), dict(seed=-1)])
def test_invalid_labelled_set_settings_raise(bad):
    with pytest.raises(ValueError):
        LabelledSetSettings(**bad)


def test_invalid_temperature_raises():
    with pytest.raises(ValueError):
        bt_prob(1.0, 0.0, 0.0)


def test_figure_compute_and_render(capsys):
    result = figure.compute(figure.Settings())
    assert round(result["acc_star"], 3) == 0.788
    assert [round(r["p"], 3) for r in result["probabilities"]] == [0.5, 0.881, 0.982]
    assert [round(m["loss"], 3) for m in result["models"]] == [0.127, 0.127, 0.313]
    norm = [(m["normalized_w"], m["normalized_l"]) for m in result["models"]]
    np.testing.assert_allclose(norm, [norm[0]] * 3)
    json.dumps(result)
    text = figure.render(result)
    for row in ("0.881", "0.982", "Acc* = 0.788", "0.690", "0.371", "-0.310", "+0.310", "1.171", "0.693",
                "(5, 3)", "(105, 103)", "(2.5, 1.5)", "0.127", "0.313"):
        assert row in text
    assert main(["figures", "bradley-terry", "--gaps", "0", "1", "--tau", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["acc_star"] == pytest.approx((0.5 + 1 / (1 + math.exp(-1))) / 2)
