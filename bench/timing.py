"""The one timing helper the benchmarks share."""

import time


def best_of(repeats: int, fn) -> float:
    """The fastest of `repeats` calls of fn(), in seconds: the least disturbed by other work."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
