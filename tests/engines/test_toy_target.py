"""Seed 001 sections 2 to 5: the toy target task, its exact gradient, the REINFORCE estimators and training."""

import itertools
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from app.cli.figures import toy_target as figure
from engines.policy_gradient import reinforce_estimate, reinforce_loss, softmax_score
from engines.toy_target import (
    ESTIMATORS,
    ToyTargetSettings,
    all_responses,
    batch_estimates,
    contexts,
    draw_target,
    estimator_weights,
    exact_gradient,
    exact_variances,
    expected_estimate,
    expected_reward,
    run_training,
    sample,
    token_logprobs,
    token_rewards,
    train,
    variance_experiment,
)

T, V, N = 6, 8, 16
TARGET = draw_target(T, V, 0)
UNIFORM = np.zeros((T, V, V))


def random_theta(seed, T=T, V=V, scale=1.0):
    return scale * np.random.default_rng(seed).normal(size=(T, V, V))


@pytest.fixture(scope="module")
def experiment():
    return variance_experiment(UNIFORM, TARGET, N, 500, np.random.default_rng(0))


# --- the seed's check-yourself numbers -------------------------------------------------------------

def test_uniform_policy_numbers():
    Y = all_responses(T, V)
    logp = token_logprobs(UNIFORM, Y).sum(-1)
    assert len(Y) == 262_144
    np.testing.assert_allclose(logp, 6 * math.log(1 / 8))
    assert round(float(logp[0]), 2) == -12.48
    exact_match = math.exp(token_logprobs(UNIFORM, TARGET[None]).sum())
    assert exact_match == pytest.approx(1 / 262_144)
    J, _ = exact_gradient(UNIFORM, TARGET)
    assert J == pytest.approx(1 / 8) and float(expected_reward(UNIFORM, TARGET)) == pytest.approx(1 / 8)


def test_section5_returns_example():
    """Matches at positions 1, 3 and 6: r = (1,0,1,0,0,1)/6, G = (1/2, 1/3, 1/3, 1/6, 1/6, 1/6)."""
    target = np.arange(6)
    y = np.array([[0, 9, 2, 9, 9, 5]])
    token = estimator_weights(y, target, "token")
    sequence = estimator_weights(y, target, "none")
    np.testing.assert_allclose(token_rewards(y, target), [[1, 0, 1, 0, 0, 1]] / np.array(6.0))
    np.testing.assert_allclose(token, [[1 / 2, 1 / 3, 1 / 3, 1 / 6, 1 / 6, 1 / 6]])
    np.testing.assert_allclose(sequence, np.full((1, 6), 1 / 2))


# --- log-probabilities and sampling against plain loops ---------------------------------------------

def test_token_logprobs_against_a_loop_and_torch():
    theta = random_theta(1)
    actions = sample(theta, 5, np.random.default_rng(1))
    expected = np.zeros((5, T))
    for n in range(5):
        prev = 0
        for t in range(T):
            row = theta[t, prev]
            expected[n, t] = row[actions[n, t]] - np.log(np.exp(row).sum())
            prev = actions[n, t]
    np.testing.assert_allclose(token_logprobs(theta, actions), expected)
    np.testing.assert_allclose(token_logprobs(torch.tensor(theta), torch.tensor(actions)).numpy(), expected)
    np.testing.assert_array_equal(contexts(torch.tensor(actions)).numpy(), contexts(actions))


def test_sampled_symbols_follow_the_exact_marginals():
    """Frequency of y_t = y*_t within 4 binomial standard errors of P(y_t = y*_t) from the enumeration."""
    theta = random_theta(2, scale=0.7)
    actions = sample(np.broadcast_to(theta, (50, *theta.shape)), 400, np.random.default_rng(2)).reshape(-1, T)
    Y = all_responses(T, V)
    prob = np.exp(token_logprobs(theta, Y).sum(-1))
    p = prob @ (Y == TARGET)  # (T,) exact marginals
    freq = (actions == TARGET).mean(0)
    se = np.sqrt(p * (1 - p) / len(actions))
    assert np.all(np.abs(freq - p) <= 4 * se)


# --- the exact gradient -----------------------------------------------------------------------------

def torch_exact_J(theta, target):
    """J(theta) = sum_y pi(y) R(y) by enumeration, in torch."""
    Y = torch.tensor(all_responses(theta.shape[0], theta.shape[-1]))
    logp = token_logprobs(theta, Y).sum(-1)
    R = torch.tensor(token_rewards(Y.numpy(), target).sum(-1))
    return (logp.exp() * R).sum()


def test_exact_gradient_against_autograd():
    theta = random_theta(3)
    J, grad = exact_gradient(theta, TARGET)
    t = torch.tensor(theta, requires_grad=True)
    J_torch = torch_exact_J(t, TARGET)
    J_torch.backward()
    assert J == pytest.approx(J_torch.item(), abs=1e-12)
    np.testing.assert_allclose(grad, t.grad.numpy(), atol=1e-12)


def test_exact_gradient_against_finite_differences():
    theta = random_theta(4)
    J, grad = exact_gradient(theta, TARGET)
    assert J == pytest.approx(float(expected_reward(theta, TARGET)), abs=1e-12)
    h = 1e-5
    rng = np.random.default_rng(4)
    coords = [(0, 0, TARGET[0])] + [tuple(rng.integers([T, V, V])) for _ in range(8)]
    for c in coords:
        step = np.zeros_like(theta)
        step[c] = h
        fd = (expected_reward(theta + step, TARGET) - expected_reward(theta - step, TARGET)) / (2 * h)
        assert grad[c] == pytest.approx(float(fd), abs=1e-9)


def test_figure2_coordinate_by_hand():
    """At the uniform policy, dJ/dtheta[0, 0, y*_1] = E[R (1[y_1 = y*_1] - 1/8)] = (1/8)(13/48 - 1/8) = 7/384."""
    _, grad = exact_gradient(UNIFORM, TARGET)
    assert grad[0, 0, TARGET[0]] == pytest.approx(7 / 384)


# --- the score and the baselines (equations 7 to 10) -------------------------------------------------

small = dict(T=3, V=4)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(-20, 20))
def test_score_has_mean_zero_and_a_constant_baseline_changes_nothing(seed, b):
    theta = random_theta(seed, **small, scale=2.0)
    target = draw_target(3, 4, seed)
    Y = all_responses(3, 4)
    ones = np.ones(Y.shape)
    np.testing.assert_allclose(expected_estimate(theta, ones), 0.0, atol=1e-12)  # equation 7
    R = token_rewards(Y, target).sum(-1, keepdims=True) * ones
    _, grad = exact_gradient(theta, target)
    np.testing.assert_allclose(expected_estimate(theta, R - b), grad, atol=1e-12)  # equation 8
    G = estimator_weights(Y, target, "token")  # reward-to-go, equation 10
    np.testing.assert_allclose(expected_estimate(theta, G), grad, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12))
def test_batch_mean_is_shrunk_leave_one_out_on_every_batch(seed, n):
    theta = random_theta(seed, scale=1.5)
    actions = sample(np.broadcast_to(theta, (20, *theta.shape)), n, np.random.default_rng(seed))
    loo = batch_estimates(theta, actions, estimator_weights(actions, TARGET, "loo"))
    batch_mean = batch_estimates(theta, actions, estimator_weights(actions, TARGET, "batch_mean"))
    np.testing.assert_allclose(batch_mean, (1 - 1 / n) * loo, atol=1e-14)


@pytest.mark.parametrize("estimator", list(ESTIMATORS))
def test_closed_form_estimate_against_dense_scores_and_autograd(estimator):
    theta = random_theta(5)
    actions = sample(np.broadcast_to(theta, (3, *theta.shape)), 4, np.random.default_rng(5))  # (3, 4, T)
    w = estimator_weights(actions, TARGET, estimator)
    g = batch_estimates(theta, actions, w)
    # dense scores: onehot - pi on row (t, c_t), zero elsewhere; (3, 4, T, T*V*V)
    score = np.zeros((3, 4, T, T, V, V))
    rows = softmax_score(theta[np.arange(T), contexts(actions)], actions)  # (3, 4, T, V)
    b, n, t = np.indices((3, 4, T))
    score[b, n, t, t, contexts(actions)] = rows
    dense = reinforce_estimate(score.reshape(3, 4, T, -1), w).reshape(3, T, V, V)
    np.testing.assert_allclose(g, dense, atol=1e-14)
    for k in range(3):
        th = torch.tensor(theta, requires_grad=True)
        logp = token_logprobs(th, torch.tensor(actions[k]))
        reinforce_loss(logp, torch.tensor(w[k].copy())).backward()  # returns_to_go gives a flipped view
        np.testing.assert_allclose(g[k], -th.grad.numpy(), atol=1e-14)


def test_monte_carlo_means_within_4_se_of_the_exact_gradient(experiment):
    """Per coordinate, the mean of 500 one-batch estimates lies within 4 standard errors
    (sd of the 500 estimates / sqrt(500)) of E g_hat: grad J, or (1 - 1/N) grad J for the batch mean."""
    for name, g in experiment.estimates.items():
        expected = experiment.exact * ((1 - 1 / N) if name == "batch_mean" else 1.0)
        se = g.std(0, ddof=1) / np.sqrt(len(g))
        assert np.all(np.abs(g.mean(0) - expected) <= 4 * se + 1e-12), name


def test_exact_variances_against_brute_force_over_all_batches():
    """T = 2, V = 3, N = 3: every batch of 3 responses (9^3 = 729) enumerated with its probability."""
    theta, target, n = random_theta(6, T=2, V=3), np.array([1, 2]), 3
    Y = all_responses(2, 3)
    prob = np.exp(token_logprobs(theta, Y).sum(-1))
    batches = np.array(list(itertools.product(range(len(Y)), repeat=n)))  # (729, 3) response indices
    weight = prob[batches].prod(-1)  # (729,)
    actions = Y[batches]  # (729, 3, T)
    exact = exact_variances(theta, target, n)
    for name in ESTIMATORS:
        g = batch_estimates(theta, actions, estimator_weights(actions, target, name))
        mean = np.tensordot(weight, g, 1)
        var = np.tensordot(weight, (g - mean) ** 2, 1)
        np.testing.assert_allclose(exact[name], var, atol=1e-13, err_msg=name)


def test_total_variance_within_4_se_and_the_seed_ranking(experiment):
    totals = {}
    for name, g in experiment.estimates.items():
        B = len(g)
        spread = ((g - g.mean(0)) ** 2).reshape(B, -1).sum(-1) * B / (B - 1)
        exact = experiment.exact_variances[name].sum()
        assert abs(spread.mean() - exact) <= 4 * spread.std(ddof=1) / np.sqrt(B), name
        totals[name] = exact
    assert totals["token_loo"] < totals["batch_mean"] < totals["loo"] < totals["none"]
    assert totals["token"] < totals["none"]


def test_figure2_standard_deviations(experiment):
    """Seed: sd 0.023 without a baseline and 0.014 with leave-one-out, measured on 500 batches.
    The exact sds must lie within 4 SE of a 500-sample sd (SE from our samples) plus the seed's
    rounding (0.0005) of those figures, and so must our own measurements."""
    c = (slice(None), *experiment.coordinate)
    for name, seed_sd in (("none", 0.023), ("loo", 0.014)):
        x = experiment.estimates[name][c]
        d = x - x.mean()
        sd = np.sqrt(d @ d / (len(x) - 1))
        se = np.std(d**2, ddof=1) / np.sqrt(len(x)) / (2 * sd)
        exact_sd = np.sqrt(experiment.exact_variances[name][experiment.coordinate])
        assert abs(exact_sd - seed_sd) <= 4 * se + 0.0005, name
        assert abs(sd - exact_sd) <= 4 * se, name
    # no baseline: a mean of 16 iid terms, var = (E[X^2] - E[X]^2)/16, E[X^2] worked out by hand
    ex2 = ((49 / 512) * 3.1875 + (7 / 512) * 0.9375) / 36
    assert np.sqrt(experiment.exact_variances["none"][experiment.coordinate]) == pytest.approx(
        np.sqrt((ex2 - (7 / 384) ** 2) / 16))
    assert round(float(np.sqrt(experiment.exact_variances["none"][experiment.coordinate])), 3) == 0.023


def test_leave_one_out_batches_without_the_symbol_give_exactly_zero(experiment):
    """Seed: the spike at 0 is batches where no sample wrote the symbol; LOO weights sum to zero."""
    x = experiment.estimates["loo"][(slice(None), *experiment.coordinate)]
    zeros = np.mean(np.abs(x) < 1e-12)
    p = (7 / 8) ** 16  # no sample of 16 writes that symbol at step 1
    assert abs(zeros - p) <= 4 * np.sqrt(p * (1 - p) / len(x))


# --- training ---------------------------------------------------------------------------------------

def test_training_snapshots_are_consistent():
    s = ToyTargetSettings(seeds=3, steps=60, lr=10.0)
    snaps = list(train(s, every=20))
    assert [x.step for x in snaps] == [20, 40, 60]
    last = snaps[-1]
    assert last.J.shape == (len(ESTIMATORS), 3, 61)
    np.testing.assert_allclose(last.J[..., 0], 1 / 8)
    reached = last.J >= s.threshold
    first = np.where(reached.any(-1), reached.argmax(-1), -1)
    np.testing.assert_array_equal(last.steps_to_threshold, first)
    np.testing.assert_array_equal(run_training(s).J, last.J)
    loo = list(ESTIMATORS).index("loo")
    assert np.all(last.J[loo, :, -1] > 1 / 8)


@pytest.mark.parametrize("bad", [dict(T=0), dict(V=1), dict(T=12), dict(samples=1), dict(batches=1),
                                 dict(lr=0.0), dict(lr=float("nan")), dict(threshold=1.5), dict(seed=-1)])
def test_invalid_settings_raise(bad):
    with pytest.raises(ValueError):
        ToyTargetSettings(**bad)


# --- the figure -------------------------------------------------------------------------------------

def test_figure_compute_and_render(capsys):
    result = figure.compute(figure.Settings(seeds=2, steps=50, batches=200))
    for key in ("J", "exact_gradient_norm", "variance_table", "figure2", "training", "log_pi_uniform",
                "exact_match_probability"):
        assert key in result
    assert {"sd_no_baseline", "sd_loo"} <= set(result["figure2"])
    assert [r["estimator"] for r in result["variance_table"]] == list(ESTIMATORS)
    assert {"estimator", "total_variance", "mean_error"} <= set(result["variance_table"][0])
    json.dumps(result)
    text = figure.render(result)
    for row in ("-12.48", "1/262,144", "no baseline", "leave-one-out", "token-level rewards", "batch mean",
                "J = 0.1250", "Figure 2", "steps to J >= 0.9"):
        assert row in text
    assert main(["figures", "toy-target", "--seeds", "1", "--steps", "5", "--batches", "20", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["J"] == pytest.approx(0.125)
