"""The lab's checkpoints: seed 001's six exercises checked, each failure said in one or two sentences.

Every `exerciseN` takes what the learner wrote, runs the checks the seed describes for it
("In the lab." paragraphs of sections 2, 3, 4, 5, 7 and 8), prints what it measured and
returns a `Checkpoint`, which a notebook shows as a green or red box. A checkpoint never
raises: a stub, an exception or a wrong value becomes a sentence that says what is wrong
and where to look, so the notebook runs on to the next exercise. The provided cells that
use the learner's functions (training the toy policy, the variance table, training the
reward model, the stretch) take the checkpoints they depend on and wait, with a sentence,
until those have passed.

Monte Carlo checks compare a mean over many batches with the exact value in units of its
standard error, with a limit z* that keeps the chance of failing a correct answer below
one in a thousand over all the coordinates compared (a Bonferroni bound on the normal
tails).
"""

from __future__ import annotations

import html
import itertools
import math
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import NormalDist
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from app.jobs.runs import REWARD_MODELS, RUNS_DIR
from engines.bradley_terry import Normalizer
from engines.lm.preferences import PreferencePairs, split_pairs
from engines.lm.reward_model import (
    PROBE_PROMPT,
    RewardModelSettings,
    TrainedRewardModel,
    iter_tau_sweep,
    load_reward_model,
    probe,
    save_reward_model,
    train_reward_model,
)
from engines.lm.settings import REWARD_PREFIX
from engines.policy_gradient import batch_mean_baseline
from engines.policy_gradient import reinforce_loss as project_reinforce_loss
from engines.policy_gradient import returns_to_go as project_returns
from engines.toy_target import (
    ToyTargetSettings,
    batch_estimates,
    draw_target,
    exact_gradient,
    exact_variances,
    expected_reward,
    sample,
    token_logprobs,
    token_rewards,
)

ALPHA = 1e-3
"""Chance that a Monte Carlo check fails a correct answer, over all the numbers it compares."""
BATCHES = 1000
"""One-batch estimates averaged by the unbiasedness checks of Exercises 1 and 2."""
TOY = ToyTargetSettings()
"""The toy task: T = 6 symbols from a vocabulary of 8, N = 16 samples a batch, learning rate 10."""
RUNS_TOY = 8
"""Seeds trained with and without the baseline after Exercise 2."""
REWARD_SETTINGS = RewardModelSettings()
"""The reward model of Exercise 4: its size, training, split and seed (the reward-model page's defaults)."""
STRETCH_TAUS = (1.0, 2.0)
"""Label temperatures of the stretch, beside the pairs' own 0.5."""
VARIANCE_ROWS = {"none": "no baseline", "loo": "your leave-one-out baseline", "token": "token-level rewards"}
"""The rows of Exercise 2's variance table, key -> label."""


def z_limit(count: int, alpha: float = ALPHA) -> float:
    """z* with P(max of `count` |N(0, 1)| > z*) <= alpha (Bonferroni): the Monte Carlo checks' limit."""
    return NormalDist().inv_cdf(1 - alpha / (2 * max(count, 1)))


# --- what a checkpoint returns ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """The verdict of one exercise's checkpoint."""

    exercise: int
    """Which exercise, 0 to 5."""
    passed: bool
    """Whether every check passed."""
    message: str
    """One or two sentences: what was checked, or what is wrong and what to look at."""

    def __str__(self) -> str:
        return f"Checkpoint {self.exercise} {'passed' if self.passed else 'failed'}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour, mark = ("#009E73", "✔") if self.passed else ("#D55E00", "✘")
        return (f'<div style="border-left: 6px solid {colour}; padding: 6px 12px; margin: 4px 0; background: {colour}18">'
                f'<b style="color: {colour}">{mark} {html.escape(str(self).split(":", 1)[0])}</b>: '
                f'{html.escape(self.message)}</div>')


class Wrong(Exception):
    """A check failed; the message is what the learner reads."""


def _run(exercise: int, checks: Callable[[], str]) -> Checkpoint:
    """Run `checks` (which returns the success sentence or raises Wrong) as exercise `exercise`'s checkpoint."""
    try:
        return Checkpoint(exercise, True, checks())
    except Wrong as wrong:
        return Checkpoint(exercise, False, str(wrong))


def _call(name: str, function, *args, **kwargs):
    """The learner's function called; a stub or an exception becomes Wrong with one sentence."""
    if not callable(function):
        raise Wrong(f"{name} is not a function yet: run the cell that defines it, then this one.")
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        raise Wrong(f"{name} is still the stub: replace its `raise NotImplementedError` line with your code, "
                    "run that cell, then this one.") from None
    except Exception as error:  # the learner's code may raise anything; say which and where
        raise Wrong(f"{name} raised {type(error).__name__} ({error}): run it by hand on the example in its "
                    "docstring to find the line.") from None


def _numbers(name: str, value, shape: tuple | None = None) -> np.ndarray:
    """`value` (a tensor, an array or a number) as a float array, of `shape` if given; anything else is Wrong."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().double().numpy()
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise Wrong(f"{name} gave {type(value).__name__}, not numbers: return a tensor (or an array).") from None
    if shape is not None and array.shape != shape:
        raise Wrong(f"{name} gave shape {array.shape}; it should be {shape}, the same shape as its input.")
    return array


def _close(a, b, tol: float = 1e-6) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol))


def _waiting(ready, what: str) -> bool:
    """True (and say so) while a checkpoint in `ready` has not passed."""
    missing = [c.exercise for c in ready if not (isinstance(c, Checkpoint) and c.passed)]
    if missing:
        which = f"checkpoint {missing[0]} passes" if len(missing) == 1 else f"checkpoints {' and '.join(map(str, missing))} pass"
        print(f"{what} runs once {which}; fix the exercise above, then run this cell again.")
    return bool(missing)


# --- Part A: the toy task -----------------------------------------------------------------------------------------


def toy_target() -> np.ndarray:
    """The hidden target y* of the toy task."""
    return draw_target(TOY.T, TOY.V, TOY.target_seed)


def exercise0(logp_y, p_exact) -> Checkpoint:
    """Exercise 0 (section 2): log pi(y | x) of responses of the uniform policy, and the chance of writing y* exactly."""
    T, V = TOY.T, TOY.V
    exact_logp, exact_p = T * math.log(1 / V), V ** -T

    def checks():
        if logp_y is None or p_exact is None:
            raise Wrong("logp_y and p_exact are still None: compute them in the cell above (Equation 2), then run this one.")
        logp = _numbers("logp_y", logp_y)
        if logp.size and _close(logp, np.full(logp.shape, math.log(1 / V))):
            raise Wrong(f"logp_y holds one number per token, log(1/{V}) = {math.log(1 / V):.3f}: Equation 2 sums the "
                        f"T = {T} per-step terms, so sum over the last axis.")
        if logp.size and _close(logp, np.full(logp.shape, exact_logp / math.log(10))):
            raise Wrong("logp_y is a base-10 logarithm: log-probabilities here are natural logarithms (torch.log, np.log).")
        if logp.size == 0 or not _close(logp, np.full(logp.shape, exact_logp)):
            raise Wrong(f"logp_y should be {exact_logp:.3f} for every response of the uniform policy, got "
                        f"{np.array2string(logp.ravel()[:4], precision=3)}: sum token_logprobs over the T positions.")
        p = _numbers("p_exact", p_exact).ravel()
        if p.size != 1:
            raise Wrong("p_exact should be one number, the probability of the one response y*.")
        if _close(p[0], 1 / V):
            raise Wrong(f"1/{V} is the chance of one symbol; y* needs all {T} symbols right, each with chance 1/{V}.")
        if not _close(p[0], exact_p, 1e-4):
            raise Wrong(f"p_exact should be (1/{V})^{T} = {exact_p:.2e}, got {p[0]:.3g}: the product of the per-step "
                        "probabilities of y*, or exp of its log-probability.")
        return (f"every response has log pi(y | x) = {exact_logp:.2f}, and y* comes out with probability {exact_p:.1e}: "
                "an all-or-nothing reward would be zero in almost every batch.")

    return _run(0, checks)


RTG_EXAMPLE = torch.tensor([[1, 0, 1, 0, 0, 1], [0, 1, 0, 0, 1, 0]], dtype=torch.float64) / 6
"""Token rewards of two responses: section 5's check-yourself (matches at 1, 3 and 6) and a second row."""


def _check_returns_to_go(returns_to_go) -> None:
    r = RTG_EXAMPLE
    got = _numbers("returns_to_go", _call("returns_to_go", returns_to_go, r.clone()), tuple(r.shape))
    want = project_returns(r).numpy()
    if _close(got, want):
        return
    x = r.numpy()
    if _close(got, np.cumsum(x, -1)):
        raise Wrong("returns_to_go sums in the wrong direction: G_t adds r_t and the rewards after it (Equation 1), "
                    "yours the rewards before it. Flip the last axis before the cumulative sum and back after it.")
    if _close(got, np.broadcast_to(x.sum(-1, keepdims=True), x.shape)):
        raise Wrong("every G_t of yours is the whole response's reward: G_t starts at step t, so it drops the "
                    "rewards before t (a cumulative sum from the right, not a total).")
    if _close(got, np.flip(np.cumsum(np.flip(x, 0), 0), 0)) or _close(got, np.cumsum(x, 0)):
        raise Wrong("returns_to_go sums across the samples (dim 0); sum along the T positions of each response (dim -1).")
    if _close(got, x):
        raise Wrong("returns_to_go returns the rewards unchanged: G_t = r_t + r_(t+1) + ... + r_T also adds the later rewards.")
    raise Wrong(f"returns_to_go of the rewards (1/6, 0, 1/6, 0, 0, 1/6) gave {np.array2string(got[0], precision=3)}, "
                f"expected {np.array2string(want[0], precision=3)}: G_t = r_t + ... + r_T (Equation 1).")


def _check_reinforce_loss(reinforce_loss) -> None:
    gen = torch.Generator().manual_seed(1)
    N, T = 4, 3
    logp = (-3 * torch.rand(N, T, generator=gen, dtype=torch.float64)).requires_grad_()
    returns = torch.rand(N, T, generator=gen, dtype=torch.float64)

    def value(*args):
        out = _call("reinforce_loss", reinforce_loss, *args)
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            raise Wrong("reinforce_loss should return one number as a tensor (sum over t, mean over the samples), so "
                        "that autograd can differentiate it.")
        return out

    want = float(project_reinforce_loss(logp, returns).detach())
    got = float(value(logp, returns).detach())
    if not _close(got, want):
        if _close(got, -want):
            raise Wrong("reinforce_loss has the wrong sign: autograd minimises, so the loss is minus the weighted "
                        "log-probabilities (Equation 6), and its gradient is minus the REINFORCE estimate.")
        if _close(got, N * want):
            raise Wrong(f"reinforce_loss is N = {N} times too large: sum over the T positions, then average over the N samples.")
        if _close(got, want / T):
            raise Wrong(f"reinforce_loss is T = {T} times too small: it averages over the positions too; sum over t "
                        "(Equation 2), average only over the samples.")
        raise Wrong(f"reinforce_loss gave {got:.4f} where -(1/N) sum_i sum_t G_t log pi is {want:.4f}: weight each "
                    "token's log-probability by its return, sum over t, average over the samples.")
    b = 0.3
    got_b, want_b = float(value(logp, returns, b).detach()), float(project_reinforce_loss(logp, returns, b).detach())
    if not _close(got_b, want_b):
        if _close(got_b, want):
            raise Wrong("reinforce_loss ignores its baseline: the weights are returns - baseline (Equation 6).")
        if _close(got_b, float(project_reinforce_loss(logp, returns, -b).detach())):
            raise Wrong("reinforce_loss adds the baseline; the weights are returns minus the baseline.")
        raise Wrong(f"with baseline = {b}, reinforce_loss gave {got_b:.4f} where {want_b:.4f} was expected: the "
                    "weights are (returns - baseline).")
    graded = returns.clone().requires_grad_()
    value(logp, graded).backward()
    if graded.grad is not None and bool(graded.grad.abs().max() > 0):
        raise Wrong("reinforce_loss differentiates through the returns: the weights (returns - baseline) are constants "
                    "(R is never differentiated), so .detach() them.")


def _loss_estimates(theta: np.ndarray, actions: np.ndarray, returns: torch.Tensor, reinforce_loss) -> np.ndarray:
    """One REINFORCE estimate per batch, as minus the gradient of the learner's loss: (B, T, V, V).

    `actions` is (B, N, T) and `returns` (B, N, T). Each batch gets its own copy of theta, so one
    backward pass through the loss over all B x N samples (a mean over them) gives each batch's
    gradient divided by B.
    """
    B, N, T = actions.shape
    thetas = torch.tensor(np.broadcast_to(theta, (B, *theta.shape)).copy(), requires_grad=True)  # (B, T, V, V)
    logp = token_logprobs(thetas, torch.as_tensor(actions))  # (B, N, T)
    loss = _call("reinforce_loss", reinforce_loss, logp.reshape(B * N, T), returns.reshape(B * N, T))
    (grad,) = torch.autograd.grad(loss, thetas)
    return -B * grad.numpy()


def _sequence_returns(actions: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Section 5's sequence-level rewards (zero but the last, which is R) for actions (..., N, T)."""
    r = token_rewards(actions, target)
    sequence = np.zeros_like(r)
    sequence[..., -1] = r.sum(-1)
    return sequence


def _compare_mean(estimates: np.ndarray, exact: np.ndarray, what: str, hint: str) -> str:
    """Mean of (B, ...) estimates against the exact values, coordinate by coordinate, in standard errors."""
    mean = estimates.mean(0)
    se = estimates.std(0, ddof=1) / math.sqrt(len(estimates))
    moving = se > 1e-12  # coordinates no sample touches have no noise: they must match exactly
    if not _close(mean[~moving], exact[~moving], 1e-9):
        raise Wrong(f"{what} is nonzero where the exact gradient has no entry (rows the samples never visit): {hint}")
    z = np.abs(mean[moving] - exact[moving]) / se[moving]
    limit = z_limit(int(moving.sum()))
    if z.max() > limit:
        raise Wrong(f"{what} averaged over {len(estimates)} batches misses the exact gradient by {z.max():.1f} standard "
                    f"errors (at most {limit:.1f} is chance): {hint}")
    return f"{len(estimates)} batches agree with exact_gradient within {z.max():.1f} standard errors (limit {limit:.1f})"


def exercise1(returns_to_go, reinforce_loss, batches: int = BATCHES, seed: int = 0) -> Checkpoint:
    """Exercise 1 (sections 2, 3, 5): returns_to_go and reinforce_loss, then their mean estimate against exact_gradient."""

    def checks():
        _check_returns_to_go(returns_to_go)
        _check_reinforce_loss(reinforce_loss)
        target, theta = toy_target(), np.zeros((TOY.T, TOY.V, TOY.V))
        actions = sample(np.broadcast_to(theta, (batches, *theta.shape)), TOY.samples, np.random.default_rng(seed))
        seq = torch.as_tensor(_sequence_returns(actions, target)).reshape(-1, TOY.T)
        G = _numbers("returns_to_go", _call("returns_to_go", returns_to_go, seq), tuple(seq.shape))
        estimates = _loss_estimates(theta, actions, torch.as_tensor(G).reshape(actions.shape), reinforce_loss)
        J, grad = exact_gradient(theta, target)
        agreement = _compare_mean(estimates, grad, "The gradient of your loss",
                                  "check which log-probabilities each return multiplies.")
        t, c, k = 0, 0, int(target[0])
        print(f"The logit of y*_1 at step 1: exact gradient {grad[t, c, k]:+.4f}, your mean estimate "
              f"{estimates[:, t, c, k].mean():+.4f} ± {estimates[:, t, c, k].std(ddof=1) / math.sqrt(batches):.4f} (one standard error).")
        return f"returns_to_go and reinforce_loss are right, and {agreement}."

    return _run(1, checks)


def _train(returns_to_go, reinforce_loss, baseline, seeds: int, steps: int, seed: int) -> np.ndarray:
    """REINFORCE on the toy task with the learner's functions: theta <- theta + lr g_hat, g_hat = -grad of the loss.

    All `seeds` runs advance together (one copy of theta each); `baseline` is None or a function
    of one run's (N, T) returns. Returns J after 0..steps updates, (seeds, steps + 1).
    """
    S, N, T, V = seeds, TOY.samples, TOY.T, TOY.V
    target, rng = toy_target(), np.random.default_rng(seed)
    theta = torch.zeros(S, T, V, V, dtype=torch.float64)
    J = np.empty((S, steps + 1))
    J[:, 0] = expected_reward(theta.numpy(), target)
    for step in range(1, steps + 1):
        theta.requires_grad_()
        actions = sample(theta.detach().numpy(), N, rng)  # (S, N, T)
        G = returns_to_go(torch.as_tensor(_sequence_returns(actions, target)).reshape(S * N, T))
        b = 0.0 if baseline is None else torch.cat([baseline(g) for g in G.reshape(S, N, T)])
        loss = reinforce_loss(token_logprobs(theta, torch.as_tensor(actions)).reshape(S * N, T), G, b)
        (grad,) = torch.autograd.grad(loss, theta)  # each run's gradient divided by S (the mean runs over all S x N)
        theta = (theta - TOY.lr * S * grad).detach()
        J[:, step] = expected_reward(theta.numpy(), target)
    return J


def train_toy(returns_to_go, reinforce_loss, ready=(), steps: int = TOY.steps, seed: int = 0) -> np.ndarray | None:
    """The provided loop of Exercise 1: your loss trains the policy from the uniform start; J printed as it rises."""
    if _waiting(ready, "The training"):
        return None
    J = _train(returns_to_go, reinforce_loss, None, 1, steps, seed)[0]
    print(f"REINFORCE, N = {TOY.samples}, learning rate {TOY.lr:g}, no baseline (J is exact, by dynamic programming):")
    print("  ".join(f"step {s}: J = {J[s]:.3f}" for s in range(0, steps + 1, steps // 8)))
    return J


def _check_loo(loo_baseline) -> None:
    """Random (N, T) returns first (the shape and the axis), then section 4's check-yourself."""
    for R in (torch.rand(5, TOY.T, generator=torch.Generator().manual_seed(2), dtype=torch.float64),
              torch.tensor([[3.0], [1.0], [0.0], [0.0]], dtype=torch.float64)):
        N, T = R.shape
        got = _numbers("loo_baseline", _call("loo_baseline", loo_baseline, R.clone()))
        x = R.numpy()
        if got.shape in ((), (1,), (1, T)):  # one baseline for the whole batch (a batch mean kept with keepdim)
            got = np.broadcast_to(got.reshape(-1)[None, :] if got.size == T else got.reshape(1, 1), x.shape)
        if got.shape != x.shape:
            raise Wrong(f"loo_baseline gave shape {got.shape} for returns of shape {x.shape}: return one baseline per "
                        "sample and position, (N, T).")
        if _close(got, (x.sum(0, keepdims=True) - x) / (N - 1)):
            continue
        if _close(got, np.broadcast_to(x.mean(0, keepdims=True), x.shape)):
            raise Wrong("your baseline includes the reply's own reward (it is the batch mean): b^(i) averages the "
                        "other N - 1 returns and leaves R_i out (Equation 9).")
        if _close(got, (x.sum(0, keepdims=True) - x) / N):
            raise Wrong("your baseline divides the others' sum by N; there are N - 1 others, so divide by N - 1.")
        if T > 1 and _close(got, (x.sum(-1, keepdims=True) - x) / (T - 1)):
            raise Wrong("loo_baseline averages along the T positions; average across the N samples (dim 0), "
                        "position by position.")
        raise Wrong(f"for rewards (3, 1, 0, 0) the leave-one-out baselines are (1/3, 1, 4/3, 4/3), the mean of the "
                    f"other three for each sample; yours gave {np.array2string(got.ravel()[:4], precision=3)} on "
                    f"{'those' if T == 1 else 'random (5, 6) returns (first row)'}.")


def _baseline_weights(G: np.ndarray, loo_baseline) -> np.ndarray:
    """G - b with the learner's baseline, batch by batch: (B, N, T)."""
    b = np.stack([_numbers("loo_baseline", _call("loo_baseline", loo_baseline, torch.as_tensor(g)), g.shape) for g in G])
    return G - b


def exercise2(loo_baseline, batches: int = BATCHES, seed: int = 1) -> Checkpoint:
    """Exercise 2 (section 4): loo_baseline, its unbiasedness, and batch mean = (1 - 1/N) x leave-one-out on every batch."""

    def checks():
        _check_loo(loo_baseline)
        target, theta, N = toy_target(), np.zeros((TOY.T, TOY.V, TOY.V)), TOY.samples
        actions = sample(np.broadcast_to(theta, (batches, *theta.shape)), N, np.random.default_rng(seed))
        G = project_returns(_sequence_returns(actions, target))  # (B, N, T)
        plain = batch_estimates(theta, actions, G)
        loo = batch_estimates(theta, actions, _baseline_weights(G, loo_baseline))
        mean = batch_estimates(theta, actions, G - batch_mean_baseline(G, axis=-2))
        _, grad = exact_gradient(theta, target)
        _compare_mean(plain, grad, "The estimate without a baseline", "this is the project's own; tell the teacher.")
        agreement = _compare_mean(loo, grad, "The estimate with your baseline",
                                  "a baseline must not depend on the response it is subtracted from (Equation 8).")
        worst = np.abs(mean - (1 - 1 / N) * loo).max()
        if worst > 1e-9 * max(1.0, np.abs(loo).max()):
            raise Wrong(f"on some batch the batch-mean estimate is not (1 - 1/N) times yours (off by {worst:.2g}): "
                        "check that b^(i) is the mean of exactly the other N - 1 returns.")
        return (f"your leave-one-out estimate is unbiased ({agreement}), and on every batch the batch-mean estimate "
                f"is (1 - 1/{N}) = {1 - 1 / N:.4f} times yours.")

    return _run(2, checks)


def variance_table(loo_baseline, returns_to_go, prediction=None, ready=(), batches: int = 500,
                   seed: int = 2) -> dict | None:
    """The provided cell of Exercise 2: total variance of g_hat without a baseline, with yours, with token-level rewards.

    `prediction` is your ranking of VARIANCE_ROWS' keys from the smallest variance to the largest.
    Each row's Monte Carlo total (the variances of all T V^2 coordinates summed, over `batches`
    one-batch estimates on the same samples) sits beside the exact total of engines.toy_target.
    """
    if _waiting(ready, "The variance table"):
        return None
    target, theta, N = toy_target(), np.zeros((TOY.T, TOY.V, TOY.V)), TOY.samples
    actions = sample(np.broadcast_to(theta, (batches, *theta.shape)), N, np.random.default_rng(seed))
    shape = actions.shape
    sequence = returns_to_go(torch.as_tensor(_sequence_returns(actions, target)).reshape(-1, TOY.T))
    token = returns_to_go(torch.as_tensor(token_rewards(actions, target)).reshape(-1, TOY.T))
    G = _numbers("returns_to_go", sequence).reshape(shape)
    weights = {"none": G, "loo": _baseline_weights(G, loo_baseline), "token": _numbers("returns_to_go", token).reshape(shape)}
    exact = exact_variances(theta, target, N)
    t, c, k = 0, 0, int(target[0])
    print(f"{'':30s} {'total variance':>15s} {'exact':>9s} {'sd of logit y*_1':>17s}")
    measured = {}
    for key, label in VARIANCE_ROWS.items():
        estimates = batch_estimates(theta, actions, weights[key])
        measured[key] = float(estimates.var(0, ddof=1).sum())
        print(f"{label:30s} {measured[key]:15.5f} {exact[key].sum():9.5f} {estimates[:, t, c, k].std(ddof=1):17.4f}")
    ranking = sorted(VARIANCE_ROWS, key=lambda key: exact[key].sum())
    print(f"From the smallest variance to the largest: {', '.join(ranking)}.")
    if prediction is not None:
        verdict = "right" if list(prediction) == ranking else "not what happened"
        print(f"Your prediction, {', '.join(map(str, prediction))}, was {verdict}.")
    return measured


def train_baselines(returns_to_go, reinforce_loss, loo_baseline, ready=(), seeds: int = RUNS_TOY,
                    steps: int = TOY.steps, seed: int = 3) -> dict | None:
    """The last cell of Exercise 2: several seeds with and without your baseline; steps each needs to reach J >= 0.9."""
    if _waiting(ready, "The training"):
        return None
    result = {}
    for key, baseline in (("no baseline", None), ("leave-one-out", loo_baseline)):
        J = _train(returns_to_go, reinforce_loss, baseline, seeds, steps, seed)
        reached = J >= TOY.threshold
        first = np.where(reached.any(-1), reached.argmax(-1), -1)
        result[key] = first
        shown = ", ".join(str(s) if s >= 0 else "never" for s in first)
        print(f"{key:14s} steps to J >= {TOY.threshold:g}: {shown}   (J after {steps} steps: {J[:, -1].mean():.3f} on average)")
    return result


# --- Part B: learning a reward from comparisons -----------------------------------------------------------------


def binomial_two_sided(k: int, n: int, p: float) -> float:
    """P(a Binomial(n, p) count at least as far into its tail as k): twice the smaller tail, at most 1.

    Exact, because many gaps of the pairs file have few pairs or a probability near 0 or 1,
    where a normal approximation of the label frequency is wrong.
    """
    if p <= 0.0 or p >= 1.0:
        return 1.0 if k == round(p * n) else 0.0
    pmf = [math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p)
                    + (n - i) * math.log1p(-p)) for i in range(n + 1)]
    return min(1.0, 2 * min(sum(pmf[: k + 1]), sum(pmf[k:])))


def exercise3(bt_prob, pairs: PreferencePairs) -> Checkpoint:
    """Exercise 3 (section 7): bt_prob by hand, then against the label frequencies of the pairs file, gap by gap."""

    def checks():
        got = _numbers("bt_prob", _call("bt_prob", bt_prob, np.array([1.0, 0.0, 2.0]), np.array([0.0, 1.0, 2.0]), 0.5), (3,))
        want = 1 / (1 + np.exp(-np.array([2.0, -2.0, 0.0])))
        if not _close(got, want):
            if _close(got, 1 / (1 + np.exp(np.array([2.0, -2.0, 0.0])))):
                raise Wrong("bt_prob gives the chance that b is preferred: P(a > b) = sigma((g_a - g_b) / tau_label) grows with g_a.")
            if _close(got, 1 / (1 + np.exp(-np.array([0.5, -0.5, 0.0])))):
                raise Wrong("bt_prob multiplies the gap by tau_label; Equation 12 divides by it, so that a larger "
                            "tau_label is a noisier rater.")
            if _close(got, 1 / (1 + np.exp(-np.array([1.0, -1.0, 0.0])))):
                raise Wrong("bt_prob ignores tau_label: divide the gap g_a - g_b by it before the sigmoid (Equation 12).")
            if got.min() < 0 or got.max() > 1:
                raise Wrong("bt_prob gave numbers outside [0, 1]: pass (g_a - g_b) / tau_label through the sigmoid.")
            raise Wrong(f"bt_prob(1, 0, 0.5) should be sigma(2) = {want[0]:.3f}, got {got[0]:.3f}: "
                        "P(a > b) = sigma((g_a - g_b) / tau_label).")
        gap = pairs.g_a - pairs.g_b
        p = _numbers("bt_prob", _call("bt_prob", bt_prob, pairs.g_a, pairs.g_b, pairs.tau_label), gap.shape)
        gaps = np.unique(gap)
        limit = ALPHA / len(gaps)
        print(f"{'g_a - g_b':>9s} {'pairs':>6s} {'a preferred':>12s} {'your P(a > b)':>14s} {'chance of a count this far off':>31s}")
        worst = 1.0
        for g in gaps:
            rows = gap == g
            n, k, q = int(rows.sum()), int(pairs.label[rows].sum()), float(p[rows].mean())
            chance = binomial_two_sided(k, n, q)
            worst = min(worst, chance)
            print(f"{g:9.0f} {n:6d} {k / n:12.3f} {q:14.3f} {chance:31.3g}")
        if worst < limit:
            raise Wrong(f"the labels of some gap are too far from your probability to be chance (a count that far off "
                        f"has probability {worst:.1g}, below {limit:.1g}): the rater used tau_label = {pairs.tau_label:g} "
                        "in Equation 12.")
        return (f"bt_prob matches the hand values and the labels of all {len(pairs)} pairs, gap by gap (the least "
                f"likely count has probability {worst:.2f} under your P; below {limit:.1g} would fail).")

    return _run(3, checks)


def exercise4(bt_loss) -> Checkpoint:
    """Exercise 4 (section 8): bt_loss against hand values and PyTorch's binary cross-entropy, and shift invariance."""

    def loss(w, l):
        out = _call("bt_loss", bt_loss, torch.as_tensor(w, dtype=torch.float64), torch.as_tensor(l, dtype=torch.float64))
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            raise Wrong("bt_loss should return one number as a tensor: the mean over the pairs of -log sigma(r_w - r_l).")
        return float(out)

    def checks():
        hand = (((1.0,), (0.2,), 0.371), ((0.2,), (1.0,), 1.171), ((0.0,), (0.0,), 0.693), ((5.0,), (3.0,), 0.127),
                ((105.0,), (103.0,), 0.127), ((2.5,), (1.5,), 0.313))  # section 8's worked examples
        for w, l, want in hand:
            got = loss(w, l)
            if abs(got - want) < 5e-4:
                continue
            if abs(got + want) < 5e-4:
                raise Wrong("bt_loss is negative: it is minus log sigma(r_w - r_l) (Equation 14), so put the minus sign in front.")
            if abs(got - loss(l, w)) > 1e-9 and abs(loss(l, w) - want) < 5e-4:
                raise Wrong("bt_loss swaps winner and loser: it is -log sigma(r_w - r_l), small when the preferred "
                            "response scores higher.")
            raise Wrong(f"bt_loss({w[0]}, {l[0]}) should be {want:.3f} (section 8's worked example), got {got:.3f}: "
                        "-log sigma(r_w - r_l).")
        gen = torch.Generator().manual_seed(4)
        w, l = torch.randn(64, generator=gen, dtype=torch.float64), torch.randn(64, generator=gen, dtype=torch.float64)
        reference = float(F.binary_cross_entropy_with_logits(w - l, torch.ones(64, dtype=torch.float64)))
        got = loss(w, l)
        if abs(got - reference) > 1e-6:
            if abs(got - 64 * reference) < 1e-4:
                raise Wrong("bt_loss sums over the pairs; take the mean, so that its size does not grow with the batch.")
            raise Wrong(f"on 64 random pairs bt_loss gave {got:.4f}, PyTorch's binary cross-entropy with the label "
                        f"'the first wins' {reference:.4f}: -log sigma(r_w - r_l), averaged over the pairs.")
        if abs(loss(w + 7.0, l + 7.0) - got) > 1e-6:
            raise Wrong("adding 7 to both scores changed your loss: only the difference r_w - r_l may enter, since the "
                        "level of a reward is arbitrary (section 7).")
        far = float(_call("bt_loss", bt_loss, torch.tensor([-60.0]), torch.tensor([60.0])))  # float32, as the model scores
        if not math.isfinite(far) or abs(far - 120.0) > 1e-6:
            raise Wrong(f"for r_w - r_l = -120 bt_loss gave {far}, not 120: log(sigmoid(d)) underflows to log 0; "
                        "use F.logsigmoid, which does not.")
        return ("bt_loss matches section 8's hand values and PyTorch's binary cross-entropy, ignores a shift of both "
                "scores, and stays finite for a large gap.")

    return _run(4, checks)


def train_reward(bt_loss, pairs: PreferencePairs, ready=(), settings: RewardModelSettings = REWARD_SETTINGS
                 ) -> TrainedRewardModel | None:
    """The provided training of Exercise 4 with your loss; then the three held-out readings of section 8 beside Acc*."""
    if _waiting(ready, "The reward model's training"):
        return None
    print(f"Training the reward model: {settings.steps} steps of {settings.batch} pairs, {settings.layers} blocks of width "
          f"{settings.d_model}, {1 - settings.heldout:.0%} of the {len(pairs)} pairs (about half a minute) ...")
    trained = train_reward_model(pairs, settings, pair_loss=bt_loss)
    e = trained.evaluation
    print(f"Held-out pairwise accuracy  {e.heldout_accuracy:.3f} ± {e.heldout_se:.3f}  (Acc* = {e.acc_star:.3f}, "
          f"{e.pairs} held-out pairs)")
    print(f"Accuracy against g's order  {e.gold_order_accuracy:.3f}  (pairs whose gold scores differ)")
    print(f"Rank correlation with g     {e.spearman:.3f}  (Spearman, every held-out response)")
    return trained


def probe_table(trained: TrainedRewardModel | None) -> list | None:
    """The provided probe of section 8: hand-written replies, some of a kind the reference model rarely writes, r_phi beside g."""
    if trained is None:
        print("The probe runs once the reward model of Exercise 4 is trained.")
        return None
    with warnings.catch_warnings():  # Jupyter without ipywidgets warns about progress bars the lab never shows
        warnings.filterwarnings("ignore", message="IProgress not found")
        from transformers import AutoTokenizer

    from engines.lm.models import from_pretrained

    tokenizer = from_pretrained(AutoTokenizer, trained.lm or "embedded")
    rows = probe(trained, lambda text: tokenizer(text)["input_ids"])
    print(f"Prompt: {PROBE_PROMPT!r}")
    print(f"{'reply':28s} {'g':>5s} {'r_phi':>7s} {'unknown tokens':>15s}")
    for row in rows:
        print(f"{row.name:28s} {row.g:5.1f} {row.r_phi:7.2f} {row.unknown:15d}")
    return rows


def heldout_scores(trained: TrainedRewardModel, pairs: PreferencePairs) -> np.ndarray:
    """Raw r_phi of both responses of every held-out pair (the split the model was trained with): (2 n_held,)."""
    _, held = split_pairs(pairs, trained.settings.heldout, trained.settings.seed)
    return np.r_[trained.raw(held.prompt_ids, held.ids_a), trained.raw(held.prompt_ids, held.ids_b)]


def exercise5(fit_normalizer, trained: TrainedRewardModel | None, pairs: PreferencePairs,
              folder: Path | str | None = None) -> Checkpoint:
    """Exercise 5 (section 8): fit_normalizer by hand and on the held-out scores, then the model saved with it.

    The file goes to the runs folder's reward-models/ (`folder` overrides), where the live-run
    page lists it and `feedback-lab train-lm --reward reward-model:PATH` loads it.
    """

    def fitted(raw):
        out = _call("fit_normalizer", fit_normalizer, raw)
        try:
            mu, sigma = (float(_numbers("fit_normalizer", v)) for v in out)
        except (TypeError, ValueError):
            raise Wrong("fit_normalizer should return two numbers, (mu, sigma): the mean and the standard deviation "
                        "of the raw scores.") from None
        return mu, sigma

    def checks():
        raw = np.array([1.0, 2.0, 3.0, 4.0])
        mu, sigma = fitted(raw)
        sds = (raw.std(), raw.std(ddof=1))  # Equation 15 does not say which; both fix the scale
        if _close(mu, raw.mean()) and any(_close(sigma, s) for s in sds):
            pass
        elif _close(sigma, raw.mean()) and any(_close(mu, s) for s in sds):
            raise Wrong("fit_normalizer returns (sigma, mu); return (mu, sigma), the mean first.")
        elif _close(mu, raw.mean()) and any(_close(sigma, s**2) for s in sds):
            raise Wrong("fit_normalizer's sigma is the variance; Equation 15 divides by the standard deviation, its square root.")
        else:
            raise Wrong(f"for raw scores (1, 2, 3, 4) fit_normalizer gave ({mu:.3f}, {sigma:.3f}), expected (2.500, "
                        f"{sds[0]:.3f}): the mean and the standard deviation of the scores.")
        if trained is None:
            return ("fit_normalizer is right on the hand example; the check on held-out scores and the save wait for "
                    "Exercise 4's trained model.")
        scores = heldout_scores(trained, pairs)
        mu, sigma = fitted(scores)
        normalised = (scores - mu) / sigma
        if abs(normalised.mean()) > 1e-6 or abs(normalised.std() - 1) > 2 / len(scores):
            raise Wrong(f"on the {len(scores)} held-out scores your normaliser gives mean {normalised.mean():.3f} and "
                        f"sd {normalised.std():.3f}, not 0 and 1: fit mu and sigma on the scores it is given.")
        saved = replace(trained, normalizer=Normalizer(mu=mu, sigma=sigma))
        out = Path(RUNS_DIR / REWARD_MODELS if folder is None else folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"lab9-{len(pairs)}pairs-tau{pairs.tau_label:g}-seed{trained.settings.seed}.pt"
        save_reward_model(saved, path)
        back = load_reward_model(path)
        print(f"Saved to {path}. Use it as the reward of a run: on the live-run page choose 'learned: {path.name}', or\n"
              f"  feedback-lab train-lm --reward {REWARD_PREFIX}{path} --prompt-set feelings")
        return (f"on the held-out responses the normalised scores have mean {normalised.mean():.1e} and sd "
                f"{normalised.std():.3f}; the model was saved with mu = {back.normalizer.mu:.3f}, sigma = "
                f"{back.normalizer.sigma:.3f} and reads back.")

    return _run(5, checks)


def noisier_raters(bt_loss, pairs: PreferencePairs, trained: TrainedRewardModel | None, ready=(),
                   taus=STRETCH_TAUS, settings: RewardModelSettings = REWARD_SETTINGS) -> list | None:
    """The stretch (section 7): the same responses relabelled by noisier raters, the reward model retrained on each.

    The split and the training seed stay fixed, so only the rater's noise changes from row to row;
    the first row is Exercise 4's model, on the pairs' own labels.
    """
    if _waiting(ready, "The stretch") or trained is None:
        return None
    print(f"{'tau_label':>9s} {'Acc*':>6s} {'held-out accuracy':>18s} {'against g':>10s} {'Spearman':>9s}")
    sweep = iter_tau_sweep(pairs, taus, settings, label_seed=pairs.seed, pair_loss=bt_loss)
    rows = []
    for tau, e in itertools.chain([(pairs.tau_label, trained.evaluation)], ((r.tau_label, r.evaluation) for r in sweep)):
        rows.append((tau, e))
        print(f"{tau:9.2f} {e.acc_star:6.3f} {e.heldout_accuracy:11.3f} ± {e.heldout_se:.3f} "
              f"{e.gold_order_accuracy:10.3f} {e.spearman:9.3f}", flush=True)
    return rows
