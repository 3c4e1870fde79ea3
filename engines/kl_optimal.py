"""The best policy under reward minus beta times KL, exactly: seed 000 section 6.12, "What beta means".

Maximising E_{y ~ pi}[r(y)] - beta KL(pi || pi_ref) over all distributions pi on a finite
set of replies has the closed form (Ziegler et al. 2019, page 6)

    pi*(y) = pi_ref(y) exp(r(y) / beta) / Z,      Z = sum_y pi_ref(y) exp(r(y) / beta)

so a reply's probability is its reference probability boosted by exp(r / beta), and a
reply the reference never writes (pi_ref = 0) keeps probability 0 for every finite beta.
Everything here is computed in log space, so a beta of 0.001 or a reward of 50 neither
overflows nor divides by zero.

The small reply space `ReplySpace` stands in for a language model's replies: every
sequence of `length` words from a short vocabulary, each word drawn independently from a
reference distribution, scored by the mean valence of its words (a toy sentiment reward).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from engines.settings import finite, require

WORDS = ("superb", "good", "fine", "plot", "dull", "awful")
VALENCE = (1.0, 0.5, 0.2, 0.0, -0.5, -1.0)
REFERENCE = (0.04, 0.16, 0.2, 0.3, 0.2, 0.1)


@dataclass(frozen=True)
class ReplySpaceSettings:
    """A tiny reply space: every `length`-word reply over a short vocabulary."""

    words: tuple[str, ...] = WORDS
    """The vocabulary; 2 to 12 distinct words."""
    valence: tuple[float, ...] = VALENCE
    """Reward of each word; a reply's reward r(y) is the mean over its words (finite, reward units)."""
    reference: tuple[float, ...] = REFERENCE
    """Reference probability of each word, drawn independently per position; >= 0, summing to 1."""
    length: int = 3
    """Words per reply; 1 to 6 (at most 12^6 replies are enumerated)."""

    def __post_init__(self):
        K = len(self.words)
        require(2 <= K <= 12, f"the vocabulary needs 2 to 12 words, got {K}.")
        require(len(set(self.words)) == K, "the words of the vocabulary must be distinct.")
        require(len(self.valence) == K, f"give one valence per word ({K}), got {len(self.valence)}.")
        require(len(self.reference) == K, f"give one reference probability per word ({K}), got {len(self.reference)}.")
        require(finite(*self.valence), "every valence must be a finite number.")
        require(finite(*self.reference) and min(self.reference) >= 0,
                "every reference probability must be a finite number >= 0.")
        require(abs(sum(self.reference) - 1) < 1e-6, f"the reference probabilities must sum to 1, got {sum(self.reference):.6g}.")
        require(1 <= self.length <= 6, f"length must be 1 to 6 words, got {self.length}.")


def without_word(settings: ReplySpaceSettings, word: str) -> ReplySpaceSettings:
    """`settings` with `word` at reference probability 0 and the other words' renormalised to sum to 1.

    A reference that never writes the word: every reply containing it has pi_ref = 0, so pi* gives
    it 0 too, for every beta (section 6.12), however high its reward.
    """
    require(word in settings.words, f"{word!r} is not a word of the vocabulary {settings.words}.")
    kept = [0.0 if w == word else p for w, p in zip(settings.words, settings.reference)]
    require(sum(kept) > 0, f"without {word!r} the reference writes no word at all.")
    return replace(settings, reference=tuple(p / sum(kept) for p in kept))


@dataclass(frozen=True)
class ReplySpace:
    """Every reply, its reference log-probability and its reward."""

    replies: tuple[str, ...]
    """The replies as text, in enumeration order."""
    ref_logp: np.ndarray
    """log pi_ref(y), (Y,); -inf where the reference never writes y."""
    r: np.ndarray
    """Reward r(y), (Y,)."""


def enumerate_replies(settings: ReplySpaceSettings) -> ReplySpace:
    """All K^L replies with log pi_ref(y) = sum_t log p(w_t) and r(y) = mean_t valence(w_t)."""
    K, L = len(settings.words), settings.length
    index = np.array(list(itertools.product(range(K), repeat=L)), dtype=int)  # (Y, L)
    with np.errstate(divide="ignore"):
        log_word = np.log(np.asarray(settings.reference, dtype=float))  # -inf for a zero probability
    ref_logp = log_word[index].sum(-1)  # (Y,)
    r = np.asarray(settings.valence, dtype=float)[index].mean(-1)  # (Y,)
    replies = tuple(" ".join(settings.words[k] for k in row) for row in index)
    return ReplySpace(replies=replies, ref_logp=ref_logp, r=r)


def _logsumexp(x, axis=-1):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top).squeeze(axis)


def optimal_logp(ref_logp, r, beta):
    """log pi*(y) = log pi_ref(y) + r(y)/beta - log Z, for one beta or an array of betas.

    `ref_logp` and `r` are (Y,); `beta` a scalar or (B,) of positive numbers; returns
    (Y,) or (B, Y). Zero reference probability stays zero: -inf + finite = -inf.
    """
    beta = np.asarray(beta, dtype=float)
    logits = ref_logp + r / beta[..., None]  # (B, Y) or (Y,)
    return logits - _logsumexp(logits)[..., None]


@dataclass(frozen=True)
class OptimalPolicy:
    """pi* and its summary numbers, one entry per beta."""

    beta: np.ndarray
    """The KL coefficients, (B,)."""
    logp: np.ndarray
    """log pi*(y), (B, Y)."""
    reward: np.ndarray
    """E_{pi*}[r], (B,)."""
    kl: np.ndarray
    """KL(pi* || pi_ref) = sum_y pi* (log pi* - log pi_ref), in nats, (B,)."""
    entropy: np.ndarray
    """H(pi*) = -sum_y pi* log pi*, in nats, (B,)."""
    objective: np.ndarray
    """E[r] - beta KL, the regularised objective pi* maximises, (B,)."""


def _expectations(logp, ref_logp, r):
    p = np.exp(logp)  # (B, Y); exactly 0 where logp = -inf
    support = p > 0
    safe = np.where(support, logp, 0.0)
    safe_ref = np.where(support, ref_logp, 0.0)
    reward = (p * r).sum(-1)
    kl = (p * (safe - safe_ref)).sum(-1)
    entropy = -(p * safe).sum(-1)
    return reward, kl, entropy


def optimal_policy(space: ReplySpace, betas) -> OptimalPolicy:
    """Seed 000 section 6.12: pi* for each beta, with E[r], KL(pi* || pi_ref) and H(pi*).

    Read along the betas it is the reward-KL frontier: no policy reaches a higher
    expected reward at the same KL (Ziegler et al. use it to draw the best reachable reward).
    """
    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    require(finite(*beta.tolist()) and bool(np.all(beta > 0)), "every beta must be a finite number > 0.")
    logp = np.atleast_2d(optimal_logp(space.ref_logp, space.r, beta))  # (B, Y)
    reward, kl, entropy = _expectations(logp, space.ref_logp, space.r)
    return OptimalPolicy(beta=beta, logp=logp, reward=reward, kl=kl, entropy=entropy, objective=reward - beta * kl)


def boost_factor(reward_gap, beta):
    """exp(gap / beta): how much more pi* prefers the better of two equally likely replies.

    Seed 000's worked example: a log-odds gap of 1 gives e^5 = 148 at beta = 0.2 and
    e^20 = 4.9e8 at beta = 0.05. Returned as a float (inf once it exceeds the float range).
    """
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(reward_gap, dtype=float) / np.asarray(beta, dtype=float))


def ascend_objective(space: ReplySpace, beta: float, steps: int = 400, step_size: float = 0.2) -> np.ndarray:
    """Brute force: maximise F(pi) = E_pi[r] - beta KL(pi || pi_ref) by iterating its gradient.

    Mirror ascent on the simplex (exponentiated gradient), which needs nothing but the
    gradient of F with respect to pi,

        dF/dpi_y = r_y - beta (log pi_y - log pi_ref(y) + 1),
        log pi <- log pi + (step_size / beta) dF/dpi,   then renormalised,

    started at the reference. Replies the reference cannot write stay at probability 0
    (their KL term would be infinite). F is concave in pi, so the iteration climbs to
    the unique maximum; the tests check it lands on the closed form. Returns log pi, (Y,).
    """
    support = np.isfinite(space.ref_logp)
    ref = space.ref_logp[support]
    r = space.r[support]
    logp = ref - _logsumexp(ref)
    for _ in range(steps):
        dF = r - beta * (logp - ref + 1)  # gradient of F with respect to pi
        logp = logp + step_size / beta * dF
        logp = logp - _logsumexp(logp)
    out = np.full(space.ref_logp.shape, -np.inf)
    out[support] = logp
    return out


def objective(space: ReplySpace, logp, beta: float) -> float:
    """F(pi) = E_pi[r] - beta KL(pi || pi_ref) for any policy given as log-probabilities (Y,)."""
    reward, kl, _ = _expectations(np.atleast_2d(logp), space.ref_logp, space.r)
    return float(reward[0] - beta * kl[0])


@dataclass(frozen=True)
class FrontierSettings(ReplySpaceSettings):
    """The reward-KL frontier of a reply space, and the seed's two-reply exchange rate."""

    betas: tuple[float, ...] = (2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01)
    """KL coefficients beta to solve for; finite numbers > 0 (reward units per nat)."""
    gap: float = 1.0
    """Reward gap between two equally likely replies, for the boost exp(gap / beta); reward units."""

    def __post_init__(self):
        super().__post_init__()
        require(len(self.betas) > 0, "give at least one beta.")
        require(finite(*self.betas) and min(self.betas) > 0, f"every beta must be a finite number > 0, got {list(self.betas)}.")
        require(finite(self.gap), f"the reward gap must be a finite number, got {self.gap}.")


@dataclass(frozen=True)
class SampledFrontier:
    """The reward-KL frontier of a reference known only by m samples per prompt, one entry per beta."""

    beta: np.ndarray
    """The KL coefficients, (B,)."""
    reward: np.ndarray
    """Mean over prompts of E_{pi*}[R] = sum_i w_i R_i, (B,), reward units."""
    kl: np.ndarray
    """Mean over prompts of KL(pi* || pi_hat_ref) = sum_i w_i log(m w_i), (B,), nats; at most log m."""
    ceiling: float
    """log m: the largest KL any policy on m equally weighted samples can have, nats."""
    reference_reward: float
    """Mean reward of all the samples: the frontier's large-beta end (KL 0)."""
    best_reward: float
    """Mean over prompts of the best sample's reward: the small-beta end, best-of-m."""


def sampled_frontier(rewards, betas) -> SampledFrontier:
    """Seed 000 section 6.12's pi* with pi_ref replaced by the empirical distribution of its samples.

    `rewards` is (M, m): R(x, y_i) of m replies y_i ~ pi_ref(. | x) to each of M prompts.
    Each sample stands for weight 1/m of pi_ref, so the closed form (Ziegler et al. 2019)
    becomes a softmax over the samples of one prompt,

        w_i = exp(R_i / beta) / sum_j exp(R_j / beta),
        KL_x = sum_i w_i log(m w_i) <= log m,     E_x[R] = sum_i w_i R_i,

    and the frontier point at beta is the mean over prompts of (KL_x, E_x[R]): one beta for
    all prompts, so the point maximises the prompts' mean E[R] - beta KL. Identical replies
    may appear as separate samples: equal rewards get equal weights, so that changes nothing.
    One beta at a time keeps the memory at one (M, m) array.
    """
    R = np.asarray(rewards, dtype=float)
    require(R.ndim == 2 and R.shape[0] >= 1 and R.shape[1] >= 1, f"rewards must be an (M, m) array of M >= 1 prompts and m >= 1 samples, got shape {R.shape}.")
    require(bool(np.all(np.isfinite(R))), "every reward must be a finite number.")
    beta = np.atleast_1d(np.asarray(betas, dtype=float))
    require(finite(*beta.tolist()) and bool(np.all(beta > 0)), "every beta must be a finite number > 0.")
    m = R.shape[1]
    ref_logp = np.full(m, -np.log(m))  # (m,): each sample carries 1/m of pi_ref
    reward, kl = np.empty(len(beta)), np.empty(len(beta))
    for k, b in enumerate(beta):
        logp = optimal_logp(ref_logp, R, b)  # (M, m): log w_i, normalised per prompt
        r_x, kl_x, _ = _expectations(logp, ref_logp, R)  # (M,) each
        reward[k], kl[k] = r_x.mean(), max(kl_x.mean(), 0.0)  # rounding can leave -1e-17 at KL 0
    return SampledFrontier(beta=beta, reward=reward, kl=kl, ceiling=float(np.log(m)),
                           reference_reward=float(R.mean()), best_reward=float(R.max(1).mean()))


def frontier_reward_at(frontier: SampledFrontier | OptimalPolicy, kl) -> np.ndarray:
    """The frontier's E[R] at KL `kl` (nats), by linear interpolation; NaN beyond the frontier's largest KL.

    Along a frontier both E[R] and KL grow as beta falls, so the points sorted by KL are
    the curve; a KL below the smallest (0 up to rounding) reads the reference's reward.
    """
    order = np.argsort(frontier.kl, kind="stable")
    kl_sorted, reward_sorted = np.asarray(frontier.kl)[order], np.asarray(frontier.reward)[order]
    kl = np.asarray(kl, dtype=float)
    return np.where(kl <= kl_sorted[-1], np.interp(kl, kl_sorted, reward_sorted), np.nan)
