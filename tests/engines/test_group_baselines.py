"""Group baselines on right/wrong rewards (seed 000 sections 6.1 and 6.10, seed 001 section 4): the exact moments
against sums done by hand, the seed's identity, unbiasedness, and a Monte Carlo check within its standard errors."""

import itertools
import json
import math
from statistics import NormalDist

import numpy as np
import pytest
import torch

from app.cli import main
from engines.group_baselines import (
    ESTIMATORS,
    GroupBaselinesSettings,
    exact_moments,
    group_gradient,
    monte_carlo,
    train,
)
from engines.policy_gradient import GRPO_EPS, group_advantages

COMPARISONS = 2 * len(ESTIMATORS) * 2  # means and variances, of every estimator, on each of the two prompts
Z = NormalDist().inv_cdf(1 - 0.001 / (2 * COMPARISONS))
"""Two-sided z for a family-wise false-alarm rate of 1 in 1,000 over all the Monte Carlo comparisons (Bonferroni)."""


def by_hand(p: float, K: int, M: int, estimator: str) -> tuple[float, float]:
    """E[g] and Var[g] over all 2^K right/wrong patterns of one prompt's K replies, each A_i written out longhand."""
    moments = []
    for y in itertools.product((0, 1), repeat=K):
        prob = np.prod([p if yi else 1 - p for yi in y])
        mean = sum(y) / K
        if estimator == "none":
            A = list(y)
        elif estimator in ("mean", "dr_grpo"):
            A = [yi - mean for yi in y]
        elif estimator == "loo":
            A = [yi - (sum(y) - yi) / (K - 1) for yi in y]
        else:  # grpo: sample standard deviation, K - 1 in the denominator
            sd = (sum((yj - mean) ** 2 for yj in y) / (K - 1)) ** 0.5
            A = [(yi - mean) / (sd + 1e-4) for yi in y]
        g = sum(a * (yi - p) for a, yi in zip(A, y)) / (M * K)
        moments.append((prob, g))
    expected = sum(w * g for w, g in moments)
    return expected, sum(w * (g - expected) ** 2 for w, g in moments)


@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("estimator", list(ESTIMATORS))
def test_exact_moments_equal_the_sums_over_every_pattern(K, estimator):
    s = GroupBaselinesSettings(p=(0.9, 0.2, 0.55), K=K)
    ex = exact_moments(s)
    e = ex.estimators.index(estimator)
    for m, p in enumerate(s.p):
        expected, variance = by_hand(p, K, len(s.p), estimator)
        assert ex.expected[e, m] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert ex.variance[e, m] == pytest.approx(variance, rel=1e-12, abs=1e-15)


def test_k2_by_hand_in_closed_form():
    """K = 2, one prompt: loo's A = (y1 - y2, y2 - y1) gives g = (y1 - y2)^2 / 2, which is 1/2 for a mixed pair
    (probability 2p(1 - p)) and 0 otherwise: E = p(1 - p), the true gradient; the mean's (1 - 1/2) halves it."""
    p = 0.3
    ex = exact_moments(GroupBaselinesSettings(p=(p,), K=2))
    loo, mean = ex.estimators.index("loo"), ex.estimators.index("mean")
    assert ex.expected[loo, 0] == pytest.approx(2 * p * (1 - p) * 0.5)
    assert ex.variance[loo, 0] == pytest.approx(2 * p * (1 - p) * 0.25 - (p * (1 - p)) ** 2)
    assert ex.expected[mean, 0] == pytest.approx(p * (1 - p) / 2)
    assert ex.true_gradient[0] == pytest.approx(p * (1 - p))
    assert ex.no_signal[0] == pytest.approx(p**2 + (1 - p) ** 2)


@pytest.mark.parametrize("K", [2, 3, 4, 7])
def test_mean_is_loo_shrunk_by_one_minus_one_over_k_on_every_group(K):
    """Seed 001 section 4: R_i - mean = (1 - 1/K)(R_i - b_loo) on every group, so g_mean = (1 - 1/K) g_loo too."""
    y = (np.random.default_rng(K).random((500, 3, K)) < 0.4).astype(float)
    np.testing.assert_allclose(group_advantages(y, "mean", -1), (1 - 1 / K) * group_advantages(y, "loo", -1), atol=1e-12)
    p = np.array([0.4, 0.4, 0.4])
    np.testing.assert_allclose(group_gradient(y, p, "mean"), (1 - 1 / K) * group_gradient(y, p, "loo"), atol=1e-12)


@pytest.mark.parametrize("K", [4, 16])
def test_loo_and_none_are_unbiased_mean_rescales_and_grpo_reweights(K):
    """With k of K right, GRPO's g = k(K - k) / (M K^2 (s_k + 1e-4)), s_k = sqrt(k(K - k) / (K(K - 1))) the sample
    standard deviation: the same for every p, so its mean weighs each prompt by E[k(K - k) / (s_k + 1e-4)] instead
    of by p(1 - p), more where k is near 0 or K, on the easiest and the hardest prompts."""
    p = np.array([0.95, 0.5, 0.1])
    ex = exact_moments(GroupBaselinesSettings(p=tuple(p), K=K))
    row = dict(zip(ex.estimators, ex.ratio))
    np.testing.assert_allclose(row["none"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(row["loo"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(row["mean"], 1 - 1 / K, rtol=1e-12)
    np.testing.assert_allclose(row["dr_grpo"], 1 - 1 / K, rtol=1e-12)
    k = np.arange(1, K)
    s_k = np.sqrt(k * (K - k) / (K * (K - 1)))
    pmf = np.array([[math.comb(K, j) * q**j * (1 - q) ** (K - j) for j in k] for q in p])  # (M, K - 1)
    np.testing.assert_allclose(row["grpo"] * ex.true_gradient, pmf @ (k * (K - k) / (len(p) * K**2 * (s_k + GRPO_EPS))),
                               rtol=1e-12)
    assert row["grpo"][0] > row["grpo"][1] < row["grpo"][2]  # the easy and the hard prompt weigh more than p = 0.5
    angles = dict(zip(ex.estimators, ex.angle))
    assert all(angles[e] < 1e-5 for e in ("none", "mean", "loo", "dr_grpo")) and angles["grpo"] > 0.1
    np.testing.assert_allclose(ex.no_signal, p**K + (1 - p) ** K)


def test_grpo_uses_the_sample_standard_deviation_as_torch_does():
    r = np.array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    A = group_advantages(r, "grpo", -1)
    sd = np.sqrt(4 / 3 * 0.25)  # K - 1 in the denominator
    np.testing.assert_allclose(A[0], np.array([0.5, -0.5, -0.5, 0.5]) / (sd + GRPO_EPS))
    np.testing.assert_allclose(A[1], 0.0)  # equal rewards: 0 / 1e-4
    np.testing.assert_allclose(group_advantages(torch.tensor(r), "grpo", -1).numpy(), A, rtol=1e-12)
    with pytest.raises(ValueError, match="estimator must be one of"):
        group_advantages(r, "ppo", -1)


def test_monte_carlo_within_its_standard_errors():
    """Means within Z standard errors of the exact E[g]; sampled variances within Z standard errors of the exact
    Var[g], the standard error of a sampled variance from the exact fourth central moment, sqrt((mu4 - sigma^4)/n)."""
    s = GroupBaselinesSettings(groups=40_000, seed=3)
    ex, mc = exact_moments(s), monte_carlo(s)
    assert np.all(np.abs(mc.mean - ex.expected) <= Z * np.sqrt(ex.variance / s.groups))
    variance_se = np.sqrt((ex.fourth_moment - ex.variance**2) / s.groups)
    assert np.all(np.abs(mc.variance - ex.variance) <= Z * variance_se)
    share_se = np.sqrt(ex.no_signal * (1 - ex.no_signal) / s.groups)
    assert np.all(np.abs(mc.no_signal - ex.no_signal) <= Z * share_se)


def test_training_yields_growing_curves_that_start_at_the_prompts_mean():
    s = GroupBaselinesSettings(seeds=4, steps=60)
    snapshots = list(train(s, chunk=25))
    assert [len(t.steps) for t in snapshots] == [26, 51, 61]
    last = snapshots[-1]
    np.testing.assert_allclose(last.J[:, 0], np.mean(s.p))
    assert last.J.shape == (len(ESTIMATORS), 61) and last.p.shape == (len(ESTIMATORS), 2)


@pytest.mark.parametrize("bad, sentence", [
    ({"K": 1}, "K must be a whole number of replies from 2 to 64, got 1."),
    ({"p": (0.5, 1.0)}, "every p must lie strictly between 0 and 1, got 0.5, 1.0."),
    ({"p": (0.0,)}, "every p must lie strictly between 0 and 1, got 0.0."),
    ({"lr": -1.0}, "lr must be a positive number, got -1.0."),
])
def test_settings_refuse_in_one_sentence(bad, sentence):
    with pytest.raises(ValueError) as info:
        GroupBaselinesSettings(**bad)
    assert str(info.value) == sentence


def test_the_command_prints_the_json_the_issue_names(capsys):
    assert main(["figures", "group-baselines", "--K", "4", "--p", "0.9", "0.2", "--seeds", "2", "--steps", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    ex = exact_moments(GroupBaselinesSettings())
    np.testing.assert_allclose(result["true_gradient"], ex.true_gradient)
    assert set(result["estimators"]) == set(ESTIMATORS)
    for e, name in enumerate(ex.estimators):
        np.testing.assert_allclose(result["estimators"][name]["expected"], ex.expected[e])
        np.testing.assert_allclose(result["estimators"][name]["variance"], ex.variance[e])
    assert main(["figures", "group-baselines", "--seeds", "2", "--steps", "5"]) == 0
    assert "leave-one-out (RLOO)" in capsys.readouterr().out


@pytest.mark.parametrize("args, sentence", [
    (["--K", "1"], "K must be a whole number of replies from 2 to 64, got 1."),
    (["--p", "0.9", "1.2"], "every p must lie strictly between 0 and 1, got 0.9, 1.2."),
])
def test_the_command_refuses_in_one_sentence_with_status_2(args, sentence, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["figures", "group-baselines", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(sentence) and len(err.splitlines()) == 1
