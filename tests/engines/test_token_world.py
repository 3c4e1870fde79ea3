"""Seed 000 sections 6.3 and 6.8 to 6.10: the token world, its exact values, one episode's TD errors and GAE, and GAE's bias^2 / variance."""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from app.cli.figures import token_world as figure
from engines.policy_gradient import gae, returns_to_go, td_errors
from engines.token_world import (
    TokenWorldSettings,
    gae_decomposition,
    gae_decomposition_exact,
    sample_tokens,
    success_probability,
    token_values,
)

SEED_LAMBDAS = (0.0, 0.95, 1.0)


# ----------------------------------------------------------------------------- slow references


def slow_success(T, threshold, p_of_state):
    """P[success | t, k] by walking every continuation of (t, k) in plain loops."""
    table = np.zeros((T + 1, T + 1))
    for t in range(T + 1):
        for k in range(T + 1):
            total = 0.0
            for rest in itertools.product((0, 1), repeat=T - t):
                prob, n = 1.0, k
                for i, a in enumerate(rest):
                    p = p_of_state(t + i, n)
                    prob *= p if a else 1 - p
                    n += a
                total += prob * (n >= threshold)
            table[t, k] = total
    return table


def mc_standard_error(s, batches=10):
    """Decompose 10 disjoint batches of s.episodes sampled episodes each ... and the whole sample.

    Returns (whole, se, shift): the whole-sample decomposition, the standard error of its
    bias2 / variance / total estimated from the spread of the batch estimates (sd / sqrt(batches)),
    and |mean of the batch estimates - whole|, which bounds the finite-sample bias of a squared
    mean (it shrinks like 1 / episodes, so each batch carries `batches` times the whole's).
    """
    tokens = sample_tokens(np.random.default_rng(123), s.episodes, s.T, s.p_a)
    whole = gae_decomposition(s, tokens)
    parts = [gae_decomposition(s, chunk) for chunk in np.array_split(tokens, batches)]
    se, shift = {}, {}
    for name in ("bias2", "variance", "total"):
        stacked = np.stack([getattr(p, name) for p in parts])
        se[name] = stacked.std(0, ddof=1) / math.sqrt(batches)
        shift[name] = np.abs(stacked.mean(0) - getattr(whole, name))
    return whole, se, shift


# ----------------------------------------------------------------------------- exact values


def test_seed_exact_values():
    v = token_values(6, 4, 0.6)
    assert v.V[0, 0] == pytest.approx(0.5443, abs=5e-5)
    assert v.Q[0, 0, 1] == pytest.approx(0.6826, abs=5e-5)
    assert v.Q[0, 0, 0] == pytest.approx(0.3370, abs=5e-5)
    assert v.A[0, 0, 1] == pytest.approx(0.1382, abs=5e-5)
    assert v.A[0, 0, 0] == pytest.approx(-0.2074, abs=5e-5)
    # the advantages of the policy's own choices average to zero
    assert 0.6 * v.A[0, 0, 1] + 0.4 * v.A[0, 0, 0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("T, threshold, p_a", [(1, 1, 0.3), (4, 2, 0.5), (5, 0, 0.9), (6, 4, 0.6), (7, 7, 0.25)])
def test_success_against_enumeration(T, threshold, p_a):
    expected = slow_success(T, threshold, lambda t, k: p_a)
    np.testing.assert_allclose(success_probability(p_a, T, threshold), expected, atol=1e-12)
    # and against the binomial sum of seed 000 section 6.8
    binomial = [[sum(math.comb(T - t, j) * p_a**j * (1 - p_a) ** (T - t - j) for j in range(T - t + 1) if k + j >= threshold)
                 for k in range(T + 1)] for t in range(T + 1)]
    np.testing.assert_allclose(success_probability(p_a, T, threshold), binomial, atol=1e-12)


def test_success_of_a_tabular_policy_against_enumeration():
    T, threshold = 5, 3
    p = np.random.default_rng(0).random((2, T, T + 1))  # two policies, one P(A) per state
    got = success_probability(p, T, threshold)
    for i in range(2):
        expected = slow_success(T, threshold, lambda t, k: p[i, t, min(k, T)])  # k > T only off the reachable set
        reachable = np.tril(np.ones((T + 1, T + 1), bool))  # k <= t
        np.testing.assert_allclose(got[i][reachable], expected[reachable], atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 7), st.data(), st.floats(0, 1), st.floats(0.5, 1))
def test_values_are_discounted_success(T, data, p_a, gamma):
    threshold = data.draw(st.integers(0, T))
    v = token_values(T, threshold, p_a, gamma)
    S = success_probability(p_a, T, threshold)
    for t in range(T):
        np.testing.assert_allclose(v.V[t], gamma ** (T - 1 - t) * S[t], atol=1e-12)
        # V is the policy's average of Q
        np.testing.assert_allclose(v.V[t], p_a * v.Q[t, :, 1] + (1 - p_a) * v.Q[t, :, 0], atol=1e-12)


# ----------------------------------------------------------------------------- returns, TD, GAE of one episode


def test_seed_returns_table():
    rewards = np.array([0, 0, 0, 0, 0, 1.0])
    assert [round(g, 4) for g in returns_to_go(rewards, 1.0)] == [1.0] * 6
    assert [round(g, 4) for g in returns_to_go(rewards, 0.9)] == [0.5905, 0.6561, 0.729, 0.81, 0.9, 1.0]


def test_seed_one_episode_recursion():
    """The seed's printed V(s_t) of ABABAA fed back in; its delta and GAE columns come out.

    The seed's V are rounded to 3 decimals, so each delta is off by at most 0.001 and each GAE
    (a weighted sum of V's whose weights add up to at most 2 in absolute value) by at most
    0.001, plus 0.0005 for the printed rounding: tolerance 0.0015.
    """
    V = np.array([0.850, 0.553, 0.417, 0.572, 0.227, 0.456])
    r = np.array([0, 0, 0, 0, 0, 1.0])
    tol = 0.0015
    np.testing.assert_allclose(td_errors(r, V), [-0.298, -0.136, 0.156, -0.345, 0.229, 0.544], atol=tol)
    np.testing.assert_allclose(gae(r, V, 1.0, 0.95), [0.025, 0.340, 0.501, 0.363, 0.746, 0.544], atol=tol)
    np.testing.assert_allclose(gae(r, V, 1.0, 1.0), [0.15, 0.447, 0.583, 0.428, 0.773, 0.544], atol=tol)
    np.testing.assert_allclose(gae(r, V, 1.0, 0.0), [-0.298, -0.136, 0.156, -0.345, 0.229, 0.544], atol=tol)


# ----------------------------------------------------------------------------- bias^2 / variance


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 8), st.data(), st.floats(0.05, 0.95), st.floats(0.5, 1))
def test_exact_critic_td_error_is_the_advantage(T, data, p_a, gamma):
    s = TokenWorldSettings(T=T, threshold=data.draw(st.integers(0, T)), p_a=p_a, gamma=gamma, tokens="")
    d = gae_decomposition_exact(s)
    assert d.critic_noises[0] == 0 and d.lambdas[0] == 0
    assert d.bias2[0, 0] == pytest.approx(0.0, abs=1e-20)
    assert d.variance[0, 0] == pytest.approx(0.0, abs=1e-20)
    np.testing.assert_allclose(d.bias2[:, 0], 0.0, atol=1e-20)  # the exact V never biases GAE


def test_bias_scales_with_the_square_of_the_noise():
    """The critics share one noise draw z and A_hat is linear in V, so bias2 grows as s^2.
    The seed's printed table obeys the same rule: 0.0522 / 9 = 0.0058, 0.0292 / 9 = 0.0032."""
    d = gae_decomposition_exact(TokenWorldSettings())
    np.testing.assert_allclose(d.bias2[:, 2], 9 * d.bias2[:, 1], rtol=1e-10)
    assert 0.0522 / 9 == pytest.approx(0.0058, abs=1e-4) and 0.0292 / 9 == pytest.approx(0.0033, abs=2e-4)


def test_exact_and_monte_carlo_decompositions_agree():
    """Tolerance: 4 standard errors (from the spread of 10 batch estimates) plus the batches'
    own finite-sample shift, which bounds the whole sample's."""
    s = TokenWorldSettings(episodes=50_000)
    exact = gae_decomposition_exact(s)
    mc, se, shift = mc_standard_error(s)
    for name in ("bias2", "variance", "total"):
        np.testing.assert_array_less(np.abs(getattr(mc, name) - getattr(exact, name)), 4 * se[name] + shift[name] + 1e-12)


def test_seed_variances_reproduced():
    """The exact critic's variances are properties of the world; the seed printed Monte Carlo
    estimates from 100,000 episodes (rounded to 4 decimals), so they must lie within 4 standard
    errors of that estimator (estimated from our own 100,000 episodes) of the exact values.
    At lambda = 0 the variance is 0 and at lambda = 1 it is Var(G | s, a) for every critic."""
    s = TokenWorldSettings(lambdas=SEED_LAMBDAS)
    exact = gae_decomposition_exact(s)
    _, se, _ = mc_standard_error(s)
    seed_variance = {(0.0, 0): 0.0, (0.95, 0): 0.1011, (1.0, 0): 0.1304, (0.0, 1): 0.0, (1.0, 1): 0.1304,
                     (0.0, 2): 0.0, (1.0, 2): 0.1304}
    for (lam, critic), printed in seed_variance.items():
        i = SEED_LAMBDAS.index(lam)
        assert abs(exact.variance[i, critic] - printed) <= 4 * se["variance"][i, critic] + 5e-5
    # and to three decimals
    assert round(exact.variance[1, 0], 3) == round(0.1011, 3) and round(exact.variance[2, 0], 3) == round(0.1304, 3)


# ----------------------------------------------------------------------------- figures and settings


def test_figure_compute_and_render():
    result = figure.compute(TokenWorldSettings(episodes=20_000))
    json.dumps(result)
    for key in ("V_start", "Q_A", "Q_B", "A_A", "A_B", "gae"):
        assert key in result
    assert {row["method"] for row in result["gae"]} == {"exact", "mc"}
    assert len(result["gae"]) == 2 * 8 * 3
    assert set(result["gae"][0]) >= {"lambda", "critic_noise", "bias2", "variance", "total", "method"}
    text = figure.render(result)
    for line in (
        "== 1. return of the episode rewards [0, 0, 0, 0, 0, 1]",
        "  gamma = 1.0: G_t for t = 0..5 = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]",
        "  gamma = 0.9: G_t for t = 0..5 = [0.5905, 0.6561, 0.729, 0.81, 0.9, 1.0]",
        "== 2. exact values for the fixed policy P(A) = 0.6",
        "  V(start) = probability of success = 0.5443",
        "  at the start: Q(A) = 0.6826, Q(B) = 0.3370, advantage A(A) = +0.1382, A(B) = -0.2074",
        "== 3. one episode: tokens ABABAA, reward at the end = 1; lambda = 0.95, gamma = 1.0",
        "  using a rough value estimate (exact V plus noise of sd 0.15)",
        "  exact V         lambda 0.00: bias^2 0.0000  variance 0.0000  total error 0.0000",
    ):
        assert line in text.splitlines()
    assert "exact A=+0.138" in text and "exact A=+0.400" in text
    assert "  t=1 state (t=1, k=1) token B: r=0  V(s_t)=" in text


@pytest.mark.parametrize("bad", [
    {"p_a": 1.5}, {"p_a": float("nan")}, {"threshold": 7}, {"threshold": -1}, {"T": 0}, {"T": 17},
    {"critic_noises": (-0.1,)}, {"lambdas": (1.2,)}, {"lambdas": (float("nan"),)}, {"lam": -0.1},
    {"gamma": 1.5}, {"episode_noise": -1.0}, {"tokens": "ABA"}, {"tokens": "ABABAC"}, {"episodes": 1},
])
def test_invalid_settings(bad):
    with pytest.raises(ValueError):
        TokenWorldSettings(**bad)


def test_exact_method_refuses_long_replies():
    with pytest.raises(ValueError, match="too long to enumerate"):
        TokenWorldSettings(T=20, threshold=10)


def test_command_line(capsys):
    assert main(["figures", "token-world", "--episodes", "5000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["V_start"] == pytest.approx(0.54432)
    with pytest.raises(SystemExit) as stop:
        main(["figures", "token-world", "--p-a", "1.5"])
    assert stop.value.code == 2
    assert "p_a must be a probability" in capsys.readouterr().err


def test_changing_T_alone_samples_the_episode_and_says_so(capsys):
    assert main(["figures", "token-world", "--T", "8", "--episodes", "2000", "--json"]) == 0
    episode = json.loads(capsys.readouterr().out)["episode"]
    assert len(episode["tokens"]) == 8 and len(episode["rows"]) == 8
    assert episode["source"].startswith("sampled from the policy (seed 0)")
    sampled = figure.one_episode(TokenWorldSettings(T=8, tokens="", episodes=2000))
    assert episode["tokens"] == "".join("A" if a else "B" for a in sampled.tokens)
    assert main(["figures", "token-world", "--episodes", "2000", "--json"]) == 0
    chapter = json.loads(capsys.readouterr().out)["episode"]
    assert (chapter["tokens"], chapter["source"]) == ("ABABAA", "the chapter's episode")
    assert main(["figures", "token-world", "--T", "4", "--threshold", "2", "--tokens", "BBAA", "--episodes", "2000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["episode"]["source"] == "the given tokens"
