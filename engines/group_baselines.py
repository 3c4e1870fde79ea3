"""Group baselines on right/wrong rewards, exactly: none, batch mean, leave-one-out (RLOO), GRPO and Dr. GRPO.

Seed 000 section 6.1 names the setting of verifiable rewards (a reply is right or wrong, reward
1 or 0), and section 6.10 the direction the field took: "RLOO and GRPO keep the baseline and drop
the critic". Seed 001 section 4 shows that the batch mean is the leave-one-out baseline shrunk by
1 - 1/N. Here M prompts, each answered right with p_m = sigmoid(theta_m), so that

    J = (1/M) sum_m p_m,        dJ/dtheta_m = p_m (1 - p_m) / M          (the true gradient)

K replies y_i in {0, 1} are drawn per prompt, the reward is r_i = y_i, the score of a reply is
d log pi(y_i) / d theta_m = y_i - p_m, and the group's estimate of dJ/dtheta_m is

    g_m = (1/(M K)) sum_i A_i (y_i - p_m),

A_i the estimator's advantage (engines.policy_gradient.group_advantages). Every estimator treats
the K replies alike, so g_m depends on which replies are right only through how many are: with k
right, g_m(k) = (k A_right(k) (1 - p_m) - (K - k) A_wrong(k) p_m) / (M K), and k ~ Binomial(K, p_m).
Summing over the K + 1 values of k gives the exact expected value and variance of each g_m.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from engines.policy_gradient import group_advantages
from engines.settings import finite, require, whole

ESTIMATORS = {
    "none": "no baseline",
    "mean": "group mean",
    "loo": "leave-one-out (RLOO)",
    "grpo": "GRPO (÷ std)",
    "dr_grpo": "Dr. GRPO",
}
"""The estimators compared, key (engines.policy_gradient.group_advantages's) -> label."""
MAX_K = 64
"""Most replies per prompt accepted (the Monte Carlo draws groups x M x K numbers per estimator)."""


@dataclass(frozen=True)
class GroupBaselinesSettings:
    """M prompts with right/wrong rewards, K replies each, and the estimators' experiments."""

    p: tuple[float, ...] = (0.9, 0.2)
    """Each prompt's chance p_m of a right reply at the start; each strictly between 0 and 1."""
    K: int = 4
    """Replies per prompt (the group); 2 to 64 (the leave-one-out baseline needs two)."""
    groups: int = 20_000
    """Groups drawn per prompt in the Monte Carlo check; at least 2."""
    seeds: int = 32
    """Training runs per estimator; at least 1."""
    steps: int = 150
    """Training steps per run; at least 1."""
    lr: float = 0.5
    """Learning rate eta of theta <- theta + eta g_hat; positive."""
    seed: int = 0
    """Seed of the Monte Carlo draws and of training; a whole number >= 0."""

    def __post_init__(self):
        require(len(self.p) >= 1 and all(finite(q) and 0 < q < 1 for q in self.p),
                f"every p must lie strictly between 0 and 1, got {', '.join(map(str, self.p)) or 'none'}.")
        require(whole(self.K, 2, MAX_K), f"K must be a whole number of replies from 2 to {MAX_K}, got {self.K}.")
        require(whole(self.groups, 2), f"groups must be a whole number >= 2, got {self.groups}.")
        require(whole(self.seeds, 1) and whole(self.steps, 1), "seeds and steps must be whole numbers >= 1.")
        require(finite(self.lr) and self.lr > 0, f"lr must be a positive number, got {self.lr}.")
        require(whole(self.seed, 0), f"seed must be a whole number >= 0, got {self.seed}.")


def sigmoid(theta):
    """p = 1 / (1 + e^-theta), a prompt's chance of a right reply (seed 001 section 4's p = sigma(theta))."""
    return 1.0 / (1.0 + np.exp(-theta))


def true_gradient(p: np.ndarray) -> np.ndarray:
    """dJ/dtheta_m = p_m (1 - p_m) / M for J = (1/M) sum_m p_m, p_m = sigmoid(theta_m) (seed 000 section 6.4's
    policy gradient, exact); (M,) -> (M,)."""
    return p * (1 - p) / len(p)


def group_gradient(y: np.ndarray, p: np.ndarray, estimator: str) -> np.ndarray:
    """The REINFORCE estimate of seed 000 section 6.5 with the group's advantages (section 6.7's baselines):

        g_m = (1/(M K)) sum_i A_i (y_i - p_m),   r_i = y_i,   d log pi(y_i) / d theta_m = y_i - p_m

    y is (..., M, K) in {0, 1}, p (M,) or (..., M); returns (..., M).
    """
    M, K = y.shape[-2:]
    A = group_advantages(y, estimator, axis=-1)  # (..., M, K)
    return (A * (y - p[..., None])).sum(-1) / (M * K)


def binomial_pmf(K: int, p: np.ndarray) -> np.ndarray:
    """P(k right of K) = C(K, k) p^k (1 - p)^(K-k); (M,) -> (M, K + 1)."""
    k = np.arange(K + 1)
    comb = np.array([math.comb(K, j) for j in k], dtype=float)
    return comb * p[:, None] ** k * (1 - p[:, None]) ** (K - k)


def gradient_by_right_count(p: np.ndarray, K: int, estimator: str) -> np.ndarray:
    """g_m(k): the estimate of a group with k right replies (the first k), for k = 0..K; (M,) -> (M, K + 1)."""
    y = (np.arange(K)[None, :] < np.arange(K + 1)[:, None]).astype(float)  # (K + 1, K), row k has k ones
    y = np.broadcast_to(y, (len(p), K + 1, K)).transpose(1, 0, 2)  # (K + 1, M, K)
    return group_gradient(y, p, estimator).T  # (M, K + 1)


@dataclass(frozen=True)
class GroupExact:
    """The estimators' exact moments, each (estimators, M) in the order of `estimators`."""

    estimators: tuple[str, ...]
    p: np.ndarray
    """(M,) the prompts' chances of a right reply."""
    true_gradient: np.ndarray
    """(M,) dJ/dtheta_m."""
    expected: np.ndarray
    """(E, M) E[g_m]."""
    variance: np.ndarray
    """(E, M) Var[g_m]."""
    fourth_moment: np.ndarray
    """(E, M) E[(g_m - E g_m)^4], for the standard error of a sampled variance."""
    no_signal: np.ndarray
    """(M,) P(all K rewards equal) = p^K + (1 - p)^K: such a group's g_m is 0 under mean, loo, grpo, dr_grpo."""

    @property
    def ratio(self) -> np.ndarray:
        """(E, M) E[g_m] / dJ/dtheta_m: 1 unbiased, a constant below 1 a rescaling, unequal across m a reweighting."""
        return self.expected / self.true_gradient

    @property
    def angle(self) -> np.ndarray:
        """(E,) degrees between E[g] and the true gradient over the M prompts: 0 when the update points the right way."""
        e, t = self.expected, self.true_gradient
        cos = (e @ t) / (np.linalg.norm(e, axis=1) * np.linalg.norm(t))
        return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def exact_moments(settings: GroupBaselinesSettings) -> GroupExact:
    """E[g_m], Var[g_m] and E[(g_m - E g_m)^4] by summing over k ~ Binomial(K, p_m), for every estimator."""
    p, K = np.asarray(settings.p, dtype=float), settings.K
    pmf = binomial_pmf(K, p)  # (M, K + 1)
    g = np.stack([gradient_by_right_count(p, K, e) for e in ESTIMATORS])  # (E, M, K + 1)
    mean = (pmf * g).sum(-1)  # (E, M)
    centred = g - mean[..., None]
    return GroupExact(
        estimators=tuple(ESTIMATORS), p=p, true_gradient=true_gradient(p), expected=mean,
        variance=(pmf * centred**2).sum(-1), fourth_moment=(pmf * centred**4).sum(-1),
        no_signal=pmf[:, 0] + pmf[:, K],
    )


@dataclass(frozen=True)
class GroupMonteCarlo:
    """Sampled moments of each g_m over `groups` groups, each (estimators, M)."""

    groups: int
    mean: np.ndarray
    """(E, M) sample mean of g_m."""
    mean_se: np.ndarray
    """(E, M) its standard error, s / sqrt(groups)."""
    variance: np.ndarray
    """(E, M) sample variance of g_m (groups - 1 in the denominator)."""
    no_signal: np.ndarray
    """(M,) share of sampled groups whose K rewards are all equal."""


def monte_carlo(settings: GroupBaselinesSettings) -> GroupMonteCarlo:
    """Draw `groups` groups of K replies per prompt and compute each estimator's g_m on the same draws."""
    p, K, n = np.asarray(settings.p, dtype=float), settings.K, settings.groups
    y = (np.random.default_rng(settings.seed).random((n, len(p), K)) < p[:, None]).astype(float)  # (n, M, K)
    g = np.stack([group_gradient(y, p, e) for e in ESTIMATORS])  # (E, n, M)
    equal = (y.min(-1) == y.max(-1)).mean(0)  # (M,)
    return GroupMonteCarlo(groups=n, mean=g.mean(1), mean_se=g.std(1, ddof=1) / np.sqrt(n),
                           variance=g.var(1, ddof=1), no_signal=equal)


@dataclass(frozen=True)
class GroupTraining:
    """Training curves so far: J averaged over seeds after each step, per estimator."""

    steps: np.ndarray
    """(S + 1,) steps 0..S done so far."""
    J: np.ndarray
    """(E, S + 1) mean over seeds of J = (1/M) sum_m sigmoid(theta_m)."""
    J_se: np.ndarray
    """(E, S + 1) its standard error over seeds."""
    p: np.ndarray
    """(E, M) each prompt's p_m at the last step, averaged over seeds."""


def train(settings: GroupBaselinesSettings, chunk: int = 25) -> Iterator[GroupTraining]:
    """Gradient ascent theta_m <- theta_m + lr g_m from theta_m = logit(p_m), `seeds` runs per estimator.

    Every estimator sees the same draws (common random numbers), so the curves differ only by
    the advantages. Yields the curves so far every `chunk` steps and at the end.
    """
    p0 = np.asarray(settings.p, dtype=float)
    E, S, M, K = len(ESTIMATORS), settings.seeds, len(p0), settings.K
    rng = np.random.default_rng(settings.seed)
    theta = np.broadcast_to(np.log(p0 / (1 - p0)), (E, S, M)).copy()  # (E, S, M)
    J = [sigmoid(theta).mean(-1)]  # each (E, S)
    for step in range(1, settings.steps + 1):
        u = rng.random((S, M, K))  # (S, M, K) one draw shared by the estimators
        y = (u < sigmoid(theta)[..., None]).astype(float)  # (E, S, M, K)
        for e, name in enumerate(ESTIMATORS):
            theta[e] += settings.lr * group_gradient(y[e], sigmoid(theta[e]), name)  # (S, M)
        J.append(sigmoid(theta).mean(-1))
        if step % chunk == 0 or step == settings.steps:
            curves = np.stack(J, axis=-1)  # (E, S, steps + 1)
            yield GroupTraining(steps=np.arange(step + 1), J=curves.mean(1),
                                J_se=curves.std(1, ddof=1) / np.sqrt(S) if S > 1 else np.zeros_like(curves[:, 0]),
                                p=sigmoid(theta).mean(1))
