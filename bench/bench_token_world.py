"""Timings of the token-world engine: the GAE bias^2 / variance table and tabular training."""

import time

from engines.token_world import TokenWorldSettings, gae_decomposition_exact, gae_decomposition_mc
from engines.token_world_training import TokenWorldTrainingSettings, train_token_world


def _seconds(fn, repeats: int = 3) -> tuple[float, float]:
    """(first call, best of `repeats`) wall-clock seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times[0], min(times)


def main() -> None:
    s = TokenWorldSettings()
    first, best = _seconds(lambda: gae_decomposition_mc(s))
    print(f"token-world GAE decomposition {len(s.lambdas)} lambdas x {len(s.critic_noises) + 1} critics "
          f"on {s.episodes:,} episodes (Monte Carlo): first call {first:.3f} s, best {best:.3f} s (goal < 1 s)")
    first, best = _seconds(lambda: gae_decomposition_exact(s))
    print(f"token-world GAE decomposition, exact over all 2^{s.T} episodes: first call {first:.3f} s, best {best:.3f} s")
    big = TokenWorldSettings(T=16, threshold=10, tokens="")
    first, best = _seconds(lambda: gae_decomposition_exact(big), repeats=1)
    print(f"token-world GAE decomposition, exact over all 2^16 = 65,536 episodes: {first:.3f} s")
    t = TokenWorldTrainingSettings()
    first, _ = _seconds(lambda: train_token_world(t), repeats=1)
    print(f"token-world training {2 + len(t.lambdas)} methods x {t.seeds} seeds x {t.steps} updates "
          f"of {t.episodes} episodes: {first:.3f} s")


if __name__ == "__main__":
    main()
