"""The shared core against plain loops and the seeds' worked examples."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engines.policy_gradient import (
    batch_mean_baseline,
    gae,
    log_softmax,
    loo_baseline,
    reinforce_estimate,
    reinforce_loss,
    returns_to_go,
    softmax,
    softmax_score,
    td_errors,
)

finite_floats = st.floats(-100, 100, allow_nan=False, allow_infinity=False)
reward_batches = arrays(np.float64, st.tuples(st.integers(2, 6), st.integers(1, 7)), elements=finite_floats)


def slow_returns(rewards, gamma):
    N, T = rewards.shape
    G = np.zeros((N, T))
    for i in range(N):
        for t in range(T):
            G[i, t] = sum(gamma**k * rewards[i, t + k] for k in range(T - t))
    return G


def test_returns_match_seed_000_section_6_3():
    rewards = np.array([[0, 0, 0, 0, 0, 1.0]])
    np.testing.assert_allclose(returns_to_go(rewards), [[1.0] * 6])
    np.testing.assert_allclose(
        np.round(returns_to_go(rewards, gamma=0.9), 4), [[0.5905, 0.6561, 0.729, 0.81, 0.9, 1.0]]
    )


def test_returns_match_seed_001_check_yourself():
    # matches at positions 1, 3 and 6 of six, token-level reward 1/6 each
    rewards = np.array([[1, 0, 1, 0, 0, 1]]) / 6
    np.testing.assert_allclose(returns_to_go(rewards), [[1 / 2, 1 / 3, 1 / 3, 1 / 6, 1 / 6, 1 / 6]])


@settings(max_examples=40, deadline=None)
@given(reward_batches, st.sampled_from([0.0, 0.5, 0.9, 1.0]))
def test_returns_against_loop_numpy_and_torch(rewards, gamma):
    expected = slow_returns(rewards, gamma)
    np.testing.assert_allclose(returns_to_go(rewards, gamma), expected, atol=1e-9)
    got = returns_to_go(torch.tensor(rewards), gamma)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), expected, atol=1e-9)


def test_invalid_gamma_is_refused():
    with pytest.raises(ValueError, match="gamma"):
        returns_to_go(np.zeros((1, 3)), gamma=1.5)


def test_loo_baseline_seed_001_check_yourself():
    R = np.array([3.0, 1.0, 0.0, 0.0])[:, None]  # (N=4, T=1)
    b = loo_baseline(R)
    np.testing.assert_allclose(b[:, 0], [1 / 3, 1, 4 / 3, 4 / 3])
    np.testing.assert_allclose((R - b)[:, 0], [8 / 3, 0, -4 / 3, -4 / 3])
    np.testing.assert_allclose((R - batch_mean_baseline(R))[:, 0], [2, 0, -1, -1])


@settings(max_examples=40, deadline=None)
@given(reward_batches)
def test_batch_mean_weights_are_shrunk_leave_one_out_weights(G):
    N = G.shape[0]
    np.testing.assert_allclose(G - batch_mean_baseline(G), (1 - 1 / N) * (G - loo_baseline(G)), atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(reward_batches)
def test_loo_baseline_against_loop(G):
    N = G.shape[0]
    expected = np.stack([np.delete(G, i, axis=0).mean(0) for i in range(N)])
    np.testing.assert_allclose(loo_baseline(G), expected, atol=1e-9)
    np.testing.assert_allclose(loo_baseline(torch.tensor(G)).numpy(), expected, atol=1e-9)


def test_loo_groups_replies_of_each_prompt():
    G = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)  # (prompts, K, T)
    b = loo_baseline(G, axis=1)
    np.testing.assert_allclose(b[1, 0], (G[1, 1] + G[1, 2]) / 2)


def test_loo_needs_two_samples():
    with pytest.raises(ValueError, match="at least 2"):
        loo_baseline(np.zeros((1, 3)))


def test_reinforce_loss_gradient_is_minus_the_estimate():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, requires_grad=True)  # (T, K): one softmax per position
    actions = torch.tensor([[0, 1, 2], [4, 4, 0]])  # (N, T)
    logp = torch.log_softmax(logits, -1)[torch.arange(3), actions]  # (N, T)
    returns = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]], requires_grad=True)
    reinforce_loss(logp, returns, baseline=0.5).backward()
    assert returns.grad is None  # the weights are detached
    # The same gradient from the closed-form softmax scores, laid out as (N, T, P = T x K).
    theta = logits.detach().numpy()
    score = np.zeros((2, 3, 3, 5))
    for i in range(2):
        for t in range(3):
            score[i, t, t] = softmax_score(theta[t], int(actions[i, t]))
    estimate = reinforce_estimate(score.reshape(2, 3, 15), (returns.detach() - 0.5).numpy())
    np.testing.assert_allclose(-logits.grad.numpy().ravel(), estimate, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.integers(2, 6), elements=st.floats(-20, 20)))
def test_score_has_mean_zero_under_the_policy(theta):
    pi = softmax(theta)
    scores = softmax_score(theta, np.arange(theta.size))  # (K actions, K components)
    np.testing.assert_allclose(pi @ scores, 0.0, atol=1e-12)
    np.testing.assert_allclose(np.exp(log_softmax(theta)), pi, atol=1e-12)


def test_score_seed_000_worked_example():
    # theta = 0, reply 3 sampled (index 2), rated 7.3: seed 000 section 6.4
    score = softmax_score(np.zeros(4), 2)
    np.testing.assert_allclose(score, [-0.25, -0.25, 0.75, -0.25])
    np.testing.assert_allclose(7.3 * score, [-1.825, -1.825, 5.475, -1.825])


# TD errors and GAE, seed 000 sections 6.9 and 6.10: against plain loops and their lambda = 0 and 1 limits.


def slow_gae(rewards, values, gamma, lam):
    """GAE of one episode as the sum of its discounted TD errors, plain loops."""
    T = len(rewards)
    delta = [rewards[t] + gamma * (values[t + 1] if t + 1 < T else 0.0) - values[t] for t in range(T)]
    return [sum((gamma * lam) ** l * delta[t + l] for l in range(T - t)) for t in range(T)]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.floats(0, 1), st.floats(0, 1), st.integers(0, 10**6))
def test_gae_against_per_episode_loop(N, T, gamma, lam, seed):
    rng = np.random.default_rng(seed)
    r, V = rng.normal(size=(N, T)), rng.normal(size=(N, T))
    got = gae(r, V, gamma, lam)
    for n in range(N):
        np.testing.assert_allclose(got[n], slow_gae(r[n], V[n], gamma, lam), atol=1e-10)
    # several lambdas at once: (L, 1) against the (N,) episode axis
    lams = np.array([0.0, lam, 1.0])
    many = gae(r, V, gamma, lams[:, None])
    for i, l in enumerate(lams):
        np.testing.assert_allclose(many[i], gae(r, V, gamma, l), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.floats(0, 1), st.integers(0, 10**6))
def test_gae_limits(N, T, gamma, seed):
    rng = np.random.default_rng(seed)
    r, V = rng.normal(size=(N, T)), rng.normal(size=(N, T))
    np.testing.assert_allclose(gae(r, V, gamma, 1.0), returns_to_go(r, gamma) - V, atol=1e-10)
    np.testing.assert_allclose(gae(r, V, gamma, 0.0), td_errors(r, V, gamma), atol=1e-12)
