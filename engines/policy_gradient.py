"""The policy-gradient core shared by every page: returns, baselines, the REINFORCE loss, TD and GAE.

Seed 000 ("Reinforcement learning, from scratch") sections 6.3 to 6.10 and seed 001
("Reinforcement and Preference Learning") sections 2 to 5 derive everything here.
Functions take numpy arrays or torch tensors of shape (N, T) (samples by token
positions) unless stated otherwise, and return the same kind they were given, so
the analytic pages run on numpy alone and the language-model run on torch.
"""

from __future__ import annotations

import numpy as np


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _flip(x, axis: int):
    return x.flip(axis) if _is_torch(x) else np.flip(x, axis)


def _sum_keep(x, axis: int):
    return x.sum(axis, keepdim=True) if _is_torch(x) else x.sum(axis, keepdims=True)


def returns_to_go(rewards, gamma: float = 1.0):
    """Reward-to-go, seed 000 section 6.3 and seed 001 equation 1.

        G_t = sum_{k=0}^{T-1-t} gamma^k r_{t+k} = r_t + gamma G_{t+1},   G_T = 0

    `rewards` has shape (..., T); the result has the same shape. With gamma = 1 this is
    the seed's `rewards.flip(-1).cumsum(-1).flip(-1)`; with gamma < 1 the backward
    recursion (a loop over the T positions, vectorised over everything else).
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}.")
    if gamma == 1.0:
        flipped = _flip(rewards, -1)  # (..., T), last token first
        cumulative = flipped.cumsum(-1) if _is_torch(rewards) else np.cumsum(flipped, -1)
        G = _flip(cumulative, -1)
        return G if _is_torch(G) else np.ascontiguousarray(G)  # a flipped view has negative strides
    G = rewards * 0.0  # zeros of the same kind, dtype and shape
    running = rewards[..., -1] * 0.0  # (...,) G_{t+1}, zero after the last token
    for t in reversed(range(rewards.shape[-1])):
        running = rewards[..., t] + gamma * running
        G[..., t] = running
    return G


def loo_baseline(returns, axis: int = 0):
    """Leave-one-out baseline, seed 001 equation 9 (RLOO, Ahmadian et al. 2024).

        b^(i) = 1/(N-1) sum_{j != i} G^(j)

    computed position by position along the sample axis `axis` (length N >= 2).
    For the language model, `returns` is (prompts, K, T) and axis=1 groups the K
    replies of each prompt, as seed 000 section 6.11 does.
    """
    N = returns.shape[axis]
    if N < 2:
        raise ValueError(f"the leave-one-out baseline needs at least 2 samples, got {N}.")
    return (_sum_keep(returns, axis) - returns) / (N - 1)  # same shape as returns


def batch_mean_baseline(returns, axis: int = 0):
    """Batch-mean baseline, seed 001 section 4: b = (1/N) sum_j G^(j), own sample included.

    Because it includes the sample itself, R_i - mean = (1 - 1/N) (R_i - b_loo^(i))
    on every batch: the batch-mean estimate is the leave-one-out estimate shrunk by 1 - 1/N.
    """
    N = returns.shape[axis]
    return _sum_keep(returns, axis) / N  # length 1 along `axis`; broadcasts against returns


GROUP_ESTIMATORS = ("none", "mean", "loo", "grpo", "dr_grpo")
"""The group advantages `group_advantages` computes (the K replies to one prompt are the group)."""
GRPO_EPS = 1e-4
"""Added to GRPO's standard deviation so that a group of equal rewards divides 0 by 1e-4, not by 0."""


def group_advantages(returns, estimator: str, axis: int = 0):
    """A^(i) for the K samples of one group along `axis` (numpy or torch, any shape):

        none     A_i = G_i
        mean     A_i = G_i - mean(G)                         seed 001 section 4's batch mean
        loo      A_i = G_i - 1/(K-1) sum_{j != i} G_j        seed 001 equation 9, RLOO
        grpo     A_i = (G_i - mean(G)) / (std(G) + 1e-4)      Shao et al. 2024 (DeepSeekMath), 4.1.2
        dr_grpo  A_i = G_i - mean(G)                          Liu et al. 2025 (Dr. GRPO)

    std is the sample standard deviation (K - 1 in the denominator), as torch.std and TRL's
    GRPOTrainer compute it. Dr. GRPO's advantage is the batch mean's: what it changes is the
    loss, which divides the sum over a reply's tokens by one constant (the longest reply
    allowed) instead of by that reply's own length |y_i|, so that a long wrong reply is not
    penalised less per token than a short one. With replies of one length, as here, the
    two differ only by that constant.
    """
    if estimator == "none":
        return returns * 1.0
    if estimator == "loo":
        return returns - loo_baseline(returns, axis)
    centred = returns - batch_mean_baseline(returns, axis)
    if estimator in ("mean", "dr_grpo"):
        return centred
    if estimator == "grpo":
        std = returns.std(axis, keepdim=True) if _is_torch(returns) else returns.std(axis, ddof=1, keepdims=True)
        return centred / (std + GRPO_EPS)
    raise ValueError(f"the estimator must be one of {', '.join(GROUP_ESTIMATORS)}, got {estimator!r}.")


def shaped_rewards(logp, ref_logp, R, beta: float):
    """Seed 000 section 6.12: r_t = -beta (logp_t - ref_logp_t) + 1[t = T-1] R, (N, T) and (N,) -> (N, T)."""
    r = -beta * (logp - ref_logp)
    r[:, -1] += R
    return r


def reinforce_loss(logp, returns, baseline=0.0):
    """Per-token REINFORCE loss, seed 001 equations 6 and 10 (section 5's code).

        L_PG = -(1/N) sum_i sum_t (G_t^(i) - b_t^(i)) log pi(y_t^(i) | s_t^(i))

    `logp` and `returns` are torch tensors (N, T); the weights G - b are detached, since
    the reward is never differentiated. Its gradient is minus the REINFORCE estimate.
    """
    weight = (returns - baseline).detach()  # (N, T) constants
    return -(weight * logp).sum(-1).mean()  # sum over t, mean over samples


def reinforce_estimate(score, weight):
    """The REINFORCE gradient estimate, seed 001 equation 5 and seed 000 section 6.4.

        g_hat = (1/N) sum_i sum_t A_t^(i) grad log pi(a_t^(i) | s_t^(i))

    For models whose score vectors are known in closed form. `score` is (..., N, T, P)
    (the gradient of each token's log-probability with respect to P parameters) and
    `weight` is (..., N, T) (G - b, or any advantage). Returns (..., P).
    """
    per_token = weight[..., None] * score  # (..., N, T, P)
    return per_token.sum(-2).mean(-2)  # sum over t, then mean over the N samples


def softmax(theta, axis: int = -1):
    """pi_k = exp(theta_k) / sum_j exp(theta_j), stabilised by subtracting the maximum."""
    z = np.exp(theta - np.max(theta, axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def log_softmax(theta, axis: int = -1):
    """log pi_k = theta_k - log sum_j exp(theta_j), seed 000 section 6.4."""
    shifted = theta - np.max(theta, axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def softmax_score(theta, actions):
    """Score vector of a softmax policy, seed 000 section 6.4:

        d log pi_a / d theta_k = 1[k = a] - pi_k

    `theta` is (..., K) logits, `actions` an integer array of shape (...) or (..., N)
    broadcastable against theta's leading axes; returns onehot(a) - pi, shape (..., K)
    (or (..., N, K) for a batch of N actions per policy).
    """
    theta = np.asarray(theta, dtype=float)
    actions = np.asarray(actions)
    K = theta.shape[-1]
    pi = softmax(theta)  # (..., K)
    onehot = actions[..., None] == np.arange(K)  # (..., [N,] K)
    if onehot.ndim > pi.ndim:  # a batch of N actions per policy
        pi = pi[..., None, :]
    return onehot - pi


def td_errors(rewards, values, gamma: float = 1.0) -> np.ndarray:
    """TD errors, seed 000 section 6.9:

        delta_t = r_t + gamma V(s_{t+1}) - V(s_t),   V(s_T) = 0 (the episode is over)

    numpy arrays: `rewards` and `values` are (..., N, T) and broadcast together.
    """
    values = np.asarray(values, dtype=float)
    nxt = np.concatenate([values[..., 1:], np.zeros(values.shape[:-1] + (1,))], -1)  # V(s_t+1)
    return rewards + gamma * nxt - values


def gae(rewards, values, gamma: float = 1.0, lam=0.95) -> np.ndarray:
    """Generalized advantage estimation, seed 000 section 6.10 (Schulman et al. 2015):

        A_t = sum_{l=0}^{T-1-t} (gamma lam)^l delta_{t+l} = delta_t + gamma lam A_{t+1},   A_T = 0

    computed by the backward recursion of the seed's code, on numpy arrays (..., N, T).
    `lam` is a number or an array broadcasting against the episode axes (rewards.shape[:-1]):
    lam of shape (L, 1, 1) with values (C, N, T) gives all L lambdas for all C critics at
    once, (L, C, N, T).
    """
    delta = td_errors(rewards, values, gamma)  # (..., N, T)
    coef = gamma * np.asarray(lam, dtype=float)
    T = delta.shape[-1]
    delta = np.ascontiguousarray(np.moveaxis(delta, -1, 0))  # (T, ...): time first, one block per step
    adv = np.empty((T,) + np.broadcast_shapes(coef.shape, delta.shape[1:]))
    adv[T - 1] = delta[T - 1]  # nothing comes after the last token
    for t in reversed(range(T - 1)):  # walk backwards: A_t = delta_t + gamma lam A_{t+1}
        np.multiply(coef, adv[t + 1], out=adv[t, ...])
        adv[t] += delta[t]
    return np.moveaxis(adv, 0, -1)
