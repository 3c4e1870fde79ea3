"""Toy target timings: the exact gradient by enumeration (goal under 2 s), the variance experiment and training."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from bench.timing import best_of
from engines.toy_target import (
    ToyTargetSettings,
    all_responses,
    draw_target,
    exact_gradient,
    exact_variances,
    run_training,
    token_logprobs,
    token_rewards,
    variance_experiment,
)


def _autograd_gradient(theta: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The same gradient from torch autograd of J = sum_y pi(y) R(y) over the enumeration."""
    t = torch.tensor(theta, requires_grad=True)
    Y = torch.tensor(all_responses(*theta.shape[:2]))
    R = torch.tensor(token_rewards(Y.numpy(), target).sum(-1))
    (token_logprobs(t, Y).sum(-1).exp() * R).sum().backward()
    return t.grad.numpy()


def main() -> None:
    s = ToyTargetSettings()
    target = draw_target(s.T, s.V, s.target_seed)
    theta = np.random.default_rng(0).normal(size=(s.T, s.V, s.V))
    M = s.V**s.T
    all_responses.cache_clear()
    cold = best_of(1, lambda: exact_gradient(theta, target))
    warm = best_of(5, lambda: exact_gradient(theta, target))
    autograd = best_of(3, lambda: _autograd_gradient(theta, target))
    print(f"toy target exact gradient, {M:,} responses enumerated: {warm:.3f} s "
          f"(first call {cold:.3f} s, goal < 2 s); torch autograd of the enumeration {autograd:.3f} s")
    variances = best_of(3, lambda: exact_variances(theta, target, s.samples))
    print(f"toy target exact variances of all 5 estimators (one enumeration): {variances:.3f} s")
    experiment = best_of(3, lambda: variance_experiment(np.zeros_like(theta), target, s.samples, s.batches,
                                                         np.random.default_rng(0)))
    print(f"toy target variance experiment, {s.batches} batches x N = {s.samples}, 5 estimators: {experiment:.3f} s")
    vectorised = best_of(1, lambda: run_training(s))
    one_seed = dataclasses.replace(s, seeds=1)
    per_seed = best_of(1, lambda: [run_training(dataclasses.replace(one_seed, seed=k)) for k in range(s.seeds)])
    print(f"toy target training 5 estimators x {s.seeds} seeds x {s.steps} steps: vectorised {vectorised:.2f} s, "
          f"per-seed loop {per_seed:.2f} s, ratio {per_seed / vectorised:.1f}x")


if __name__ == "__main__":
    main()
