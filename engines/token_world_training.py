"""Training a tabular policy in the token world, seed 000 section 6.10 ("Training with a critic").

Every run keeps one logit theta(t, k) per state (t, k) of the token world
(engines/token_world.py) and learns from E sampled replies per update, weighting each
token's score by one of the seed's advantage estimators:

    G_t (REINFORCE, no baseline),   G_t - b_loo (leave-one-out),   GAE(1, lam) with a tabular critic V(t, k).

All methods and seeds run side by side as arrays; `train_token_world_steps` yields a
snapshot after every update so a page can stream it, and `train_token_world` runs it to
the end and summarises it in the seed's columns. The success probability of every
policy is exact (the token world's backward recursion), not sampled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.policy_gradient import gae, loo_baseline, returns_to_go, softmax
from engines.settings import finite, require
from engines.token_world import (
    DEFAULT_T,
    DEFAULT_THRESHOLD,
    MAX_EXACT_T,
    check_lambdas,
    check_world,
    episode_rewards,
    success_probability,
    visited_counts,
    visited_values,
)

# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class TokenWorldTrainingSettings:
    """Training a tabular policy in the token world, seed 000 section 6.10 ("Training with a critic")."""

    T: int = DEFAULT_T
    """Tokens per reply; 1 to 16."""
    threshold: int = DEFAULT_THRESHOLD
    """Number of A's needed for success; 0 to T."""
    seeds: int = 100
    """Independent training runs, simulated side by side; at least 1."""
    steps: int = 150
    """Policy updates per run; at least 1."""
    episodes: int = 16
    """Episodes sampled per update; at least 2 (the leave-one-out baseline needs two)."""
    lr: float = 0.5
    """Policy learning rate (gradient ascent on each state's logit); > 0."""
    critic_lr: float = 0.9
    """Critic learning rate (step towards the lambda-returns, per visit, averaged over the batch); > 0."""
    lambdas: tuple[float, ...] = (0.0, 0.5, 0.95, 1.0)
    """GAE lambdas of the actor-critic rows; each in [0, 1]."""
    shift: float = 0.0
    """Constant added to every episode's reward (0/1 becomes shift / 1 + shift); any finite number."""
    seed: int = 0
    """Seed of the sampled episodes; a whole number >= 0."""
    report_at: tuple[int, ...] = (10, 25, 50, 150)
    """Updates after which the success probability is reported; each 1 to steps."""
    spread_at: int = 25
    """Update at which the spread over seeds is reported; 1 to steps."""
    target: float = 0.9
    """Success probability whose first crossing is counted ("updates to reach"); in (0, 1]."""

    def __post_init__(self):
        check_world(self.T, self.threshold)
        require(self.T <= MAX_EXACT_T, f"T must be at most {MAX_EXACT_T} tokens, got {self.T}.")
        require(isinstance(self.seeds, int) and self.seeds >= 1, f"seeds must be at least 1, got {self.seeds}.")
        require(isinstance(self.steps, int) and self.steps >= 1, f"steps must be at least 1, got {self.steps}.")
        require(isinstance(self.episodes, int) and self.episodes >= 2, f"episodes must be at least 2, got {self.episodes}.")
        require(finite(self.lr) and self.lr > 0, f"lr must be a positive number, got {self.lr}.")
        require(finite(self.critic_lr) and self.critic_lr > 0, f"critic_lr must be a positive number, got {self.critic_lr}.")
        check_lambdas(self.lambdas, "lambdas")
        require(finite(self.shift), f"shift must be a finite number, got {self.shift}.")
        require(isinstance(self.seed, int) and self.seed >= 0, f"seed must be a whole number >= 0, got {self.seed}.")
        require(
            len(self.report_at) > 0 and all(isinstance(u, int) and 1 <= u <= self.steps for u in self.report_at),
            f"every update in report_at must lie between 1 and steps = {self.steps}, got {list(self.report_at)}.",
        )
        require(
            isinstance(self.spread_at, int) and 1 <= self.spread_at <= self.steps,
            f"spread_at must lie between 1 and steps = {self.steps}, got {self.spread_at}.",
        )
        require(finite(self.target) and 0.0 < self.target <= 1.0, f"target must lie in (0, 1], got {self.target}.")


# ----------------------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainingSnapshot:
    """The state of every run after `step` updates."""

    step: int
    """Updates done so far."""
    methods: tuple[str, ...]
    """Row names: the two REINFORCE variants, then one GAE critic per lambda."""
    success: np.ndarray
    """(methods, seeds) exact success probability of each run's tabular policy."""


def training_methods(lambdas) -> tuple[str, ...]:
    """The rows of seed 000's training table, in order."""
    return ("REINFORCE, no baseline", "REINFORCE, leave-one-out baseline") + tuple(f"GAE lambda {lam:g}" for lam in lambdas)


def _state_sums(values: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Sum of `values` (M, S, E, T) over the visits to each state: (M, S, T, T+1)."""
    M, S, _, T = values.shape
    state = np.arange(T) * (T + 1) + visited_counts(tokens)  # (M, S, E, T)
    run = np.arange(M * S).reshape(M, S, 1, 1) * (T * (T + 1))  # each run's block of states
    sums = np.bincount((run + state).ravel(), values.ravel(), M * S * T * (T + 1))
    return sums.reshape(M, S, T, T + 1)


def train_token_world_steps(settings: TokenWorldTrainingSettings):
    """Train tabular policies side by side, yielding a TrainingSnapshot after every update.

    Seed 000 section 6.10, "Training with a critic". Every (method, seed) run has one
    logit theta(t, k) per state, pi(A | t, k) = softmax([0, theta])_A, starting at
    theta = 0 (P(A) = 0.5). Each update samples E episodes and ascends

        g(t, k) = (1/E) sum_i sum_t A_t^(i) grad log pi(a_t^(i) | s_t^(i)),   theta += lr g

    with the weight A_t = G_t (no baseline), G_t - b_loo (leave-one-out over the E
    episodes), or GAE(1, lam) with a tabular critic V(t, k) that starts at 0 and steps
    towards the lambda-return target_t = A_t + V(s_t) of every visit:
    V(s) += critic_lr (1/E) sum_{visits t to s} (target_t - V(s_t)).
    All runs use the same uniform draws (common random numbers), so methods are compared
    on the same luck and a reward shift changes nothing but the rewards.

    The default lr = 0.5 and critic_lr = 0.9 were picked to match the seed's curves (its
    learning rates are not given): lr by scanning for the no-baseline row
    0.476 / 0.668 / 0.839 / 0.963 with median 72 updates to 0.9, critic_lr by then
    scanning for the GAE lambda = 0 row (0.388 / 0.512 / 0.759 / 0.959, median 85).
    """
    T, E, S = settings.T, settings.episodes, settings.seeds
    lam = np.asarray(settings.lambdas, dtype=float)
    methods = training_methods(settings.lambdas)
    M = len(methods)
    rng = np.random.default_rng(settings.seed)
    theta = np.zeros((M, S, T, T + 1))  # logit of A at every state
    critic = np.zeros((len(lam), S, T, T + 1))  # V(t, k) for the GAE rows

    def policy_a(theta):
        return softmax(np.stack([np.zeros_like(theta), theta], -1))[..., 1]  # P(A | t, k)

    pi_a = policy_a(theta)  # (M, S, T, T+1)
    yield TrainingSnapshot(0, methods, success_probability(pi_a, T, settings.threshold)[..., 0, 0])
    for step in range(1, settings.steps + 1):
        u = rng.random((S, E, T))  # shared by every method
        tokens = np.zeros((M, S, E, T), dtype=np.int64)
        p_visited = np.empty((M, S, E, T))  # pi(A | s_t) at every visited state
        k = np.zeros((M, S, E), dtype=np.int64)
        for t in range(T):
            p_visited[..., t] = np.take_along_axis(pi_a[:, :, t, :], k, -1)
            tokens[..., t] = u[:, :, t] < p_visited[..., t]
            k += tokens[..., t]

        r = episode_rewards(tokens, settings.threshold, settings.shift)  # (M, S, E, T)
        G = returns_to_go(r)
        weight = np.empty_like(G)
        weight[0] = G[0]
        weight[1] = G[1] - loo_baseline(G[1], axis=1)  # over the E episodes of each seed
        vals = visited_values(critic, tokens[2:])  # (L, S, E, T)
        weight[2:] = gae(r[2:], vals, 1.0, lam[:, None, None])
        critic = critic + settings.critic_lr * _state_sums(weight[2:], tokens[2:]) / E  # target - V = A_hat

        score = tokens - p_visited  # d log pi(a_t | s_t) / d theta(s_t) = 1[a_t = A] - pi(A | s_t)
        theta = theta + settings.lr * _state_sums(weight * score, tokens) / E
        pi_a = policy_a(theta)
        yield TrainingSnapshot(step, methods, success_probability(pi_a, T, settings.threshold)[..., 0, 0])


def training_stream(settings: TokenWorldTrainingSettings):
    """`train_token_world_steps`, accumulated: yields (methods, success so far (M, step+1, S), steps)."""
    success = None
    for snap in train_token_world_steps(settings):
        if success is None:
            success = np.empty((len(snap.methods), settings.steps + 1, settings.seeds))
        success[:, snap.step] = snap.success
        yield snap.methods, success[:, : snap.step + 1], settings.steps


@dataclass(frozen=True)
class TrainingResult:
    """Whole training curves and the seed's summary numbers, one row per method."""

    methods: tuple[str, ...]
    """Row names, as in `training_methods`."""
    success: np.ndarray
    """(methods, steps+1, seeds) exact success probability after 0..steps updates."""
    report_at: tuple[int, ...]
    """Updates of the `mean_at` columns."""
    mean_at: np.ndarray
    """(methods, len(report_at)) mean success probability over seeds."""
    median_to_target: np.ndarray
    """(methods,) median over seeds of the first update reaching `target` (inf if most never do)."""
    sd_at_spread: np.ndarray
    """(methods,) standard deviation over seeds of the success probability at `spread_at`."""
    below_half: np.ndarray
    """(methods,) fraction of seeds whose final success probability is below 0.5."""


def summarise_training(methods, success: np.ndarray, settings: TokenWorldTrainingSettings) -> TrainingResult:
    """The seed's columns from curves (methods, steps+1, seeds)."""
    reached = success >= settings.target  # (M, steps+1, S)
    first = np.where(reached.any(1), reached.argmax(1), np.inf)  # (M, S) first update at the target
    return TrainingResult(
        methods=tuple(methods),
        success=success,
        report_at=tuple(settings.report_at),
        mean_at=success[:, list(settings.report_at), :].mean(-1),
        median_to_target=np.median(first, -1),
        sd_at_spread=success[:, settings.spread_at, :].std(-1),
        below_half=(success[:, -1, :] < 0.5).mean(-1),
    )


def train_token_world(settings: TokenWorldTrainingSettings) -> TrainingResult:
    """Run `train_token_world_steps` to the end and summarise it."""
    snapshots = list(train_token_world_steps(settings))
    success = np.stack([s.success for s in snapshots], 1)  # (M, steps+1, S)
    return summarise_training(snapshots[0].methods, success, settings)
