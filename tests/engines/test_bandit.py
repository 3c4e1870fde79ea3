"""Seed 000 sections 6.4 to 6.7: the four-armed bandit, its exact moments, Monte Carlo check and training."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from app.cli.figures import bandit as bandit_figure
from app.cli.figures import bandit_training as training_figure
from engines.bandit import (
    MEANS,
    BanditSettings,
    BanditTrainingSettings,
    arm_sums,
    arm_sums_of_noise,
    exact_gradient,
    exact_total_variance,
    expected_return,
    monte_carlo,
    noise_sums,
    one_sample_arms,
    one_sample_draws,
    one_step,
    optimal_baseline,
    summarise_sums,
    train_all_baselines,
    train_bandit,
    training_snapshots,
)
from engines.policy_gradient import softmax, softmax_score

THETA0 = np.zeros(4)
THETA_PREFERS_4 = np.array([0.0, 0.0, 0.0, 2.0])


@st.composite
def bandits(draw):
    """(means, theta, sd, b) for a bandit with 2 to 6 arms."""
    K = draw(st.integers(2, 6))
    means = np.array(draw(st.lists(st.floats(-10, 10), min_size=K, max_size=K)))
    theta = np.array(draw(st.lists(st.floats(-3, 3), min_size=K, max_size=K)))
    return means, theta, draw(st.floats(0, 3)), draw(st.floats(-10, 10))


# --- slow, obvious references: one arm at a time -----------------------------------


def reference_policy(theta):
    z = [np.exp(t) for t in theta]
    return [x / sum(z) for x in z]


def reference_gradient(means, theta, h=1e-6):
    """Central finite differences of J(theta) = sum_k pi_k mu_k, one logit at a time."""
    def J(th):
        return sum(p * m for p, m in zip(reference_policy(th), means))
    grad = []
    for k in range(len(theta)):
        up, down = np.array(theta, float), np.array(theta, float)
        up[k] += h
        down[k] -= h
        grad.append((J(up) - J(down)) / (2 * h))
    return np.array(grad)


def reference_variance(means, theta, sd, b):
    """sum over arms a of pi_a E[|g - E g|^2 | a], with g = (r - b) s_a, r = mu_a + sd eps."""
    pi = reference_policy(theta)
    K = len(means)
    scores = [np.array([(1.0 if k == a else 0.0) - pi[k] for k in range(K)]) for a in range(K)]
    mean = sum(pi[a] * (means[a] - b) * scores[a] for a in range(K))
    total = 0.0
    for a in range(K):
        deviation = (means[a] - b) * scores[a] - mean  # at eps = 0
        # E|deviation + sd eps s_a|^2 = |deviation|^2 + sd^2 |s_a|^2, since E eps = 0
        total += pi[a] * (deviation @ deviation + sd**2 * scores[a] @ scores[a])
    return total


# --- exact values against the seed --------------------------------------------------


def test_exact_gradient_and_return_at_uniform_policy():
    assert expected_return(MEANS, THETA0) == pytest.approx(6.5)
    np.testing.assert_allclose(exact_gradient(MEANS, THETA0), [-0.375, -0.125, 0.125, 0.375], atol=5e-4)


def test_exact_total_variances_of_the_seed():
    var = exact_total_variance(MEANS, 1.0, THETA0, [0.0, 6.5])
    np.testing.assert_allclose(var, [33.0625, 1.375], atol=5e-4)
    # theta = (0, 0, 0, 2): the seed prints pi = (0.096, 0.096, 0.096, 0.711), V = 7.42, 19.5 and 1.29
    np.testing.assert_allclose(softmax(THETA_PREFERS_4), [0.096, 0.096, 0.096, 0.711], atol=5e-4)
    V = expected_return(MEANS, THETA_PREFERS_4)
    assert round(V, 2) == 7.42
    var0, varV = exact_total_variance(MEANS, 1.0, THETA_PREFERS_4, [0.0, V])
    assert round(var0, 1) == 19.5 and round(varV, 2) == 1.29
    assert optimal_baseline(MEANS, THETA0) == pytest.approx(6.5)


@settings(max_examples=60, deadline=None)
@given(bandits())
def test_exact_moments_against_one_arm_at_a_time(bandit):
    means, theta, sd, b = bandit
    np.testing.assert_allclose(exact_gradient(means, theta), reference_gradient(means, theta), atol=1e-6)
    assert exact_total_variance(means, sd, theta, b) == pytest.approx(reference_variance(means, theta, sd, b),
                                                                      rel=1e-9, abs=1e-9)


def test_exact_moments_broadcast_over_policies_and_baselines():
    thetas = np.array([THETA0, THETA_PREFERS_4])  # (2, K)
    var = exact_total_variance(MEANS, 1.0, thetas, np.array([0.0, 6.5]))
    assert var == pytest.approx([reference_variance(MEANS, THETA0, 1.0, 0.0),
                                 reference_variance(MEANS, THETA_PREFERS_4, 1.0, 6.5)])
    sweep = exact_total_variance(MEANS, 1.0, THETA0, np.array([0.0, 3.0, 12.0]))
    assert sweep == pytest.approx([reference_variance(MEANS, THETA0, 1.0, b) for b in (0.0, 3.0, 12.0)])


# --- properties -------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(bandits())
def test_score_has_mean_zero_and_a_constant_baseline_leaves_the_mean_unchanged(bandit):
    means, theta, _, b = bandit
    K = len(means)
    pi = softmax(theta)
    scores = softmax_score(theta, np.arange(K))  # (K actions, K logits)
    np.testing.assert_allclose(pi @ scores, 0.0, atol=1e-12)  # sum_a pi_a s_a = 0
    mean_with_b = sum(pi[a] * (means[a] - b) * scores[a] for a in range(K))  # enumeration over actions
    np.testing.assert_allclose(mean_with_b, exact_gradient(means, theta), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(bandits(), st.floats(1e-3, 5))
def test_b_star_minimises_the_exact_variance(bandit, delta):
    means, theta, sd, _ = bandit
    b_star = optimal_baseline(means, theta)
    at_best = exact_total_variance(means, sd, theta, b_star)
    for b in (b_star - delta, b_star + delta):
        assert at_best <= exact_total_variance(means, sd, theta, b) + 1e-9


# --- Monte Carlo ------------------------------------------------------------------


@pytest.fixture(scope="module")
def mc():
    return monte_carlo(MEANS, 1.0, THETA0, [0.0, 6.5], samples=200_000, seed=0)


def test_seed_monte_carlo_variances_are_within_4_se_of_the_exact_ones(mc):
    # The SE of a 200,000-sample total variance, estimated from our own samples: the seed's
    # printed 33.028 and 1.369 must lie within 4 of them of the exact 33.0625 and 1.375 ...
    exact = exact_total_variance(MEANS, 1.0, THETA0, mc.b)
    assert abs(33.028 - exact[0]) <= 4 * mc.total_variance_se[0]
    assert abs(1.369 - exact[1]) <= 4 * mc.total_variance_se[1]
    # ... and so must our own estimates, and the measured b* (seed: 6.497) near the exact 6.5.
    assert np.all(np.abs(mc.total_variance - exact) <= 4 * mc.total_variance_se)
    assert mc.b_star == pytest.approx(6.5, abs=0.01)


def test_monte_carlo_mean_estimate_is_within_4_se_of_the_exact_gradient(mc):
    exact = exact_gradient(MEANS, THETA0)
    assert np.all(np.abs(mc.mean_estimate - exact) <= 4 * mc.mean_estimate_se)


def test_monte_carlo_against_plain_sample_moments():
    # the same draws as monte_carlo makes, summarised the obvious way
    N, b = 5000, np.array([0.0, 6.5, 10.0])
    mc = monte_carlo(MEANS, 1.0, THETA_PREFERS_4, b, samples=N, seed=3)
    rng = np.random.default_rng(3)
    a = rng.choice(4, size=N, p=softmax(THETA_PREFERS_4))
    r = np.asarray(MEANS)[a] + rng.standard_normal(N)
    s = softmax_score(THETA_PREFERS_4, a)
    np.testing.assert_allclose(mc.mean_score, s.mean(0), atol=1e-12)
    for j, base in enumerate(b):
        g = (r - base)[:, None] * s  # (N, K)
        np.testing.assert_allclose(mc.mean_estimate[j], g.mean(0), atol=1e-10)
        np.testing.assert_allclose(mc.mean_estimate_se[j], g.std(0) / np.sqrt(N), rtol=1e-8)
        sq_dev = ((g - g.mean(0)) ** 2).sum(1)
        assert mc.total_variance[j] == pytest.approx(sq_dev.mean(), rel=1e-9)
        assert mc.total_variance_se[j] == pytest.approx(sq_dev.std() / np.sqrt(N), rel=1e-6)
    s_sq = (s**2).sum(1)
    assert mc.b_star == pytest.approx((r * s_sq).mean() / s_sq.mean(), rel=1e-12)


# --- one step by hand (section 6.6) ---------------------------------------------------


def test_one_step_by_hand_matches_the_seed_table():
    step = one_step(MEANS, THETA0, action=3, reward=7.3, lr=0.1)
    np.testing.assert_allclose(step.pi, [0.25] * 4)
    np.testing.assert_allclose(step.score, [-0.25, -0.25, 0.75, -0.25])
    np.testing.assert_allclose(step.grad_no_baseline, [-1.825, -1.825, 5.475, -1.825])
    assert step.b == pytest.approx(6.5)
    np.testing.assert_allclose(step.grad_baseline, [-0.2, -0.2, 0.6, -0.2])
    np.testing.assert_allclose(step.exact_gradient, [-0.375, -0.125, 0.125, 0.375])
    np.testing.assert_allclose(step.new_pi_no_baseline, [0.197, 0.197, 0.4089, 0.197], atol=5e-5)
    np.testing.assert_allclose(step.new_pi_baseline, [0.2449, 0.2449, 0.2653, 0.2449], atol=5e-5)


# --- training (section 6.7) -----------------------------------------------------------


def loop_training(s: BanditTrainingSettings, baseline: str):
    """One seed at a time, the seed's five lines; the same draws per step as the engine:
    one uniform per seed (inverse-CDF choice of the reply), then one normal per seed."""
    rng = np.random.default_rng(s.seed)
    mu = np.array(s.means)
    K = len(mu)
    thetas = [np.zeros(K) for _ in range(s.seeds)]
    seen = [0.0] * s.seeds
    J = np.empty((s.steps + 1, s.seeds))
    J[0] = mu.mean()
    for t in range(1, s.steps + 1):
        u, eps = rng.random(s.seeds), rng.standard_normal(s.seeds)
        for i in range(s.seeds):
            p = np.exp(thetas[i] - thetas[i].max())
            p = p / p.sum()
            a, cdf = 0, p[0]
            while a < K - 1 and u[i] >= cdf:
                a += 1
                cdf += p[a]
            r = mu[a] + s.sd * eps[i]
            base = {"none": 0.0, "running": seen[i] / max(t - 1, 1), "value": p @ mu}[baseline]
            sc = -p
            sc[a] += 1
            thetas[i] = thetas[i] + s.lr * (r - base) * sc
            seen[i] += r
            p = np.exp(thetas[i] - thetas[i].max())
            J[t, i] = (p / p.sum()) @ mu
    return J, np.array(thetas)


@pytest.mark.parametrize("baseline", ["none", "running", "value"])
def test_vectorised_training_equals_a_per_seed_loop(baseline):
    s = BanditTrainingSettings(means=(1.0, 3.0, 2.0), sd=2.0, seeds=12, steps=60, lr=0.1, seed=5,
                               report_steps=(60,))
    J, thetas = loop_training(s, baseline)
    run = train_bandit(s, baseline)
    np.testing.assert_allclose(run.J, J, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.pi, softmax(thetas), rtol=1e-12, atol=1e-12)


def test_snapshots_stream_the_same_run():
    s = BanditTrainingSettings(seeds=20, steps=55, report_steps=(55,))
    snapshots = list(training_snapshots(s, "value", every=10))
    assert [snap.step for snap in snapshots] == [10, 20, 30, 40, 50, 55]
    assert snapshots[2].J.shape == (31, 20)
    final = train_bandit(s, "value")
    np.testing.assert_array_equal(snapshots[-1].J, final.J)
    np.testing.assert_array_equal(snapshots[2].J, final.J[:31])


@pytest.fixture(scope="module")
def runs():
    return train_all_baselines(BanditTrainingSettings())


# The seed's figures (its own random numbers): mean J at steps 100/200/400, P(best) > 0.5 and < 0.1.
SEED_TRAINING = {
    "none": ((7.352, 7.512, 7.655), 0.72, 0.24),
    "running": ((7.637, 7.873, 7.951), 1.0, 0.0),
    "value": ((7.648, 7.874, 7.951), 1.0, 0.0),
}


@pytest.mark.parametrize("baseline", ["none", "running", "value"])
def test_training_reproduces_the_seed_within_sampling_error(runs, baseline):
    run = runs[baseline]
    seeds = run.J.shape[1]
    means, frac_gt, frac_lt = SEED_TRAINING[baseline]
    for step, seed_mean in zip((100, 200, 400), means):
        # two independent 200-seed means (ours and the seed's): combined SE sqrt(2) sd / sqrt(200)
        se = np.sqrt(2) * run.J[step].std(ddof=1) / np.sqrt(seeds)
        assert abs(run.mean_J()[step] - seed_mean) <= 4 * se
    p_best = run.p_best()
    for ours, theirs in ((np.mean(p_best > 0.5), frac_gt), (np.mean(p_best < 0.1), frac_lt)):
        se = np.sqrt(2 * theirs * (1 - theirs) / seeds)  # binomial SE of the difference of two shares
        assert abs(ours - theirs) <= 4 * se
    if baseline != "none":
        assert run.argmax_counts() == {4: 200}  # the seed: every run ends on the best reply


def test_no_baseline_locks_some_seeds_onto_worse_replies(runs):
    counts = runs["none"].argmax_counts()
    assert sum(counts.values()) == 200 and counts[4] < 200
    low, high = runs["none"].band()[:, -1]
    assert low < 7.5 < high  # the seed: 6.984 to 7.983


# --- figures and the command line -------------------------------------------------------


SEED_SECTION_1 = """== 1. one REINFORCE step by hand, theta = 0
pi            = [0.25 0.25 0.25 0.25]
action a = 3, reward r = 7.3
score  = onehot(a) - pi = [-0.25 -0.25  0.75 -0.25]
grad (no baseline) = r * score       = [-1.825 -1.825  5.475 -1.825]
baseline b = V = sum_k pi_k mu_k = 6.5
grad (baseline)    = (r - b) * score = [-0.2 -0.2  0.6 -0.2]
exact gradient of J = pi_k (mu_k - J)  = [-0.375 -0.125  0.125  0.375]
new pi after one step, lr 0.1, no baseline: [0.197  0.197  0.4089 0.197 ]
new pi after one step, lr 0.1, baseline   : [0.2449 0.2449 0.2653 0.2449]"""


def test_bandit_figure_compute_and_render():
    result = bandit_figure.compute(BanditSettings(samples=20_000))
    for key in ("exact_gradient", "J", "b_star", "exact_total_variance_no_baseline",
                "exact_total_variance_value_baseline", "mc_total_variance_no_baseline",
                "mc_total_variance_value_baseline", "mc_mean_estimate_no_baseline", "sweep"):
        assert key in result
    assert [row["b"] for row in result["sweep"]] == [0.0, 3.0, 5.0, 6.0, 6.5, 7.0, 8.0, 10.0, 12.0]
    assert result["sweep"][4]["exact_total_variance"] == pytest.approx(1.375)
    json.dumps(result)
    text = bandit_figure.render(result)
    assert text.startswith(SEED_SECTION_1)
    for row in ("== 2. Monte Carlo check at theta = 0 with 20,000 samples",
                "exact gradient                       = [-0.375 -0.125  0.125  0.375]",
                "total variance (sum over 4 components): no baseline ",
                "== 3. variance of the estimate as a function of a constant baseline b (theta = 0)",
                "  b =   6.5: total variance ",
                "variance-minimising constant b* = E[r |score|^2] / E[|score|^2] = "):
        assert row in text
    assert "no baseline 33.062, baseline 1.375, ratio 24.0x" in text


def test_training_figure_compute_and_render():
    result = training_figure.compute(BanditTrainingSettings())
    text = training_figure.render(result)
    assert text.splitlines()[0] == "== 4. training: 200 seeds x 400 steps, one sample per step, learning rate 0.05"
    assert [run["baseline"] for run in result["runs"]] == ["none", "running", "value"]
    for run in result["runs"]:
        assert set(run["mean_J_at"]) == {"100", "200", "400"}
        assert {"p10", "p90", "frac_best_gt_half", "frac_best_lt_tenth", "final_argmax_counts"} <= set(run)
    assert result["runs"][2]["final_argmax_counts"] == {"4": 200}
    assert "  baseline running : mean J at step 100/200/400 = " in text
    assert "seeds with P(best) > 0.5: 100%;  seeds with P(best) < 0.1: 0%" in text
    assert "      most likely reply at the end, count over seeds: {4: 200}" in text


@pytest.mark.parametrize("bad", [
    dict(sd=-1.0), dict(sd=float("nan")), dict(means=(5.0,), theta=(0.0,)), dict(theta=(0.0, 0.0)),
    dict(means=(5.0, float("inf"), 7.0, 8.0)), dict(samples=0), dict(b=()), dict(action=5), dict(lr=0.0),
])
def test_invalid_bandit_settings_are_refused(bad):
    with pytest.raises(ValueError):
        BanditSettings(**bad)


@pytest.mark.parametrize("bad", [
    dict(sd=-0.5), dict(means=(1.0,)), dict(steps=0), dict(seeds=0), dict(report_steps=(100, 500)),
    dict(lr=float("nan")), dict(report_steps=()),
])
def test_invalid_training_settings_are_refused(bad):
    with pytest.raises(ValueError):
        BanditTrainingSettings(**bad)


def test_commands_json_and_refusal(capsys):
    assert main(["figures", "bandit", "--samples", "5000", "--theta", "0", "0", "0", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert round(result["exact_total_variance_no_baseline"], 1) == 19.5
    assert main(["figures", "bandit-training", "--seeds", "10", "--steps", "50", "--report-steps", "25", "50",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["runs"][0]["mean_J_at"]) == {"25", "50"}
    with pytest.raises(SystemExit) as exit_info:
        main(["figures", "bandit", "--theta", "0", "1"])
    assert exit_info.value.code == 2
    assert "theta must have one logit per arm (4), got 2." in capsys.readouterr().err


def test_summaries_from_per_arm_sums_equal_those_from_every_sample():
    """The per-arm power sums give the same summary as the same sample moments over all N draws
    (summed in another order, so equal to rounding: well under one part in 10^9)."""
    r, s = one_sample_draws(MEANS, 2.5, THETA_PREFERS_4, 20_000, 11)
    r_arms, a = one_sample_arms(MEANS, 2.5, THETA_PREFERS_4, 20_000, 11)
    np.testing.assert_array_equal(r_arms, r)  # the same draws, with the arms instead of their scores
    np.testing.assert_array_equal(s, softmax_score(THETA_PREFERS_4, a))
    sums = arm_sums(r, a, THETA_PREFERS_4)
    np.testing.assert_array_equal(sums.P[0], np.bincount(a, minlength=4))
    assert sums.P[0].sum() == 20_000 and sums.P[1].sum() == pytest.approx(r.sum(), rel=1e-12)
    for b in (0.0, 6.5, 11.0):
        g = (r - b)[:, None] * s  # (N, K)
        sq_dev = ((g - g.mean(0)) ** 2).sum(1)  # (N,)
        mc = summarise_sums(sums, [b])
        assert mc.total_variance[0] == pytest.approx(sq_dev.mean(), rel=1e-9)
        assert mc.total_variance_se[0] == pytest.approx(sq_dev.std() / np.sqrt(len(r)), rel=1e-6)


@pytest.mark.parametrize("means, sd", [(MEANS, 2.5), ((0.0, 10.0, 3.5, 9.5), 0.0), ((10.0, 10.0, 10.0, 10.0), 5.0)])
def test_rating_sums_from_the_noise_sums_equal_those_of_the_ratings(means, sd):
    """Any means and sd reuse the draws' noise: the binomial expansion of (mu_k + sd eps_i)^p gives the ratings'
    per-arm power sums of `one_sample_arms` with the same seed (summed in another order: equal to rounding)."""
    r, a = one_sample_arms(means, sd, THETA_PREFERS_4, 20_000, 11)
    direct = arm_sums(r, a, THETA_PREFERS_4)
    expanded = arm_sums_of_noise(noise_sums(THETA_PREFERS_4, 20_000, 11), means, sd, THETA_PREFERS_4)
    np.testing.assert_array_equal(expanded.S, direct.S)
    np.testing.assert_allclose(expanded.P, direct.P, rtol=1e-12)
    for mine, theirs in zip(summarise_sums(expanded, [0.0, 6.5]).total_variance, summarise_sums(direct, [0.0, 6.5]).total_variance):
        assert mine == pytest.approx(theirs, rel=1e-9)
