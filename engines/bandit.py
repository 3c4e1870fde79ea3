"""The four-armed bandit of seed 000 sections 6.4 to 6.7: REINFORCE, its variance, baselines.

A "prompt" has K possible "replies" (arms). The policy is a softmax over K logits,
pi_k = exp(theta_k) / sum_j exp(theta_j), and reply k earns a noisy rating
r = mu_k + sd * eps with eps ~ N(0, 1). The expected return J = sum_k pi_k mu_k is a
small sum, so everything the chapter measures by sampling is also known exactly here:
the gradient, the variance of the one-sample REINFORCE estimate (r - b) grad log pi_a
for any constant baseline b, and the variance-minimising b*. Training runs many seeds
at once, one (seeds, K) array of logits, with no baseline, Williams' running average
of past ratings, or the exact value V = sum_k pi_k mu_k.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from engines.policy_gradient import softmax, softmax_score
from engines.settings import finite, require

MEANS = (5.0, 6.0, 7.0, 8.0)
SD = 1.0
BASELINES = ("none", "running", "value")
BINOMIAL = np.array([[math.comb(p, j) for j in range(5)] for p in range(5)], dtype=float)
"""C(p, j) for p, j = 0 to 4 (0 where j > p): the power sums of r = mu + sd eps from those of eps (`arm_sums_of_noise`)."""


def _check_arms(means: tuple[float, ...], sd: float) -> None:
    require(len(means) >= 2, f"the bandit needs at least 2 arms, got {len(means)} mean(s).")
    require(finite(*means), f"every mean rating must be a finite number, got {list(means)}.")
    require(finite(sd) and sd >= 0, f"the rating noise sd must be a finite number >= 0, got {sd}.")


@dataclass(frozen=True)
class BanditSettings:
    """The seed's one-step table, Monte Carlo check and baseline sweep (sections 6.4 to 6.7)."""

    means: tuple[float, ...] = MEANS
    """Mean rating mu_k of each reply (arm); at least 2 finite numbers, reward units."""
    sd: float = SD
    """Standard deviation of the rating noise; >= 0, reward units."""
    theta: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    """Logits theta_k of the softmax policy, one per arm; finite numbers (all 0 = uniform)."""
    b: tuple[float, ...] = (0.0, 3.0, 5.0, 6.0, 6.5, 7.0, 8.0, 10.0, 12.0)
    """Constant baselines b for the variance sweep; finite numbers, reward units."""
    samples: int = 200_000
    """Number N of one-sample estimates in the Monte Carlo check; >= 1."""
    seed: int = 0
    """Seed of the random number generator for the Monte Carlo check; >= 0."""
    lr: float = 0.1
    """Learning rate of the one REINFORCE step done by hand; a finite number > 0."""
    action: int = 3
    """Reply a sampled in the step done by hand, numbered from 1 to the number of arms."""
    reward: float = 7.3
    """Rating r that reply received in the step done by hand; a finite number, reward units."""

    def __post_init__(self):
        _check_arms(self.means, self.sd)
        require(len(self.theta) == len(self.means),
                f"theta must have one logit per arm ({len(self.means)}), got {len(self.theta)}.")
        require(finite(*self.theta), f"every logit theta_k must be a finite number, got {list(self.theta)}.")
        require(len(self.b) > 0, "give at least one baseline b.")
        require(finite(*self.b), f"every baseline b must be a finite number, got {list(self.b)}.")
        require(self.samples >= 1, f"samples must be at least 1, got {self.samples}.")
        require(self.seed >= 0, f"seed must be >= 0, got {self.seed}.")
        require(finite(self.lr) and self.lr > 0, f"the learning rate lr must be a finite number > 0, got {self.lr}.")
        require(1 <= self.action <= len(self.means),
                f"action must be a reply number from 1 to {len(self.means)}, got {self.action}.")
        require(finite(self.reward), f"the reward must be a finite number, got {self.reward}.")


@dataclass(frozen=True)
class BanditTrainingSettings:
    """The seed's training comparison of section 6.7: many seeds, three baselines."""

    means: tuple[float, ...] = MEANS
    """Mean rating mu_k of each reply (arm); at least 2 finite numbers, reward units."""
    sd: float = SD
    """Standard deviation of the rating noise; >= 0, reward units."""
    seeds: int = 200
    """Number of independent training runs, trained side by side; >= 1."""
    steps: int = 400
    """REINFORCE steps per run, one sampled reply per step; >= 1."""
    lr: float = 0.05
    """Learning rate of each step; a finite number > 0."""
    seed: int = 0
    """Seed of the random number generator (one stream for all runs); >= 0."""
    report_steps: tuple[int, ...] = (100, 200, 400)
    """Steps at which the table reports the mean J; each from 1 to steps."""

    def __post_init__(self):
        _check_arms(self.means, self.sd)
        require(self.seeds >= 1, f"seeds must be at least 1, got {self.seeds}.")
        require(self.steps >= 1, f"steps must be at least 1, got {self.steps}.")
        require(finite(self.lr) and self.lr > 0, f"the learning rate lr must be a finite number > 0, got {self.lr}.")
        require(self.seed >= 0, f"seed must be >= 0, got {self.seed}.")
        require(len(self.report_steps) > 0, "give at least one report step.")
        require(all(1 <= s <= self.steps for s in self.report_steps),
                f"every report step must lie between 1 and steps ({self.steps}), got {list(self.report_steps)}.")


# ---------------------------------------------------------------------------------------
# Exact quantities (sections 6.4 and 6.7)


def expected_return(means, theta):
    """J(theta) = sum_k pi_k mu_k, seed 000 section 6.4. theta (..., K) -> J (...)."""
    return softmax(np.asarray(theta, dtype=float)) @ np.asarray(means, dtype=float)


def exact_gradient(means, theta):
    """dJ/dtheta_k = pi_k (mu_k - J), seed 000 section 6.4. theta (..., K) -> (..., K)."""
    mu = np.asarray(means, dtype=float)
    pi = softmax(np.asarray(theta, dtype=float))  # (..., K)
    J = pi @ mu  # (...)
    return pi * (mu - J[..., None])


def _score_sq_per_action(theta):
    """|grad log pi_a|^2 = |onehot(a) - pi|^2 for every action a: theta (..., K) -> (..., K)."""
    theta = np.asarray(theta, dtype=float)
    K = theta.shape[-1]
    every_action = np.arange(K).reshape((1,) * (theta.ndim - 1) + (K,))
    scores = softmax_score(theta, every_action)  # (..., K actions, K logits)
    return (scores**2).sum(-1)


def exact_total_variance(means, sd, theta, b=0.0):
    """Total variance (sum over the K components) of g = (r - b) grad log pi_a, section 6.7.

        E|g|^2 = sum_a pi_a ((mu_a - b)^2 + sd^2) |onehot(a) - pi|^2
        Var    = E|g|^2 - |dJ/dtheta|^2

    since E[(r - b)^2 | a] = (mu_a - b)^2 + sd^2 and E[g] = dJ/dtheta for every constant b.
    theta is (..., K); b broadcasts against its leading shape (...); returns that shape.
    """
    mu = np.asarray(means, dtype=float)
    theta = np.asarray(theta, dtype=float)
    b = np.asarray(b, dtype=float)
    pi = softmax(theta)  # (..., K)
    weight = pi * _score_sq_per_action(theta)  # (..., K) pi_a |s_a|^2
    second_moment = (weight * ((mu - b[..., None]) ** 2 + sd**2)).sum(-1)
    grad = exact_gradient(mu, theta)
    return second_moment - (grad**2).sum(-1)


def optimal_baseline(means, theta):
    """Variance-minimising constant baseline, seed 000 section 6.7:

        b* = E[r |grad log pi_a|^2] / E[|grad log pi_a|^2]
           = sum_a pi_a |s_a|^2 mu_a / sum_a pi_a |s_a|^2

    (the rating noise averages out of the numerator). theta (..., K) -> (...).
    """
    mu = np.asarray(means, dtype=float)
    theta = np.asarray(theta, dtype=float)
    weight = softmax(theta) * _score_sq_per_action(theta)  # (..., K)
    return (weight @ mu) / weight.sum(-1)


# ---------------------------------------------------------------------------------------
# One step by hand (section 6.6) and the Monte Carlo check (sections 6.4 and 6.7)


@dataclass(frozen=True)
class OneStep:
    """One REINFORCE step by hand, with and without the baseline b = V (section 6.6)."""

    pi: np.ndarray
    """Policy before the step, (K,)."""
    score: np.ndarray
    """Score vector onehot(a) - pi of the sampled reply, (K,)."""
    grad_no_baseline: np.ndarray
    """The estimate r * score, (K,)."""
    b: float
    """The baseline V = sum_k pi_k mu_k."""
    grad_baseline: np.ndarray
    """The estimate (r - b) * score, (K,)."""
    exact_gradient: np.ndarray
    """pi_k (mu_k - J), (K,)."""
    new_pi_no_baseline: np.ndarray
    """softmax(theta + lr * r * score), (K,)."""
    new_pi_baseline: np.ndarray
    """softmax(theta + lr * (r - b) * score), (K,)."""


def one_step(means, theta, action: int, reward: float, lr: float) -> OneStep:
    """Seed 000 sections 6.4 to 6.6: one step theta <- theta + lr (r - b) grad log pi_a.

    `action` is numbered from 1, as in the seed; b = 0 or b = V = sum_k pi_k mu_k.
    """
    mu = np.asarray(means, dtype=float)
    theta = np.asarray(theta, dtype=float)
    pi = softmax(theta)
    score = softmax_score(theta, action - 1)  # (K,)
    V = float(pi @ mu)
    grad_none = reward * score
    grad_base = (reward - V) * score
    return OneStep(
        pi=pi,
        score=score,
        grad_no_baseline=grad_none,
        b=V,
        grad_baseline=grad_base,
        exact_gradient=exact_gradient(mu, theta),
        new_pi_no_baseline=softmax(theta + lr * grad_none),
        new_pi_baseline=softmax(theta + lr * grad_base),
    )


@dataclass(frozen=True)
class MonteCarlo:
    """N one-sample estimates g = (r - b) grad log pi_a, summarised for each baseline b."""

    b: np.ndarray
    """The baselines evaluated, (B,)."""
    mean_score: np.ndarray
    """Average score vector (1/N) sum_i grad log pi_{a_i}, (K,); zero up to sampling error."""
    mean_estimate: np.ndarray
    """Average estimate for each b, (B, K)."""
    mean_estimate_se: np.ndarray
    """Standard error of each component of mean_estimate, (B, K)."""
    total_variance: np.ndarray
    """Sample total variance (1/N) sum_i |g_i - mean|^2 for each b, (B,)."""
    total_variance_se: np.ndarray
    """Standard error of total_variance: sd of |g_i - mean|^2 over sqrt(N), (B,)."""
    b_star: float
    """Measured variance-minimising baseline, mean(r |s|^2) / mean(|s|^2)."""
    total_variance_at_b_star: float
    """Sample total variance at the measured b*, on the same samples."""


def _draw(theta, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The random part of N one-sample draws: the arms a_i ~ pi (N,) and the standard normal noise eps_i (N,).

    Neither depends on the means or on sd, so every mean rating and noise level reuses them.
    """
    rng = np.random.default_rng(seed)
    pi = softmax(np.asarray(theta, dtype=float))
    a = rng.choice(len(pi), size=samples, p=pi)  # (N,) sampled replies
    return a, rng.standard_normal(samples)  # (N,), (N,)


def one_sample_arms(means, sd: float, theta, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """N one-sample draws, seed 000 section 6.5's first lines vectorised:

        a_i ~ pi,   r_i = mu_{a_i} + sd eps_i

    Returns the ratings r (N,) and the arms drawn a (N,); `one_sample_draws` adds their scores.
    """
    mu = np.asarray(means, dtype=float)
    a, eps = _draw(theta, samples, seed)
    r = mu[a] + sd * eps  # (N,) their noisy ratings
    return r, a


def one_sample_draws(means, sd: float, theta, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """N one-sample draws with their scores, seed 000 section 6.5's first four lines vectorised:

        a_i ~ pi,   r_i = mu_{a_i} + sd eps_i,   s_i = onehot(a_i) - pi

    Returns the ratings r (N,) and score vectors s (N, K); the estimate for a baseline b
    is (r_i - b) s_i. The same seed gives the same draws as `monte_carlo` and `one_sample_arms`.
    """
    r, a = one_sample_arms(means, sd, theta, samples, seed)
    return r, softmax_score(theta, a)  # (N,), (N, K)


def monte_carlo(means, sd: float, theta, b, samples: int, seed: int) -> MonteCarlo:
    """Seed 000 sections 6.4 and 6.7: sample N replies a_i ~ pi and ratings r_i (`one_sample_draws`),
    then summarise g_i(b) = (r_i - b) s_i for every baseline b on those samples (`summarise_draws`)."""
    return summarise_draws(*one_sample_draws(means, sd, theta, samples, seed), b)


@dataclass(frozen=True)
class ArmSums:
    """One-sample draws reduced to what their summaries need. The score s_i is one of only K vectors,
    S_k = onehot(k) - pi for the arm drawn, so every sum over the N samples is a sum over the arms."""

    S: np.ndarray
    """The score vector of each arm, onehot(k) - pi, (K, K) (the row of an arm never drawn weighs 0)."""
    P: np.ndarray
    """Per-arm power sums of the ratings, P[p, k] = sum_{i: a_i = k} r_i^p for p = 0 to 4 (p = 0: the counts), (5, K)."""


def arm_sums(r: np.ndarray, a: np.ndarray, theta) -> ArmSums:
    """Ratings r (N,) and arms a (N,) of `one_sample_arms` under the policy softmax(theta), reduced to
    per-arm sums: one pass over the draws."""
    K = len(theta)
    return ArmSums(S=softmax_score(theta, np.arange(K)), P=_power_sums(r, a, K))  # row k of S: onehot(k) - pi, s_i of an i that drew k


def noise_sums(theta, samples: int, seed: int) -> np.ndarray:
    """The draws of `one_sample_arms` (same seed: the same arms a_i and noise eps_i) before the means and sd
    are applied, reduced to per-arm power sums of the noise, E[p, k] = sum_{i: a_i = k} eps_i^p, p = 0 to 4, (5, K)."""
    a, eps = _draw(theta, samples, seed)
    return _power_sums(eps, a, len(theta))


def arm_sums_of_noise(E: np.ndarray, means, sd: float, theta) -> ArmSums:
    """`arm_sums` of the draws whose noise sums are E (`noise_sums`), for these means and sd, without the draws.

    An i that drew arm k has r_i = mu_k + sd eps_i, so by the binomial theorem

        P[p, k] = sum_{i: a_i = k} r_i^p = sum_{j=0}^{p} C(p, j) mu_k^(p-j) sd^j E[j, k]

    O(K): a new mean or noise level costs no pass over the N draws (equal to `arm_sums` up to rounding).
    """
    _check_arms(tuple(means), sd)
    mu = np.asarray(means, dtype=float)  # (K,)
    p = np.arange(5)
    mu_pow = mu[None, None, :] ** np.maximum(p[:, None] - p[None, :], 0)[:, :, None]  # (5, 5, K) mu_k^(p-j)
    P = np.einsum("pj,pjk,j,jk->pk", BINOMIAL, mu_pow, float(sd) ** p, E)  # (5, K)
    return ArmSums(S=softmax_score(theta, np.arange(len(mu))), P=P)


def _power_sums(x: np.ndarray, a: np.ndarray, K: int) -> np.ndarray:
    """Per-arm power sums of x (N,) over the arms a (N,): out[p, k] = sum_{i: a_i = k} x_i^p, p = 0 to 4, (5, K)."""
    out = np.empty((5, K))  # (5, K)
    out[0] = np.bincount(a, minlength=K)  # the counts: integer bincount, no weights to multiply
    power = x.copy()  # (N,) x^p, raised in place: no new array per power
    for p in range(1, 5):
        out[p] = np.bincount(a, weights=power, minlength=K)
        if p < 4:
            power *= x
    return out


def summarise_draws(r: np.ndarray, s: np.ndarray, b) -> MonteCarlo:
    """`summarise_sums` of ratings r (N,) and scores s (N, K): every baseline b's summary of g_i(b) = (r_i - b) s_i."""
    K = s.shape[1]
    a = np.flatnonzero(s.ravel() > 0) % K  # (N,) the arm drawn: 1 - pi_a is the only positive entry of s_i
    S = s[[np.argmax(a == k) for k in range(K)]]  # (K, K) the score of an i that drew each arm
    return summarise_sums(ArmSums(S=S, P=_power_sums(r, a, K)), b)


def coordinate_histograms(r: np.ndarray, a: np.ndarray, theta, k: int, b: float, bins: int) -> dict:
    """Histograms of coordinate k of the one-sample estimates without and with the baseline b, on shared bins.

    With s_ik = 1[a_i = k] - pi_k, the estimates are r_i s_ik (b = 0) and (r_i - b) s_ik, the same
    draws (r, a). Returns the bins' edges (left, right) and the counts of each ("none", "baseline").
    """
    score_k = (a == k) - softmax(np.asarray(theta, dtype=float))[k]  # (N,)
    none, baseline = r * score_k, (r - b) * score_k
    span = (min(none.min(), baseline.min()), max(none.max(), baseline.max()))  # shared bins (equal widths: numpy's fast path)
    counts_none, edges = np.histogram(none, bins=bins, range=span)
    return {"left": edges[:-1], "right": edges[1:], "none": counts_none, "baseline": np.histogram(baseline, bins=bins, range=span)[0]}


def summarise_sums(sums: ArmSums, b) -> MonteCarlo:
    """Seed 000 sections 6.4 and 6.7 on given draws, reduced to their `arm_sums`:

        g_i(b) = (r_i - b) s_i,   s_i = onehot(a_i) - pi

    for every baseline b on the same samples, and their sample moments. With c_i = r_i - b,
    the mean m(b) = mean(r s) - b mean(s) is linear in b, and the squared deviation

        |g_i - m|^2 - |m|^2 = c_i^2 |s_i|^2 - 2 c_i s_i.m = alpha_i + beta_i b + gamma_i b^2

    is a quadratic in b per sample, so every baseline's moments follow from the means and the
    covariance of (alpha, beta, gamma). And s_i is one of only K vectors, S_k = onehot(k) - pi for
    the arm drawn, so alpha_i, beta_i and gamma_i are polynomials in r_i of degree 2, 1 and 0 with
    coefficients of the arm: every sum over the N samples is a sum over the K arms of the per-arm
    power sums P[p, k] = sum_{i: a_i = k} r_i^p, p = 0 to 4. O(K): no pass over the draws.
    """
    S, P = sums.S, sums.P
    K = S.shape[0]
    n, P1, P2 = P[0], P[1], P[2]  # (K,) counts, sums of r and of r^2 per arm
    N = n.sum()

    S2 = S**2  # (K, K)
    s_sq = S2.sum(1)  # (K,) |S_k|^2
    b_star = float(P1 @ s_sq / (n @ s_sq))
    mean_s, mean_rs = n @ S / N, P1 @ S / N  # (K,) each
    dot_rs, dot_s = S @ mean_rs, S @ mean_s  # (K,) each: S_k . m(b) = dot_rs - b dot_s
    baselines = np.append(np.asarray(b, dtype=float), b_star)  # (B + 1,)
    mean = mean_rs - baselines[:, None] * mean_s  # (B + 1, K)
    # (1/N) sum_i c_i^2 s_i^2 per component, = mean(r^2 s^2) - 2 b mean(r s^2) + b^2 mean(s^2)
    second = P2 @ S2 / N - 2 * baselines[:, None] * (P1 @ S2 / N) + baselines[:, None] ** 2 * (n @ S2 / N)  # (B + 1, K)
    mean_se = np.sqrt(np.maximum(second - mean**2, 0.0) / N)
    # alpha = s_sq r^2 - 2 dot_rs r,  beta = 2 dot_rs + 2 (dot_s - s_sq) r,  gamma = s_sq - 2 dot_s:
    # coefficients C[term, power of r, arm].
    zero = np.zeros(K)
    C = np.array([[zero, -2 * dot_rs, s_sq], [2 * dot_rs, 2 * (dot_s - s_sq), zero], [s_sq - 2 * dot_s, zero, zero]])  # (3, 3, K)
    terms_mean = np.einsum("tpk,pk->t", C, P[:3]) / N  # (3,)
    products = np.einsum("upk,vqk,pqk->uv", C, C, P[np.add.outer(np.arange(3), np.arange(3))]) / N  # (3, 3) mean of term_u term_v
    terms_cov = products - np.outer(terms_mean, terms_mean)  # (3, 3)
    powers = baselines[:, None] ** np.arange(3)  # (B + 1, 3): 1, b, b^2
    variance = powers @ terms_mean + (mean**2).sum(1)  # (B + 1,) mean of |g_i - m|^2
    variance_se = np.sqrt(np.maximum(np.einsum("bi,ij,bj->b", powers, terms_cov, powers), 0.0) / N)  # sd of |g_i - m|^2 over sqrt(N)
    return MonteCarlo(
        b=baselines[:-1],
        mean_score=mean_s,
        mean_estimate=mean[:-1],
        mean_estimate_se=mean_se[:-1],
        total_variance=variance[:-1],
        total_variance_se=variance_se[:-1],
        b_star=b_star,
        total_variance_at_b_star=float(variance[-1]),
    )


# ---------------------------------------------------------------------------------------
# Training with and without a baseline (section 6.7)


@dataclass(frozen=True)
class TrainingSnapshot:
    """All seeds of one baseline after `step` REINFORCE steps."""

    baseline: str
    """"none", "running" or "value"."""
    step: int
    """Steps taken so far."""
    J: np.ndarray
    """Expected return of every seed after 0, 1, ..., step steps, (step + 1, seeds)."""
    pi: np.ndarray
    """Current policy of every seed, (seeds, K)."""
    best: int
    """Index (from 0) of the arm with the highest mean rating."""

    def mean_J(self) -> np.ndarray:
        """Mean over seeds of J after each step, (step + 1,)."""
        return self.J.mean(-1)

    def band(self, low: float = 10, high: float = 90) -> np.ndarray:
        """The low-th and high-th percentile of J over seeds after each step, (2, step + 1)."""
        return np.percentile(self.J, [low, high], axis=-1)

    def p_best(self) -> np.ndarray:
        """Probability each seed's policy gives the best arm, (seeds,)."""
        return self.pi[:, self.best]

    def argmax_counts(self) -> dict[int, int]:
        """How many seeds end with each arm most likely, arms numbered from 1 as in the seed."""
        arms, counts = np.unique(self.pi.argmax(-1), return_counts=True)
        return {int(arm) + 1: int(n) for arm, n in zip(arms, counts)}


def training_snapshots(settings: BanditTrainingSettings, baseline: str, every: int = 10) -> Iterator[TrainingSnapshot]:
    """REINFORCE on the bandit, seed 000 sections 6.5 and 6.7, all seeds as one array:

        pi = softmax(theta);  a ~ pi;  r = mu_a + sd eps
        theta <- theta + lr (r - b) (onehot(a) - pi)

    with b = 0 ("none"), b = the average of all ratings this seed has seen before this
    step, 0 before the first one ("running", Williams' reinforcement comparison, his
    equation 10), or b = V = sum_k pi_k mu_k of the current policy ("value").
    Every seed starts from the uniform policy theta = 0. Each step draws, in this order,
    one uniform u per seed (the reply is the first k with u < pi_1 + ... + pi_k) and one
    standard normal eps per seed, so a per-seed loop fed the same draws gives the same runs.
    Yields a snapshot every `every` steps and after the last one.
    """
    require(baseline in BASELINES, f"baseline must be one of {', '.join(BASELINES)}, got {baseline!r}.")
    require(every >= 1, f"every must be at least 1, got {every}.")
    mu = np.asarray(settings.means, dtype=float)
    S, K, T = settings.seeds, len(mu), settings.steps
    rng = np.random.default_rng(settings.seed)
    theta = np.zeros((S, K))
    J = np.empty((T + 1, S))
    pi = softmax(theta)  # (S, K)
    J[0] = pi @ mu
    ratings_sum = np.zeros(S)
    for t in range(1, T + 1):
        u = rng.random(S)
        eps = rng.standard_normal(S)
        a = (u[:, None] >= np.cumsum(pi, -1)[:, :-1]).sum(-1)  # (S,) inverse-CDF sampling
        r = mu[a] + settings.sd * eps
        if baseline == "none":
            b = 0.0
        elif baseline == "running":
            b = ratings_sum / max(t - 1, 1)  # (S,) mean of the t - 1 earlier ratings
        else:
            b = pi @ mu  # (S,) V of the current policy
        theta = theta + settings.lr * (r - b)[:, None] * softmax_score(theta, a)
        ratings_sum += r
        pi = softmax(theta)
        J[t] = pi @ mu
        if t % every == 0 or t == T:
            yield TrainingSnapshot(baseline=baseline, step=t, J=J[: t + 1], pi=pi, best=int(mu.argmax()))


def train_bandit(settings: BanditTrainingSettings, baseline: str) -> TrainingSnapshot:
    """Run `training_snapshots` to the end and return the final snapshot."""
    for snapshot in training_snapshots(settings, baseline, every=settings.steps):
        pass
    return snapshot


def train_all_baselines(settings: BanditTrainingSettings) -> dict[str, TrainingSnapshot]:
    """The seed's three runs of section 6.7 (none, running, value), same settings and seed."""
    return {baseline: train_bandit(settings, baseline) for baseline in BASELINES}


@dataclass(frozen=True)
class TrainingView:
    """The training curves and the counts of a run after `step` of its steps."""

    settings: BanditTrainingSettings
    """What is being trained: arms, seeds, steps, learning rate, seed."""
    step: int
    """Steps taken so far by every baseline."""
    curves: dict
    """Columns of the curve plot: step and, per baseline, mean J and the 10th/90th percentiles."""
    arms: dict
    """Columns of the bar chart: arm and, per baseline, how many seeds have it most likely now."""
    stats: dict
    """Per baseline: mean J, p10, p90, shares with P(best) > 0.5 and < 0.1, seeds on a worse arm."""


def training_views(settings: BanditTrainingSettings, every: int) -> Iterator[TrainingView]:
    """Walk `training_snapshots` for the three baselines in step, yielding the whole run so far.

    Each snapshot holds J for every step taken; only its new rows are summarised (mean and
    percentile band over seeds), so a long run costs the same per step at its end as at its start.
    """
    runs = [training_snapshots(settings, baseline, every=every) for baseline in BASELINES]
    T = settings.steps
    columns = {"step": np.arange(T + 1)}
    for baseline in BASELINES:
        columns |= {f"{baseline}_mean": np.empty(T + 1), f"{baseline}_p10": np.empty(T + 1), f"{baseline}_p90": np.empty(T + 1)}
    done = 0  # rows of J summarised so far
    for snapshots in zip(*runs):
        step = snapshots[0].step
        arms = {"arm": [str(k) for k in range(1, len(settings.means) + 1)]}
        stats = {}
        for baseline, snap in zip(BASELINES, snapshots):
            new = replace(snap, J=snap.J[done:])  # rows done .. step
            rows = slice(done, step + 1)
            columns[f"{baseline}_mean"][rows] = new.mean_J()
            columns[f"{baseline}_p10"][rows], columns[f"{baseline}_p90"][rows] = new.band()
            counts = snap.argmax_counts()
            arms[baseline] = [counts.get(k, 0) for k in range(1, len(settings.means) + 1)]
            p_best = snap.p_best()
            stats[baseline] = {
                "mean_J": float(columns[f"{baseline}_mean"][step]),
                "p10": float(columns[f"{baseline}_p10"][step]),
                "p90": float(columns[f"{baseline}_p90"][step]),
                "above_half": float((p_best > 0.5).mean()),
                "below_tenth": float((p_best < 0.1).mean()),
                "worse": settings.seeds - counts.get(snap.best + 1, 0),
                "counts": counts,
            }
        done = step + 1
        yield TrainingView(
            settings=settings,
            step=step,
            curves={name: col[:done].copy() for name, col in columns.items()},
            arms=arms,
            stats=stats,
        )
