"""The toy target task of Lab 9: seed 001 sections 2 to 5 and Exercises 1 and 2.

A bigram policy writes T = 6 symbols from a vocabulary of V = 8. Its logits are one
table theta of shape (T, V, V): row theta[t, c] holds the logits of the symbol at
position t given the context c, the previous symbol y_{t-1}. The first position has no
previous symbol; it reads the start context c = 0, so only row theta[0, 0] is ever used
at t = 0 (the other rows of theta[0] get zero gradient and are inert).

    pi(y_t | s_t) = softmax(theta[t, c_t])[y_t],   c_0 = 0,  c_t = y_{t-1}

The reward is the fraction of positions that match a hidden target y*,

    r_t = 1[y_t = y*_t] / T,   R(y) = sum_t r_t,

so the uniform start theta = 0 earns J = 1/V and the optimum, writing y* for sure, J = 1.
The task is small enough (V^T = 262,144 responses) to enumerate, so the exact gradient
of equation 4 is available to check every estimate against.

Positions are numbered from 0 in code (the seed's step 1 is t = 0 here).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from engines.policy_gradient import (
    batch_mean_baseline,
    log_softmax,
    loo_baseline,
    returns_to_go,
    softmax,
)
from engines.settings import finite, require

MAX_RESPONSES = 2**20
"""Largest V^T that the exact enumeration accepts (memory grows as V^T x T)."""

ESTIMATORS = {
    "none": "no baseline",
    "loo": "leave-one-out",
    "batch_mean": "batch mean",
    "token": "token-level rewards",
    "token_loo": "token-level + leave-one-out",
}
"""The REINFORCE estimators of Exercise 2, key -> the label printed in the tables."""

@dataclass(frozen=True)
class ToyTargetSettings:
    """The toy target task, its variance experiment and its training runs."""

    T: int = 6
    """Length of a response in symbols; at least 1, with V^T at most 2^20."""
    V: int = 8
    """Size of the vocabulary; at least 2."""
    target_seed: int = 0
    """Seed that draws the hidden target y*; a non-negative integer."""
    samples: int = 16
    """Responses N in one gradient estimate; at least 2 (the leave-one-out baseline needs two)."""
    batches: int = 500
    """Independent one-batch estimates in the variance experiment; at least 2."""
    seeds: int = 8
    """Independent training runs per estimator; at least 1."""
    steps: int = 400
    """Training steps per run; at least 1."""
    lr: float = 10.0
    """Learning rate eta of the plain gradient-ascent step theta <- theta + eta g_hat; positive."""
    threshold: float = 0.9
    """Expected reward J a run must reach to count as trained; in (0, 1]."""
    seed: int = 0
    """Seed of the sampling in the variance experiment and in training; a non-negative integer."""

    def __post_init__(self):
        require(self.T >= 1 and self.V >= 2, f"need T >= 1 and V >= 2, got T = {self.T} and V = {self.V}.")
        require(self.V**self.T <= MAX_RESPONSES,
                f"V^T = {self.V**self.T} responses is too many to enumerate (at most {MAX_RESPONSES}).")
        require(self.target_seed >= 0 and self.seed >= 0, "seeds must be non-negative integers.")
        require(self.samples >= 2, f"samples must be at least 2 for the leave-one-out baseline, got {self.samples}.")
        require(self.batches >= 2, f"batches must be at least 2 to measure a variance, got {self.batches}.")
        require(self.seeds >= 1 and self.steps >= 1, "seeds and steps must be at least 1.")
        require(finite(self.lr) and self.lr > 0, f"lr must be a positive finite number, got {self.lr}.")
        require(finite(self.threshold) and 0 < self.threshold <= 1,
                f"threshold must lie in (0, 1], got {self.threshold}.")


def draw_target(T: int, V: int, target_seed: int) -> np.ndarray:
    """The hidden target y*, T symbols drawn uniformly from the vocabulary."""
    return np.random.default_rng(target_seed).integers(V, size=T)


def contexts(actions):
    """c_t = y_{t-1} with the start context c_0 = 0; shape (..., T) like `actions`."""
    if isinstance(actions, np.ndarray):
        return np.concatenate([np.zeros_like(actions[..., :1]), actions[..., :-1]], axis=-1)
    import torch

    return torch.cat([torch.zeros_like(actions[..., :1]), actions[..., :-1]], dim=-1)


def token_logprobs(logits, actions):
    """Per-step terms of seed 001 equation 2 for a batch.

        logp[n, t] = log pi(y_t^(n) | s_t^(n)) = log_softmax(theta[t, c_t^(n)])[y_t^(n)]

    `logits` is theta, (..., T, V, V); `actions` is (..., N, T) with the same leading
    axes. Returns (..., N, T); `.sum(-1)` is log pi(y). Numpy arrays in give numpy out;
    torch tensors in give torch out, differentiable with respect to the logits.
    """
    T, V = logits.shape[-3], logits.shape[-1]
    if isinstance(logits, np.ndarray):
        flat_index = np.arange(T) * V * V + contexts(actions) * V + actions  # (..., N, T) into T*V*V
        table = log_softmax(logits).reshape(*logits.shape[:-3], 1, T * V * V)  # (..., 1, TVV)
        return np.take_along_axis(table, flat_index, axis=-1)
    import torch

    actions = torch.as_tensor(actions)
    flat_index = torch.arange(T) * V * V + contexts(actions) * V + actions  # (..., N, T)
    table = torch.log_softmax(logits, -1).reshape(*logits.shape[:-3], 1, T * V * V)
    table = table.expand(*flat_index.shape[:-1], T * V * V)  # (..., N, TVV)
    return table.gather(-1, flat_index)


def sample(theta: np.ndarray, N: int, rng: np.random.Generator) -> np.ndarray:
    """Draw N responses from pi_theta for every leading index of theta (..., T, V, V).

    Symbol by symbol (a loop over the T positions, vectorised over everything else),
    by inverting the cumulative distribution of row theta[t, c_t]. Returns (..., N, T).
    """
    T, V = theta.shape[-3], theta.shape[-1]
    pi = softmax(theta)  # (..., T, V, V)
    lead = theta.shape[:-3]
    actions = np.zeros((*lead, N, T), dtype=np.int64)
    c = np.zeros((*lead, N), dtype=np.int64)  # start context
    for t in range(T):
        rows = np.take_along_axis(pi[..., t, :, :], np.broadcast_to(c[..., None], (*lead, N, V)), axis=-2)
        u = rng.random((*lead, N, 1))
        y = np.minimum((u > np.cumsum(rows, axis=-1)).sum(-1), V - 1)  # (..., N)
        actions[..., t] = y
        c = y
    return actions


def token_rewards(actions: np.ndarray, target: np.ndarray) -> np.ndarray:
    """r_t = 1[y_t = y*_t] / T, seed 001 section 5; (..., N, T). R(y) = r.sum(-1)."""
    return (actions == target).astype(float) / actions.shape[-1]


def expected_reward(theta: np.ndarray, target: np.ndarray) -> np.ndarray:
    """J(theta) = E[R] = (1/T) sum_t P(y_t = y*_t), seed 001 equation 3, by dynamic programming.

    The reward is a sum over positions, so J needs only the marginals of each y_t:
    m_0 = pi[0, 0, :], m_t = m_{t-1} @ pi[t]. theta is (..., T, V, V); returns (...).
    Agrees with the enumeration of `exact_gradient`; cheap enough to call every step.
    """
    pi = softmax(theta)  # (..., T, V, V)
    T = theta.shape[-3]
    m = pi[..., 0, 0, :]  # (..., V)
    J = m[..., target[0]]
    for t in range(1, T):
        m = np.einsum("...c,...ck->...k", m, pi[..., t, :, :])
        J = J + m[..., target[t]]
    return J / T


@functools.cache
def all_responses(T: int, V: int) -> np.ndarray:
    """Every response y in {0..V-1}^T, (V^T, T), the first symbol varying slowest."""
    require(V**T <= MAX_RESPONSES, f"V^T = {V**T} responses is too many to enumerate.")
    Y = np.indices((V,) * T).reshape(T, -1).T.copy()
    Y.setflags(write=False)
    return Y


def _scatter(weights: np.ndarray, actions: np.ndarray, V: int) -> np.ndarray:
    """counts[..., t, c, k] = sum_n weights[..., n, t] 1[c_t^(n) = c, y_t^(n) = k].

    `weights` and `actions` are (..., N, T); returns (..., T, V, V). One bincount over
    all leading indices at once: the index of entry (l, t, c, k) is l*TVV + t*VV + c*V + k.
    """
    *lead, N, T = actions.shape
    L = int(np.prod(lead, dtype=np.int64))
    P = T * V * V
    index = np.arange(T) * V * V + contexts(actions) * V + actions  # (..., N, T)
    index = index.reshape(L, N * T) + np.arange(L)[:, None] * P  # (L, N*T)
    counts = np.bincount(index.ravel(), weights=weights.reshape(L, N * T).ravel(), minlength=L * P)
    return counts.reshape(*lead, T, V, V)


def batch_estimates(theta: np.ndarray, actions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One REINFORCE estimate per batch, seed 001 equations 5 and 10, with the score in closed form.

        g_hat = (1/N) sum_i sum_t w_t^(i) grad log pi(y_t^(i) | s_t^(i)),
        d log pi(y_t | s_t) / d theta[t, c, k] = 1[c = c_t] (1[k = y_t] - pi[t, c, k])

    theta is (..., T, V, V), actions and weights (..., N, T) (w = G - b). The same number
    as `policy_gradient.reinforce_estimate` on the dense (N, T, TVV) scores, without
    forming them: the one-hot part is a scatter-add, the -pi part is pi times its row sum.
    Returns (..., T, V, V).
    """
    V, N = theta.shape[-1], actions.shape[-2]
    onehot = _scatter(weights, actions, V)  # (..., T, V, V)
    return (onehot - onehot.sum(-1, keepdims=True) * softmax(theta)) / N


def estimator_weights(actions: np.ndarray, target: np.ndarray, estimator: str) -> np.ndarray:
    """The weights w_t^(i) = G_t^(i) - b_t^(i) of one estimator in ESTIMATORS; (..., N, T).

    Sequence level (seed 001 section 5): r_t = 0 before the end and r_T = R, so the
    reward-to-go G_t = R at every step. Token level: r_t = 1[y_t = y*_t]/T and
    G_t = sum_{t' >= t} r_t' (equation 10). Baselines along the sample axis: leave-one-out
    (equation 9) or the batch mean, which includes the sample itself.
    """
    require(estimator in ESTIMATORS, f"unknown estimator {estimator!r}; choose one of {list(ESTIMATORS)}.")
    r = token_rewards(actions, target)  # (..., N, T)
    if estimator.startswith("token"):
        G = returns_to_go(r)
    else:
        sequence = np.zeros_like(r)
        sequence[..., -1] = r.sum(-1)  # the reward arrives once, at the end
        G = returns_to_go(sequence)
    if estimator.endswith("loo"):
        return G - loo_baseline(G, axis=-2)
    if estimator == "batch_mean":
        return G - batch_mean_baseline(G, axis=-2)
    return G


def _response_weights(theta: np.ndarray, target: np.ndarray):
    """Enumeration: all responses Y, pi(y) and the sequence and token returns; (M, ...)."""
    T, V = theta.shape[0], theta.shape[-1]
    Y = all_responses(T, V)  # (M, T)
    prob = np.exp(token_logprobs(theta, Y).sum(-1))  # (M,) pi(y), equation 2
    r = token_rewards(Y, target)  # (M, T)
    R = np.repeat(r.sum(-1, keepdims=True), T, axis=-1)  # (M, T) sequence level: G_t = R
    return Y, prob, R, returns_to_go(r)


def expected_estimate(theta: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """E_y[sum_t w_t(y) grad log pi(y_t | s_t)] by enumerating every response (equation 4's sum).

    `weights` is (V^T, T) over `all_responses(T, V)`: a function of the response only,
    e.g. R (equation 4), R - b (equation 8: the same mean) or G_t (equation 10).
    Returns (T, V, V).
    """
    T, V = theta.shape[0], theta.shape[-1]
    Y = all_responses(T, V)
    prob = np.exp(token_logprobs(theta, Y).sum(-1))  # (M,)
    return batch_estimates(theta, Y, prob[:, None] * weights) * len(Y)  # undo the 1/N


def exact_gradient(theta: np.ndarray, target: np.ndarray) -> tuple[float, np.ndarray]:
    """J(theta) and its exact gradient, seed 001 equations 3 and 4, by enumerating all V^T responses.

        J = sum_y pi(y) R(y),   grad J = sum_y pi(y) R(y) sum_t grad log pi(y_t | s_t)

    with the per-step score of the softmax in closed form (onehot - pi on row (t, c_t)),
    summed by a scatter-add. theta is (T, V, V); returns (J, grad) with grad (T, V, V).
    """
    Y, prob, R, _ = _response_weights(theta, target)
    J = float(prob @ R[:, 0])
    return J, batch_estimates(theta, Y, prob[:, None] * R) * len(Y)


def exact_variances(theta: np.ndarray, target: np.ndarray, N: int) -> dict[str, np.ndarray]:
    """Exact variance of every coordinate of the one-batch estimate g_hat, for each estimator.

    Each coordinate (t, c, k) is touched by step t only, so per coordinate the estimate
    is a mean over N iid samples of a weight W (R, or G_t at token level) times the
    scalar score s = 1[c_t = c](1[y_t = k] - pi). With E[s] = 0 (equation 7):

        no baseline:    Var = (E[W^2 s^2] - E[W s]^2) / N
        leave-one-out:  g_hat = mean over pairs i<j of k = (W_i - W_j)(s_i - s_j)/2, a
                        U-statistic: Var = 4(N-2)/(N(N-1)) zeta1 + 2/(N(N-1)) zeta2,
                        zeta1 = Var((W - E W) s)/4,  zeta2 = Var(k)
        batch mean:     (1 - 1/N)^2 times leave-one-out

    All moments E[W^a s^b] come from one enumeration. Returns estimator -> (T, V, V).
    """
    Y, prob, R, G = _response_weights(theta, target)
    pi = softmax(theta)
    out = {}
    for level, W in (("sequence", R), ("token", G)):
        A = [_scatter(prob[:, None] * W**a, Y, theta.shape[-1]) for a in range(3)]  # E[W^a 1[c_t=c, y_t=k]]
        B = [a.sum(-1, keepdims=True) for a in A]  # E[W^a 1[c_t = c]]
        Ws = A[1] - pi * B[1]  # E[W s]
        s2, Ws2, W2s2 = (A[a] * (1 - 2 * pi) + pi**2 * B[a] for a in range(3))  # E[W^a s^2]
        EW = (prob @ W)[:, None, None]  # (T, 1, 1) E[W] at each step
        EW2 = (prob @ W**2)[:, None, None]
        zeta1 = (W2s2 - 2 * EW * Ws2 + EW**2 * s2 - Ws**2) / 4
        zeta2 = (2 * W2s2 + 2 * EW2 * s2 - 4 * EW * Ws2 + 4 * Ws**2) / 4 - Ws**2
        plain = (W2s2 - Ws**2) / N
        loo = 4 * (N - 2) / (N * (N - 1)) * zeta1 + 2 / (N * (N - 1)) * zeta2
        if level == "sequence":
            out.update(none=plain, loo=loo, batch_mean=(1 - 1 / N) ** 2 * loo)
        else:
            out.update(token=plain, token_loo=loo)
    return out


@dataclass(frozen=True)
class VarianceExperiment:
    """Exercise 2 at one theta: many one-batch estimates of each estimator on the same samples."""

    estimates: dict
    """estimator -> (batches, T, V, V) one-batch estimates g_hat."""
    exact: np.ndarray
    """The exact gradient grad J, (T, V, V)."""
    J: float
    """The exact expected reward J(theta)."""
    exact_variances: dict
    """estimator -> (T, V, V) exact variance of each coordinate of one estimate."""
    coordinate: tuple
    """(t, c, k) of Figure 2's coordinate: the logit of the target's first symbol at the first step."""


def variance_experiment(theta: np.ndarray, target: np.ndarray, N: int, batches: int,
                        rng: np.random.Generator) -> VarianceExperiment:
    """Draw `batches` batches of N responses once and form every estimator's g_hat on each."""
    actions = sample(np.broadcast_to(theta, (batches, *theta.shape)), N, rng)  # (batches, N, T)
    estimates = {name: batch_estimates(theta, actions, estimator_weights(actions, target, name))
                 for name in ESTIMATORS}
    J, grad = exact_gradient(theta, target)
    return VarianceExperiment(estimates=estimates, exact=grad, J=J,
                              exact_variances=exact_variances(theta, target, N),
                              coordinate=(0, 0, int(target[0])))


@dataclass(frozen=True)
class TrainingSnapshot:
    """Training runs after `step` updates, every estimator and seed at once."""

    step: int
    """Updates taken so far."""
    J: np.ndarray
    """(estimators, seeds, step + 1) exact expected reward after 0..step updates."""
    steps_to_threshold: np.ndarray
    """(estimators, seeds) first step with J >= threshold, or -1 if not reached yet."""
    estimators: tuple
    """Keys of ESTIMATORS, one per first axis."""


def train(settings: ToyTargetSettings, estimators: tuple = tuple(ESTIMATORS),
          every: int = 10) -> Iterator[TrainingSnapshot]:
    """REINFORCE on the toy task from the uniform policy, seed 001 section 3, for every estimator and seed.

        theta <- theta + lr g_hat,   g_hat from N fresh samples of the current policy

    Plain gradient ascent, the step the seed writes (no optimizer state); the default
    lr = 10 is large enough that runs without a baseline can lock onto a wrong symbol
    (section 4, "Noise has a cost"), while the baselines reach J >= 0.9. All runs are one
    (E, S, T, V, V) array; J is exact (dynamic programming) after every step. Yields a
    snapshot every `every` steps and after the last.
    """
    target = draw_target(settings.T, settings.V, settings.target_seed)
    rng = np.random.default_rng(settings.seed)
    E, S = len(estimators), settings.seeds
    theta = np.zeros((E, S, settings.T, settings.V, settings.V))
    J = np.zeros((E, S, settings.steps + 1))
    J[..., 0] = expected_reward(theta, target)
    for step in range(1, settings.steps + 1):
        actions = sample(theta, settings.samples, rng)  # (E, S, N, T)
        weights = np.stack([estimator_weights(actions[e], target, name) for e, name in enumerate(estimators)])
        theta = theta + settings.lr * batch_estimates(theta, actions, weights)
        J[..., step] = expected_reward(theta, target)
        if step % every == 0 or step == settings.steps:
            reached = J[..., : step + 1] >= settings.threshold
            first = np.where(reached.any(-1), reached.argmax(-1), -1)
            yield TrainingSnapshot(step=step, J=J[..., : step + 1].copy(), steps_to_threshold=first,
                                   estimators=tuple(estimators))


def run_training(settings: ToyTargetSettings, estimators: tuple = tuple(ESTIMATORS)) -> TrainingSnapshot:
    """Run `train` to the end and return the last snapshot."""
    for snapshot in train(settings, estimators, every=settings.steps):
        pass
    return snapshot


# ---------------------------------------------------------------------------------------
# Exercise 2 and Figure 2 at the uniform start, drawn in chunks so that a run can stream

LAB_T, LAB_V = ToyTargetSettings.T, ToyTargetSettings.V
"""The lab's task: T = 6 symbols from a vocabulary of V = 8 (262,144 responses)."""
THETA = np.zeros((LAB_T, LAB_V, LAB_V))
"""The uniform starting policy, where Exercise 2 and Figure 2 measure."""
CHUNK = 50
"""Batches drawn per step of the Monte Carlo run; chunk k uses the generator default_rng([seed, k]),
so more batches extend the same draws instead of replacing them."""
ACTIVE = np.ones((LAB_T, LAB_V, LAB_V), dtype=bool)
ACTIVE[0, 1:] = False  # step 1 reads only the start context c = 0; the other rows never move
"""The coordinates of theta that can have a gradient (328 of 384)."""


@functools.lru_cache(maxsize=64)
def exact_at_start(target_seed: int) -> tuple[float, np.ndarray]:
    """J and the exact gradient at the uniform policy for one target (equations 3 and 4)."""
    return exact_gradient(THETA, draw_target(LAB_T, LAB_V, target_seed))


@functools.lru_cache(maxsize=256)
def exact_variances_at_start(samples: int, target_seed: int) -> dict:
    """Exact variance of every coordinate of one estimate, per estimator, at the uniform policy."""
    return exact_variances(THETA, draw_target(LAB_T, LAB_V, target_seed), samples)


def coordinate(t: int, prev: int, symbol: int) -> tuple[int, int, int]:
    """The index (t, c, k) into theta of step t (counted from 1), previous symbol and symbol.

    Step 1 has no previous symbol: it reads the start context c = 0 whatever `prev` says.
    """
    return (t - 1, 0 if t == 1 else prev, symbol)


def sd_and_se(x: np.ndarray) -> tuple[float, float]:
    """Sample standard deviation s of `x` and its standard error, SE(s) = SE(s^2) / (2 s)."""
    squares = (x - x.mean()) ** 2
    s = math.sqrt(squares.sum() / (len(x) - 1))
    return s, (float(squares.std(ddof=1)) / math.sqrt(len(x)) / (2 * s) if s > 0 else 0.0)


@dataclass(frozen=True)
class Batches:
    """The one-batch estimates drawn so far at the uniform policy, with the exact answers."""

    estimates: dict
    """estimator -> (drawn, T, V, V) one-batch estimates g_hat, the same samples for every estimator."""
    total: int
    """Batches the run will draw in all."""
    samples: int
    """Responses N per batch."""
    seed: int
    """Seed of the draws."""
    J: float
    """Exact expected reward at the uniform policy (1/V)."""
    exact: np.ndarray
    """Exact gradient, (T, V, V)."""
    exact_variances: dict = field(repr=False)
    """estimator -> (T, V, V) exact variance of one estimate."""

    @property
    def drawn(self) -> int:
        return len(self.estimates["none"])

    @cached_property
    def means(self) -> dict:
        """estimator -> (T, V, V) mean of the estimates drawn."""
        return {name: g.mean(0) for name, g in self.estimates.items()}

    @cached_property
    def variance_rows(self) -> list[dict]:
        """Exercise 2's table: the total variance sum_j Var(g_hat_j) per estimator, measured and exact.

        Measured: the mean over batches of sum_j (g_hat_j - mean_j)^2 B/(B - 1), whose mean is the
        sum of the coordinates' unbiased sample variances; its standard error is that of a mean.
        """
        B, rows = self.drawn, []
        for name, g in self.estimates.items():
            per_batch = ((g - self.means[name]) ** 2).reshape(B, -1).sum(-1) * (B / (B - 1))  # (B,)
            rows.append({
                "estimator": name,
                "label": ESTIMATORS[name],
                "measured": float(per_batch.mean()),
                "se": float(per_batch.std(ddof=1) / math.sqrt(B)),
                "exact": float(self.exact_variances[name].sum()),
            })
        return rows


def draw_batches(samples: int, batches: int, target_seed: int, seed: int, chunk: int = CHUNK):
    """Exercise 2 in chunks: yields `Batches` after every `chunk` batches of N = `samples` responses.

    Each chunk samples from the uniform policy and forms every estimator's g_hat on the same
    responses (engines.toy_target: sample, estimator_weights, batch_estimates), exactly as
    `variance_experiment` does on one generator, so a run can be stopped between chunks.
    """
    target = draw_target(LAB_T, LAB_V, target_seed)
    J, exact = exact_at_start(target_seed)
    yield None  # a stale run stops here, before the exact variances of a batch size nobody wants now
    variances = exact_variances_at_start(samples, target_seed)
    filled = {name: np.empty((batches, LAB_T, LAB_V, LAB_V)) for name in ESTIMATORS}
    for k, start in enumerate(range(0, batches, chunk)):
        size = min(chunk, batches - start)
        actions = sample(np.broadcast_to(THETA, (size, LAB_T, LAB_V, LAB_V)), samples, np.random.default_rng([seed, k]))  # (size, N, T)
        for name in ESTIMATORS:
            filled[name][start : start + size] = batch_estimates(THETA, actions, estimator_weights(actions, target, name))
        # Views of the rows already written: later chunks write past them, never into them.
        yield Batches({name: a[: start + size] for name, a in filled.items()}, batches, samples, seed, J, exact, variances)


def histogram(x: np.ndarray, edges: np.ndarray) -> dict:
    """Counts of `x` in the bins between `edges`, as a histogram's columns: left, right, count."""
    counts, _ = np.histogram(x, edges)
    return {"left": edges[:-1], "right": edges[1:], "count": counts}
