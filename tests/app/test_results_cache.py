"""The process's cache of deterministic engine results: computed once, shared, bounded, read-only."""

import threading
import time

import numpy as np
import pytest

from app.results_cache import RESULTS, ResultsCache, result_bytes
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


def test_a_stream_walked_to_its_end_is_kept_as_its_last_result_and_a_stopped_one_is_not():
    walks = []

    def partial_sums(n):
        walks.append(n)
        total = np.zeros(2)
        for k in range(n):
            total = total + k
            yield total

    cache = ResultsCache()
    stopped = cache.stream(partial_sums, 4)
    next(stopped), next(stopped)
    stopped.close()  # a newer setting replaced it after two partial results
    assert len(cache) == 0
    walked = list(cache.stream(partial_sums, 4))
    assert [w.tolist() for w in walked] == [[0, 0], [1, 1], [3, 3], [6, 6]] and len(cache) == 1
    (again,) = list(cache.stream(partial_sums, 4))
    assert again is walked[-1] and walks == [4, 4] and (cache.hits, cache.misses) == (1, 2)
    with pytest.raises(ValueError):
        again[0] = 0.0  # shared between sessions: nobody may change it


def test_the_toy_target_experiment_from_the_cache_is_the_one_drawn_to_its_end():
    from engines.toy_target import draw_batches

    cache = ResultsCache()
    *_, drawn = cache.stream(draw_batches, 8, 12, 0, 1)
    (kept,) = cache.stream(draw_batches, 8, 12, 0, 1)
    *_, fresh = draw_batches(8, 12, 0, 1)
    assert kept is drawn and kept.drawn == kept.total == 12
    for name, estimates in fresh.estimates.items():
        np.testing.assert_array_equal(kept.estimates[name], estimates)
