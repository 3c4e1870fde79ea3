"""Bandit timings: vectorised training against the seed's per-seed loop, and the Monte Carlo check."""

from __future__ import annotations

import time

import numpy as np

from bench.timing import best_of
from engines.bandit import BASELINES, MEANS, SD, BanditTrainingSettings, monte_carlo, train_all_baselines
from engines.policy_gradient import softmax


def seed_loop(settings: BanditTrainingSettings) -> dict[str, float]:
    """The seed's five lines (section 6.5), one seed at a time; returns mean final J per baseline."""
    mu = np.asarray(settings.means)
    K = len(mu)
    final = {}
    for baseline in BASELINES:
        rng = np.random.default_rng(settings.seed)
        J_end = []
        for _ in range(settings.seeds):
            th, seen = np.zeros(K), 0.0
            for t in range(settings.steps):
                p = softmax(th)
                a = rng.choice(K, p=p)
                r = mu[a] + settings.sd * rng.standard_normal()
                base = {"none": 0.0, "running": seen / max(t, 1), "value": p @ mu}[baseline]
                sc = -p
                sc[a] += 1
                th = th + settings.lr * (r - base) * sc
                seen += r
            J_end.append(softmax(th) @ mu)
        final[baseline] = float(np.mean(J_end))
    return final


def main() -> None:
    settings = BanditTrainingSettings()
    vectorised = best_of(5, lambda: train_all_baselines(settings))
    start = time.perf_counter()
    looped = seed_loop(settings)
    loop_time = time.perf_counter() - start
    runs = train_all_baselines(settings)
    print(f"bandit training {settings.seeds} seeds x {settings.steps} steps x {len(BASELINES)} baselines: "
          f"vectorised {vectorised:.3f} s, per-seed loop {loop_time:.2f} s, ratio {loop_time / vectorised:.0f}x")
    print("  mean J at the end, vectorised / loop: "
          + ", ".join(f"{b} {runs[b].mean_J()[-1]:.3f} / {looped[b]:.3f}" for b in BASELINES))
    for baselines in ((0.0, 6.5), (0.0, 6.5, 0.0, 3.0, 5.0, 6.0, 6.5, 7.0, 8.0, 10.0, 12.0)):
        t = best_of(10, lambda: monte_carlo(MEANS, SD, np.zeros(4), baselines, samples=200_000, seed=0))
        print(f"bandit Monte Carlo 200,000 samples, {len(baselines)} baselines: {1000 * t:.1f} ms")


if __name__ == "__main__":
    main()
