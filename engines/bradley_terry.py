"""Preferences from comparisons: seed 001 sections 7 and 8 (Bradley-Terry, the reward-model loss).

A rater compares two responses of gold quality g_a and g_b and prefers a with
probability sigma((g_a - g_b) / tau_label) (equation 12). Only differences of g are
identified, scale is tangled with tau_label, and even the true g predicts a held-out
label only with probability max(p, 1 - p) (equation 13). The reward model is trained
with the pairwise logistic loss -log sigma(r_w - r_l) (equation 14) and normalised on a
reference set before use (equation 15).

numpy only at import time; torch is imported inside `bt_loss`, so pages that need
only the probabilities stay light.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.settings import finite, require


def sigmoid(a):
    """sigma(a) = 1 / (1 + e^{-a}), evaluated through e^{-|a|} <= 1: no overflow, full precision in both tails."""
    a = np.asarray(a, dtype=float)
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def bt_prob(g_a, g_b, tau_label):
    """P(y_a > y_b | x) = sigma((g_a - g_b) / tau_label), seed 001 equation 12 (equation 11 at tau = 1).

    Broadcasts over its arguments; tau_label > 0.
    """
    tau_label = np.asarray(tau_label, dtype=float)
    require(bool(np.all(tau_label > 0)), "the label temperature tau_label must be positive.")
    return sigmoid((np.asarray(g_a, dtype=float) - np.asarray(g_b, dtype=float)) / tau_label)


def oracle_accuracy(g_a, g_b, tau_label):
    """Acc* = E_pairs[max(p, 1 - p)], p = sigma((g_a - g_b) / tau_label), seed 001 equation 13.

    The mean runs over the last axis (the pairs); max(p, 1 - p) = sigma(|g_a - g_b| / tau_label).
    """
    gap = np.abs(np.asarray(g_a, dtype=float) - np.asarray(g_b, dtype=float))
    return bt_prob(gap, 0.0, tau_label).mean(-1)


def accuracy_vs_tau(gaps, taus):
    """Acc* of a set of quality gaps for each label temperature: (len(taus),), seed 001 section 7.

    The ceiling falls from 1 (every gap nonzero, a consistent rater) toward 0.5 (a coin).
    """
    gaps = np.asarray(gaps, dtype=float)
    taus = np.asarray(taus, dtype=float)
    return oracle_accuracy(gaps[None, :], 0.0, taus[:, None])  # (taus, gaps) -> (taus,)


def sample_labels(g_a, g_b, tau_label, rng: np.random.Generator, size=None):
    """Draw rater labels from equation 12: True where y_a is preferred.

    `size` repeats the draw: the result has shape `size` + broadcast shape of the pairs.
    """
    p = bt_prob(g_a, g_b, tau_label)
    shape = p.shape if size is None else (*np.atleast_1d(size), *p.shape)
    return rng.random(shape) < p


def bt_loss(reward_w, reward_l):
    """L_RM = -mean log sigma(r_w - r_l), seed 001 equation 14, in torch (differentiable).

    `reward_w`, `reward_l` are (n,) tensors of r_phi(x, y_w) and r_phi(x, y_l);
    F.logsigmoid neither underflows nor returns log 0 for a large negative gap.
    """
    import torch.nn.functional as F

    return -F.logsigmoid(reward_w - reward_l).mean()


def bt_loss_np(reward_w, reward_l) -> float:
    """Equation 14 in numpy: -log sigma(d) = log(1 + e^{-d}) = logaddexp(0, -d), stable for any d."""
    d = np.asarray(reward_w, dtype=float) - np.asarray(reward_l, dtype=float)
    return float(np.logaddexp(0.0, -d).mean())


def bt_loss_gradient(reward_w, reward_l):
    """d(-log sigma(Delta))/d r_w = -sigma(-Delta) and d/d r_l = +sigma(-Delta), one pair at a time.

    Seed 001 section 8's worked example; the two sum to zero, so the common level never moves.
    """
    s = sigmoid(-(np.asarray(reward_w, dtype=float) - np.asarray(reward_l, dtype=float)))
    return -s, s


@dataclass(frozen=True)
class Normalizer:
    """r~ = (r - mu) / sigma, seed 001 equation 15, fitted on a reference set of responses."""

    mu: float
    """Mean of the raw reference scores."""
    sigma: float
    """Standard deviation (population, ddof = 0) of the raw reference scores; positive."""

    def __call__(self, raw_scores):
        return (np.asarray(raw_scores, dtype=float) - self.mu) / self.sigma


def fit_normalizer(raw_scores) -> Normalizer:
    """Fit equation 15's mu and sigma (ddof = 0) on raw reward-model scores of a reference set."""
    raw = np.asarray(raw_scores, dtype=float).ravel()
    require(raw.size >= 2 and bool(np.all(np.isfinite(raw))), "give at least two finite reference scores.")
    sigma = float(raw.std())
    require(sigma > 0, "the reference scores are all equal, so their scale cannot be fixed.")
    return Normalizer(mu=float(raw.mean()), sigma=sigma)


@dataclass(frozen=True)
class BradleyTerrySettings:
    """The check-yourself rater of section 7 and the worked examples of section 8."""

    gaps: tuple[float, ...] = (0.0, 1.0, 2.0)
    """Quality gaps u_a - u_b of the held-out pairs; finite numbers, gold-score units."""
    tau: float = 0.5
    """Label temperature tau_label of the rater; positive."""
    samples: int = 10000
    """Simulated labels per pair, to compare label frequencies with equation 12; at least 1."""
    seed: int = 0
    """Seed of the simulated labels and the reference set; a non-negative integer."""

    def __post_init__(self):
        require(len(self.gaps) > 0, "give at least one quality gap.")
        require(finite(*self.gaps), f"every gap must be a finite number, got {list(self.gaps)}.")
        require(finite(self.tau) and self.tau > 0, f"tau must be a positive finite number, got {self.tau}.")
        require(self.samples >= 1, f"samples must be at least 1, got {self.samples}.")
        require(self.seed >= 0, f"seed must be a non-negative integer, got {self.seed}.")


@dataclass(frozen=True)
class LabelledSetSettings:
    """A rater of section 7 and the set of pairs it labels: the preferences page's ceiling and sampled accuracy."""

    tau: float = 0.5
    """Label temperature tau_label of the rater (equation 12); positive. 0.5 is section 7's check-yourself rater."""
    gaps: str = "seed"
    """Where the pairs' quality gaps u_a - u_b come from: "seed" (0, 1 and 2, section 7's check-yourself) or "normal" (|N(0, s)|)."""
    s: float = 1.0
    """Spread s of the |N(0, s)| gaps, gold-score units; positive (the seed's gaps do not use it)."""
    n: int = 300
    """Pairs in the sampled labelled set; at least 1."""
    seed: int = 0
    """Seed of the sampled pairs' gaps and labels; a non-negative integer."""

    def __post_init__(self):
        require(finite(self.tau) and self.tau > 0, f"tau must be a positive finite number, got {self.tau}.")
        require(self.gaps in ("seed", "normal"), f'gaps must be "seed" or "normal", got {self.gaps!r}.')
        require(finite(self.s) and self.s > 0, f"s must be a positive finite number, got {self.s}.")
        require(self.n >= 1, f"n must be at least 1, got {self.n}.")
        require(self.seed >= 0, f"seed must be a non-negative integer, got {self.seed}.")
