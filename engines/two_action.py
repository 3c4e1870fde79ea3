"""Two actions, both rewarded: seed 001 section 4 ("Baselines and Variance") and its demo.

A policy picks action 1 with probability p = sigma(theta) and action 2 otherwise; the
rewards are R1 and R2 (11 and 10 in the seed). The one-sample REINFORCE estimate of
dJ/dtheta with baseline b takes one of two values,

    g1 = (R1 - b)(1 - p)   if action 1 is sampled (score d log p / d theta = 1 - p)
    g2 = (R2 - b)(-p)      if action 2 is sampled (score d log(1-p) / d theta = -p)

whose mean p g1 + (1-p) g2 = p(1-p)(R1 - R2) is the true gradient whatever b is
(equation 8), and whose standard deviation vanishes at the crossing point
b* = (1-p) R1 + p R2, the variance-minimising baseline of the optional box.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.settings import finite, require

R1, R2 = 11.0, 10.0
"""The seed's rewards of action 1 and action 2."""


def _check_p(p: float) -> None:
    require(finite(p) and 0.0 < p < 1.0, f"p must lie strictly between 0 and 1, got {p}.")


@dataclass(frozen=True)
class TwoActionSettings:
    """The seed's two-action example: its table of the estimates at a few baselines."""

    p: float = 0.5
    """Probability of action 1, p = sigma(theta); strictly between 0 and 1."""
    b: tuple[float, ...] = (0.0, 10.5)
    """Baselines b to evaluate the estimate at; any finite numbers, reward units."""
    R1: float = R1
    """Reward of action 1; any finite number."""
    R2: float = R2
    """Reward of action 2; any finite number."""

    def __post_init__(self):
        _check_p(self.p)
        require(len(self.b) > 0, "give at least one baseline b.")
        require(finite(*self.b), f"every baseline b must be a finite number, got {list(self.b)}.")
        require(finite(self.R1, self.R2), f"the rewards must be finite numbers, got {self.R1} and {self.R2}.")


@dataclass(frozen=True)
class TwoActionDemoSettings:
    """The demo of section 4 ("a baseline moves the noise, not the mean"): one policy, one baseline, as its sliders start."""

    p: float = 0.5
    """Probability of action 1, p = sigma(theta); strictly between 0 and 1."""
    b: float = 0.0
    """Baseline b subtracted from the reward of either action; a finite number, reward units."""

    def __post_init__(self):
        _check_p(self.p)
        require(finite(self.b), f"the baseline b must be a finite number, got {self.b}.")


@dataclass(frozen=True)
class TwoActionEstimates:
    """The two possible one-sample estimates and their moments, one entry per (p, b)."""

    g1: np.ndarray
    """Estimate if action 1 is sampled, (R1 - b)(1 - p)."""
    g2: np.ndarray
    """Estimate if action 2 is sampled, (R2 - b)(-p)."""
    mean: np.ndarray
    """Mean of the estimate, p g1 + (1 - p) g2 = p(1 - p)(R1 - R2): the true gradient."""
    sd: np.ndarray
    """Standard deviation of the estimate, sqrt(p(1-p)) |g1 - g2|."""
    cross: np.ndarray
    """Baseline where the two lines cross, (1 - p) R1 + p R2: zero variance there."""


def two_action_estimates(p, b, R1: float = R1, R2: float = R2) -> TwoActionEstimates:
    """Seed 001 section 4's table and demo cells, vectorised: p and b broadcast together."""
    p = np.asarray(p, dtype=float)
    b = np.asarray(b, dtype=float)
    g1 = (R1 - b) * (1 - p)  # (R - b) times the score function
    g2 = (R2 - b) * (-p)
    mean = p * g1 + (1 - p) * g2
    sd = np.sqrt(p * (g1 - mean) ** 2 + (1 - p) * (g2 - mean) ** 2)
    cross = (1 - p) * R1 + p * R2 + 0.0 * b  # broadcast to the shape of the others
    return TwoActionEstimates(g1=g1, g2=g2, mean=mean, sd=sd, cross=cross)


def variance_minimising_baseline(p, R1: float = R1, R2: float = R2):
    """b* = E[R g^2] / E[g^2] with g the score (seed 001's optional box) = (1-p) R1 + p R2."""
    p = np.asarray(p, dtype=float)
    score_sq_1, score_sq_2 = (1 - p) ** 2, p**2
    return (p * score_sq_1 * R1 + (1 - p) * score_sq_2 * R2) / (p * score_sq_1 + (1 - p) * score_sq_2)
