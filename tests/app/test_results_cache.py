"""The process's cache of deterministic engine results: computed once, shared, bounded, read-only."""

import threading
import time

import numpy as np
import pytest

from app.serving.results_cache import RESULTS, ResultsCache, result_bytes
from engines.bandit import MEANS, monte_carlo


def test_the_same_arguments_compute_once_and_share_one_read_only_result():
    calls = []

    def square(x, power=2):
        calls.append(x)
        return np.full(3, float(x) ** power)

    cache = ResultsCache()
    first, again = cache.get(square, 3), cache.get(square, 3)
    assert again is first and calls == [3] and (cache.hits, cache.misses) == (1, 1)
    assert cache.get(square, 3, power=3) is not first and calls == [3, 3]  # keyword arguments are part of the key
    with pytest.raises(ValueError):
        first[0] = 0.0  # shared between sessions: nobody may change it


def test_thirty_threads_asking_at_once_compute_once():
    calls = []

    def slow(x):
        calls.append(x)
        time.sleep(0.2)
        return x + 1

    cache = ResultsCache()
    answers = []
    threads = [threading.Thread(target=lambda: answers.append(cache.get(slow, 41))) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [42] * 30 and calls == [41]


def test_the_bound_drops_the_least_recently_used_and_an_error_is_not_kept():
    one = np.zeros(1000).nbytes + result_bytes(None)  # what one result below counts for
    cache = ResultsCache(max_bytes=2 * one)
    zeros = lambda seed: np.zeros(1000)  # noqa: E731
    a = cache.get(zeros, 1)
    cache.get(zeros, 2)
    assert cache.get(zeros, 1) is a  # 1 is now the most recently used
    cache.get(zeros, 3)
    assert len(cache) == 2 and cache.bytes <= cache.max_bytes
    assert cache.get(zeros, 1) is a and cache.misses == 3  # 2 was dropped, not 1

    def broken(x):
        raise ValueError(f"bad {x}")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad 1"):
            cache.get(broken, 1)
    assert cache.misses == 5


def test_a_shared_random_result_is_the_one_the_learner_would_have_computed():
    args = (MEANS, 1.0, (0.0, 0.0, 0.0, 2.0), (0.0, 6.5), 20_000, 7)
    shared = RESULTS.get(monte_carlo, *args)
    own = monte_carlo(*args)
    assert np.array_equal(shared.total_variance, own.total_variance) and shared.b_star == own.b_star
