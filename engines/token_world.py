"""The token world: exact values, TD errors and GAE, seed 000 sections 6.8 to 6.10.

A reply is T tokens, each A or B. The state is s_t = (t, k): the position t and the
number k of A's written so far. The only reward comes after the last token,

    r_{T-1} = 1[k_T >= threshold] (+ shift),   r_t = 0 before,

so V, Q and the advantage A = Q - V are known exactly, and every advantage estimator
(TD error, GAE(gamma, lam), return minus baseline) can be scored against the truth.
Tokens are stored as integers, 1 = A and 0 = B, so "one more A" is k + a.

The experiment here is the bias^2 / variance split of GAE for many lambdas and critics
(Monte Carlo over sampled episodes, or exactly over all 2^T of them); training a
tabular policy in this world lives in engines/token_world_training.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from engines.policy_gradient import gae, td_errors
from engines.settings import finite, require

MAX_EXACT_T = 16
"""Largest T whose 2^T episodes the exact decomposition enumerates (65,536 episodes)."""

DEFAULT_T = 6
DEFAULT_THRESHOLD = 4
CHAPTER_REPLY = "ABABAA"
"""The episode printed in seed 000 section 6.9 (T = 6)."""


# ----------------------------------------------------------------------------- settings


def check_world(T, threshold) -> None:
    """Refuse a world without tokens or a threshold outside 0..T; every token-world settings class calls it."""
    require(isinstance(T, int) and T >= 1, f"T must be a whole number of tokens, at least 1, got {T}.")
    require(
        isinstance(threshold, int) and 0 <= threshold <= T,
        f"threshold must be a whole number of A's between 0 and T = {T}, got {threshold}.",
    )


def check_lambdas(lambdas, name: str) -> None:
    """Refuse an empty list of GAE lambdas, or one outside [0, 1]."""
    require(len(lambdas) > 0, f"give at least one value in {name}.")
    require(
        finite(*lambdas) and all(0.0 <= lam <= 1.0 for lam in lambdas),
        f"every lambda in {name} must lie in [0, 1], got {list(lambdas)}.",
    )


@dataclass(frozen=True)
class TokenWorldSettings:
    """The token world of seed 000 sections 6.8 to 6.10 with a fixed policy."""

    T: int = DEFAULT_T
    """Tokens per reply; 1 to 16 (the exact decomposition enumerates all 2^T replies)."""
    threshold: int = DEFAULT_THRESHOLD
    """Number of A's needed for reward 1; 0 to T."""
    p_a: float = 0.6
    """Probability that the fixed policy writes A at every step; in [0, 1]."""
    gamma: float = 1.0
    """Discount factor gamma; in [0, 1]."""
    lambdas: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.0)
    """GAE lambdas of the bias^2 / variance table; each in [0, 1]."""
    critic_noises: tuple[float, ...] = (0.05, 0.15)
    """Standard deviations of the noise added to the exact V for the rough critics; each >= 0."""
    episodes: int = 100_000
    """Episodes sampled for the Monte Carlo decomposition; at least 2."""
    seed: int = 0
    """Seed of the critics' noise and of the sampled episodes; a whole number >= 0."""
    tokens: str = "ABABAA"
    """The one-episode table's reply, T letters A or B; empty to sample one from the policy."""
    lam: float = 0.95
    """GAE lambda of the one-episode table; in [0, 1]."""
    episode_noise: float = 0.15
    """Standard deviation of the rough critic's noise in the one-episode table; >= 0."""

    def __post_init__(self):
        check_world(self.T, self.threshold)
        require(finite(self.gamma) and 0.0 <= self.gamma <= 1.0, f"gamma must lie in [0, 1], got {self.gamma}.")
        require(
            self.T <= MAX_EXACT_T,
            f"T = {self.T} is too long to enumerate all 2^T replies exactly; use T <= {MAX_EXACT_T}.",
        )
        require(finite(self.p_a) and 0.0 <= self.p_a <= 1.0, f"p_a must be a probability in [0, 1], got {self.p_a}.")
        check_lambdas(self.lambdas, "lambdas")
        require(
            finite(*self.critic_noises) and all(s >= 0 for s in self.critic_noises),
            f"every critic noise must be a standard deviation >= 0, got {list(self.critic_noises)}.",
        )
        require(isinstance(self.episodes, int) and self.episodes >= 2, f"episodes must be at least 2, got {self.episodes}.")
        require(isinstance(self.seed, int) and self.seed >= 0, f"seed must be a whole number >= 0, got {self.seed}.")
        require(
            self.tokens == "" or (len(self.tokens) == self.T and set(self.tokens) <= {"A", "B"}),
            f"tokens must be T = {self.T} letters A or B, got '{self.tokens}'; give T letters, or '' to sample the episode.",
        )
        require(finite(self.lam) and 0.0 <= self.lam <= 1.0, f"lam must lie in [0, 1], got {self.lam}.")
        require(
            finite(self.episode_noise) and self.episode_noise >= 0,
            f"episode_noise must be a standard deviation >= 0, got {self.episode_noise}.",
        )


# ----------------------------------------------------------------------------- exact values


def _success_padded(p_a, T: int, threshold: int) -> np.ndarray:
    """P[success | t, k] on a (..., T+1, T+2) table; column T+1 (one A too many) is certain success."""
    p = np.asarray(p_a, dtype=float)
    if p.ndim == 0:
        p = np.full((T, T + 1), float(p))
    S = np.ones(p.shape[:-2] + (T + 1, T + 2))
    S[..., T, : T + 1] = np.arange(T + 1) >= threshold
    for t in reversed(range(T)):  # one step of the binomial: A with probability p, B otherwise
        S[..., t, : T + 1] = p[..., t, :] * S[..., t + 1, 1:] + (1 - p[..., t, :]) * S[..., t + 1, : T + 1]
    return S


def success_probability(p_a, T: int, threshold: int) -> np.ndarray:
    """Probability of success from every state, seed 000 section 6.8.

        P[success | t, k] = P[k + Binomial(T - t, p_a) >= threshold]

    for a constant p_a, computed by the backward recursion
    S(t, k) = p_a(t, k) S(t+1, k+1) + (1 - p_a(t, k)) S(t+1, k), S(T, k) = 1[k >= threshold],
    which also serves a tabular policy: `p_a` is a number or an array (..., T, T+1) of
    P(A | t, k). Returns the full (..., T+1, T+1) table (k > t is unreachable but defined).
    """
    return _success_padded(p_a, T, threshold)[..., : T + 1]


@dataclass(frozen=True)
class TokenValues:
    """Exact V, Q and A of the fixed policy, seed 000 section 6.8; t = 0..T-1, k = 0..T."""

    success: np.ndarray
    """(T+1, T+1) P[k + Binomial(T - t, p_a) >= threshold]."""
    V: np.ndarray
    """(T, T+1) V(t, k) = E[G_t | s_t] = gamma^(T-1-t) P[success | t, k]."""
    Q: np.ndarray
    """(T, T+1, 2) Q(s_t, a) = gamma^(T-1-t) P[success | t+1, k+a]; a = 1 is A, a = 0 is B."""
    A: np.ndarray
    """(T, T+1, 2) advantage A(s_t, a) = Q(s_t, a) - V(s_t)."""


def token_values(T: int, threshold: int, p_a: float, gamma: float = 1.0) -> TokenValues:
    """V, Q and the advantage of seed 000 section 6.8 for a policy writing A with probability p_a.

        V(s_t) = E[G_t | s_t],  Q(s_t, a_t) = E[G_t | s_t, a_t],  A(s_t, a_t) = Q(s_t, a_t) - V(s_t)

    The only reward is the last one, so G_t = gamma^(T-1-t) 1[success] and both V and Q
    are a success probability times that discount.
    """
    S = _success_padded(p_a, T, threshold)  # (T+1, T+2)
    discount = gamma ** np.arange(T - 1, -1, -1.0)[:, None]  # (T, 1) gamma^(T-1-t)
    V = discount * S[:T, : T + 1]
    Q = discount[..., None] * np.stack([S[1:, : T + 1], S[1:, 1:]], -1)  # (T, T+1, 2): B then A
    return TokenValues(success=S[:, : T + 1], V=V, Q=Q, A=Q - V[..., None])


# ----------------------------------------------------------------------------- episodes


def sample_tokens(rng: np.random.Generator, N: int, T: int, p_a: float) -> np.ndarray:
    """N replies of T tokens from the fixed policy: (N, T) integers, 1 = A with probability p_a."""
    return (rng.random((N, T)) < p_a).astype(np.int64)


def reply_tokens(reply: str, episode_seed: int, T: int, p_a: float) -> str:
    """The episode's reply: the chapter's ABABAA (when T = 6), else T tokens sampled from the policy."""
    if reply == "chapter" and T == len(CHAPTER_REPLY):
        return CHAPTER_REPLY
    drawn = sample_tokens(np.random.default_rng(episode_seed), 1, T, p_a)[0]
    return "".join("A" if a else "B" for a in drawn)


def all_episodes(T: int, p_a: float) -> tuple[np.ndarray, np.ndarray]:
    """Every one of the 2^T replies, (2^T, T), and its probability p_a^#A (1 - p_a)^#B, (2^T,)."""
    tokens = (np.arange(2**T)[:, None] >> np.arange(T - 1, -1, -1)) & 1  # (2^T, T) binary digits
    n_a = tokens.sum(-1)
    return tokens, p_a**n_a * (1 - p_a) ** (T - n_a)


def visited_counts(tokens: np.ndarray) -> np.ndarray:
    """k_t, the number of A's before position t, for every token: (..., T) from (..., T)."""
    return np.cumsum(tokens, -1) - tokens


def episode_rewards(tokens: np.ndarray, threshold: int, shift: float = 0.0) -> np.ndarray:
    """r_t of seed 000 section 6.8: 0 before the last token, 1[#A >= threshold] + shift after it."""
    r = np.zeros(tokens.shape)
    r[..., -1] = (tokens.sum(-1) >= threshold) + shift
    return r


def visited_values(table: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """The critic's V(s_t) at every visited state s_t = (t, k_t).

    `table` is (..., T, T+1) (one critic, or one per critic / seed), `tokens` is (..., N, T);
    their leading axes broadcast. Returns (..., N, T).
    """
    T, width = table.shape[-2:]
    flat = table.reshape(table.shape[:-2] + (T * width,))  # (..., states)
    state = np.arange(T) * width + visited_counts(tokens)  # (..., N, T) flat state index
    lead = np.broadcast_shapes(flat.shape[:-1], state.shape[:-2])
    flat = np.broadcast_to(flat, lead + flat.shape[-1:])
    state = np.broadcast_to(state, lead + state.shape[-2:])
    return np.take_along_axis(flat, state.reshape(lead + (-1,)), -1).reshape(state.shape)


def noisy_critics(V: np.ndarray, critic_noises, seed: int) -> np.ndarray:
    """Critics V + s z for each noise sd s, one (T, T+1) table each: (len(critic_noises), T, T+1).

    z ~ N(0, 1) is drawn once per state from `np.random.default_rng(seed)` and shared by
    every s, so the critics differ only in how far they are pushed along the same errors.
    """
    z = np.random.default_rng(seed).standard_normal(V.shape)  # (T, T+1)
    return V + np.asarray(critic_noises, dtype=float)[:, None, None] * z


# ----------------------------------------------------------------------------- one episode


@dataclass(frozen=True)
class EpisodeTable:
    """One episode with a rough critic, seed 000 section 6.9's table; every field is (T,)."""

    tokens: np.ndarray
    """a_t, 1 = A, 0 = B."""
    k: np.ndarray
    """Number of A's before position t; the state is (t, k)."""
    r: np.ndarray
    """Reward r_t."""
    V: np.ndarray
    """The rough critic's V(s_t)."""
    V_next: np.ndarray
    """The rough critic's V(s_{t+1}); 0 after the last token."""
    delta: np.ndarray
    """TD error r_t + gamma V(s_{t+1}) - V(s_t)."""
    gae: np.ndarray
    """GAE(gamma, lam) advantage."""
    exact_A: np.ndarray
    """Exact advantage A(s_t, a_t)."""
    monte_carlo: np.ndarray
    """GAE at lambda = 1: G_t - V(s_t)."""


def one_episode(settings: TokenWorldSettings) -> EpisodeTable:
    """Seed 000 section 6.9's one-episode table: the reply settings.tokens (or one sampled from
    the policy when it is empty), a critic V + episode_noise z with z from `noisy_critics`, and
    delta_t, GAE(gamma, lam) and the exact advantage at every position."""
    T = settings.T
    if settings.tokens:
        tokens = np.array([c == "A" for c in settings.tokens], dtype=np.int64)
    else:
        tokens = sample_tokens(np.random.default_rng([settings.seed, 2]), 1, T, settings.p_a)[0]
    values = token_values(T, settings.threshold, settings.p_a, settings.gamma)
    critic = noisy_critics(values.V, [settings.episode_noise], settings.seed)[0]  # (T, T+1)
    r = episode_rewards(tokens, settings.threshold)
    V = visited_values(critic, tokens)
    k = visited_counts(tokens)
    return EpisodeTable(
        tokens=tokens,
        k=k,
        r=r,
        V=V,
        V_next=np.append(V[1:], 0.0),
        delta=td_errors(r, V, settings.gamma),
        gae=gae(r, V, settings.gamma, settings.lam),
        exact_A=values.A[np.arange(T), k, tokens],
        monte_carlo=gae(r, V, settings.gamma, 1.0),
    )


# ----------------------------------------------------------------------------- bias^2 / variance


@dataclass(frozen=True)
class GaeDecomposition:
    """The error of GAE against the exact advantage, one entry per (lambda, critic)."""

    lambdas: np.ndarray
    """(L,) the GAE lambdas."""
    critic_noises: np.ndarray
    """(C,) noise sd of each critic; 0 is the exact V."""
    bias2: np.ndarray
    """(L, C) sum_(s,a) w(s,a) (E[A_hat | s, a] - A(s, a))^2."""
    variance: np.ndarray
    """(L, C) sum_(s,a) w(s,a) E[(A_hat - E[A_hat | s, a])^2 | s, a]."""
    total: np.ndarray
    """(L, C) bias2 + variance = E[(A_hat - A(s, a))^2] over visits."""
    method: str
    """"exact" (all 2^T episodes, weighted by probability) or "mc" (sampled episodes)."""


def _critic_list(critic_noises) -> np.ndarray:
    """The exact V (noise 0) followed by the noisy critics."""
    return np.array([0.0] + [float(s) for s in critic_noises if s != 0])


def gae_decomposition(settings: TokenWorldSettings, tokens: np.ndarray, weights=None, method: str = "mc") -> GaeDecomposition:
    """Seed 000 section 6.10's split of GAE's squared error against the exact advantage:

        error = (E[A_hat | s, a] - A(s, a))^2 + E[(A_hat - E[A_hat | s, a])^2]
              =            bias^2             +           variance

    both averaged over visited (s, a) with weight w(s, a) = how often they are visited.
    `tokens` (N, T) are the episodes and `weights` (N,) their weights (1 each for sampled
    episodes, the probability of each for an enumeration). The critics are the exact V and
    V + s z for each s in settings.critic_noises (`noisy_critics`); GAE runs for every lambda
    and critic at once, and visits are grouped by (t, k, a) with np.bincount.
    """
    T, threshold, gamma = settings.T, settings.threshold, settings.gamma
    weights = np.ones(len(tokens)) if weights is None else np.asarray(weights, dtype=float)
    values = token_values(T, threshold, settings.p_a, gamma)
    noises = _critic_list(settings.critic_noises)
    critics = noisy_critics(values.V, noises, settings.seed)  # (C, T, T+1)
    r = episode_rewards(tokens, threshold)  # (N, T)
    lam = np.asarray(settings.lambdas, dtype=float)
    adv = gae(r, visited_values(critics, tokens), gamma, lam[:, None, None])  # (L, C, N, T)

    k = visited_counts(tokens)  # (N, T)
    group = ((np.arange(T) * (T + 1) + k) * 2 + tokens).T.ravel()  # (T*N,) index of (t, k, a), time-major
    n_groups = T * (T + 1) * 2
    w = np.broadcast_to(weights, tokens.T.shape).ravel()  # (T*N,) visit weight
    w_group = np.bincount(group, w, n_groups)  # (G,) how often each (s, a) is visited
    visited = w_group > 0
    exact = values.A.ravel()  # (G,) in the same (t, k, a) order
    time_major = np.moveaxis(adv, -1, 0)  # (T, L, C, N), gae's own memory order: no copy

    bias2 = np.empty(adv.shape[:2])
    variance = np.empty(adv.shape[:2])
    for i in range(len(lam)):
        for j in range(len(noises)):
            x = time_major[:, i, j, :].ravel()  # (T*N,) every visit's A_hat
            mean = np.divide(np.bincount(group, w * x, n_groups), w_group, out=np.zeros(n_groups), where=visited)
            bias2[i, j] = (w_group * (mean - exact) ** 2).sum() / w_group.sum()
            variance[i, j] = (w * (x - mean[group]) ** 2).sum() / w_group.sum()
    return GaeDecomposition(lam, noises, bias2, variance, bias2 + variance, method)


def gae_decomposition_mc(settings: TokenWorldSettings) -> GaeDecomposition:
    """`gae_decomposition` by Monte Carlo over settings.episodes sampled replies, weight 1 each;
    E[A_hat | s, a] is then the average over the visits to (s, a)."""
    rng = np.random.default_rng([settings.seed, 1])  # the episodes' stream, apart from the critics' noise
    tokens = sample_tokens(rng, settings.episodes, settings.T, settings.p_a)
    return gae_decomposition(settings, tokens, None, "mc")


def gae_decomposition_exact(settings: TokenWorldSettings) -> GaeDecomposition:
    """`gae_decomposition` exactly: every one of the 2^T replies, weighted by its probability,
    so nothing is random but the critics' noise."""
    require(settings.T <= MAX_EXACT_T, f"T = {settings.T} is too long to enumerate all 2^T replies; use T <= {MAX_EXACT_T}.")
    tokens, prob = all_episodes(settings.T, settings.p_a)
    return gae_decomposition(settings, tokens, prob, "exact")


def mc_steps(settings: TokenWorldSettings):
    """The Monte Carlo check as a stream: a full decomposition on 1/8, 1/4, 1/2 and all of the
    episodes (each its own estimate), so a first answer arrives quickly and the last is the full one."""
    sizes = sorted({max(2, settings.episodes // d) for d in (8, 4, 2, 1)})
    for n in sizes:
        yield n, settings.episodes, gae_decomposition_mc(dataclasses.replace(settings, episodes=n))
