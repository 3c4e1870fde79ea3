"""Seed 000 section 6.10, "Training with a critic": tabular policies trained with REINFORCE, leave-one-out and GAE critics."""

import dataclasses
import json
import math

import numpy as np
import pytest

from app.cli import main
from app.cli.figures import token_world_training as training_figure
from engines.policy_gradient import gae
from engines.settings import field_docs
from engines.token_world import success_probability
from engines.token_world_training import TokenWorldTrainingSettings, train_token_world, train_token_world_steps


def reference_training(s: TokenWorldTrainingSettings):
    """Plain loops over methods, seeds, episodes and tokens; the same uniform draws as the engine.

    GAE is applied one episode at a time (it is itself checked against plain loops in
    test_policy_gradient.py), so what is tested here is the batching, the visits' sums and the updates.
    """
    T, E = s.T, s.episodes
    methods = 2 + len(s.lambdas)
    rng = np.random.default_rng(s.seed)
    theta = np.zeros((methods, s.seeds, T, T + 1))
    critic = np.zeros((len(s.lambdas), s.seeds, T, T + 1))
    curves = []
    for _ in range(s.steps):
        u = rng.random((s.seeds, E, T))
        new_theta, new_critic = theta.copy(), critic.copy()
        for m in range(methods):
            for seed in range(s.seeds):
                episodes = []
                for i in range(E):
                    k, visits = 0, []
                    for t in range(T):
                        p = math.exp(theta[m, seed, t, k]) / (1 + math.exp(theta[m, seed, t, k]))
                        a = int(u[seed, i, t] < p)
                        visits.append((t, k, a, p))
                        k += a
                    episodes.append((visits, float(k >= s.threshold) + s.shift))
                total = sum(R for _, R in episodes)
                for visits, R in episodes:
                    if m == 0:
                        weights = [R] * T
                    elif m == 1:
                        weights = [R - (total - R) / (E - 1)] * T
                    else:
                        V = [critic[m - 2, seed, t, k] for t, k, _, _ in visits]
                        rewards = [0.0] * (T - 1) + [R]
                        weights = gae(np.array(rewards), np.array(V), 1.0, s.lambdas[m - 2])  # one episode
                        for (t, k, _, _), w in zip(visits, weights):
                            new_critic[m - 2, seed, t, k] += s.critic_lr * w / E
                    for (t, k, a, p), w in zip(visits, weights):
                        new_theta[m, seed, t, k] += s.lr * w * (a - p) / E
        theta, critic = new_theta, new_critic
        curves.append(success_probability(1 / (1 + np.exp(-theta)), T, s.threshold)[..., 0, 0])
    return np.stack(curves, 1)  # (methods, steps, seeds)


def test_training_against_plain_loops():
    s = TokenWorldTrainingSettings(T=4, threshold=2, seeds=3, steps=4, episodes=5, shift=0.5,
                                   report_at=(1,), spread_at=1, lambdas=(0.0, 0.7))
    engine = np.stack([snap.success for snap in train_token_world_steps(s)][1:], 1)
    np.testing.assert_allclose(engine, reference_training(s), atol=1e-10)


@pytest.fixture(scope="module")
def trained():
    s = TokenWorldTrainingSettings(lambdas=(0.95,))
    return train_token_world(s), train_token_world(dataclasses.replace(s, shift=5.0))


def test_leave_one_out_ignores_a_reward_shift(trained):
    plain, shifted = trained
    np.testing.assert_allclose(shifted.success[1], plain.success[1], atol=1e-9)  # the whole curve, every seed
    assert shifted.median_to_target[1] == plain.median_to_target[1]


def test_reward_shift_spreads_the_no_baseline_runs(trained):
    plain, shifted = trained
    assert shifted.sd_at_spread[0] > 5 * plain.sd_at_spread[0]  # the seed: 0.016 -> 0.194
    assert shifted.sd_at_spread[2] > 2 * plain.sd_at_spread[2]  # GAE has to learn the offset first


def test_seed_training_rows(trained):
    """The REINFORCE rows against the seed's: both are means over 100 random seeds, so each
    column must agree within 4 standard errors of the difference, 4 sqrt(2) sd / sqrt(100).
    (lr was picked to match the no-baseline row; the leave-one-out row is the real check.)"""
    plain, _ = trained
    seed_rows = {0: (0.476, 0.668, 0.839, 0.963), 1: (0.476, 0.668, 0.842, 0.962)}
    for m, printed in seed_rows.items():
        sd = plain.success[m, list(plain.report_at), :].std(-1, ddof=1)
        tol = 4 * math.sqrt(2) * sd / math.sqrt(plain.success.shape[-1]) + 5e-4
        np.testing.assert_array_less(np.abs(plain.mean_at[m] - printed), tol)


# ----------------------------------------------------------------------------- figure and settings


def test_training_figure_compute_and_render():
    s = TokenWorldTrainingSettings(seeds=5, steps=30, report_at=(10, 25, 30), shift=5.0)
    result = training_figure.compute(s)
    json.dumps(result)
    text = training_figure.render(result)
    assert "== 5. training from P(A) = 0.5 everywhere: 5 seeds, 30 updates of 16 episodes each" in text
    assert "   same, but every episode also gets +5.0 (reward 5 for failure, 6 for success)" in text
    assert "  REINFORCE, leave-one-out baseline : " in text and "seeds below 0.5 at the end: " in text
    assert training_figure.compute(dataclasses.replace(s, shift=0.0))["shifted_rows"] is None


def test_figure_prints_both_seed_tables_by_default(capsys):
    assert TokenWorldTrainingSettings().shift == 0.0 and training_figure.Settings().shift == 5.0
    assert main(["figures", "token-world-training", "--seeds", "3", "--steps", "30", "--report-at", "10", "30"]) == 0
    text = capsys.readouterr().out
    assert "== 5. training from P(A) = 0.5 everywhere: 3 seeds, 30 updates of 16 episodes each" in text
    assert "   same, but every episode also gets +5.0 (reward 5 for failure, 6 for success)" in text
    assert main(["figures", "token-world-training", "--seeds", "3", "--steps", "30", "--report-at", "10", "30",
                 "--shift", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shifted_rows"] is None


def test_figure_settings_document_every_option():
    docs = field_docs(training_figure.Settings)
    assert set(docs) == {f.name for f in dataclasses.fields(training_figure.Settings)}
    assert docs["shift"] == "Reward shift of the second table, the seed's +5; 0 prints only the first table."
    assert docs["seeds"] == field_docs(TokenWorldTrainingSettings)["seeds"]


@pytest.mark.parametrize("bad", [
    {"episodes": 1}, {"lr": 0.0}, {"critic_lr": float("nan")}, {"lambdas": (-0.5,)}, {"shift": float("inf")},
    {"report_at": (200,)}, {"spread_at": 0}, {"threshold": 9}, {"T": 17},
])
def test_invalid_training_settings(bad):
    with pytest.raises(ValueError):
        TokenWorldTrainingSettings(**bad)
