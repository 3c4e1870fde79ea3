"""The model cache every job of a process shares (a Dask worker's models, a web process's kept results), under threads."""

import threading
import time

import pytest

from app.jobs.model_cache import ModelCache


def test_the_cache_loads_each_key_once_even_when_asked_at_once():
    cache, loads = ModelCache(), []

    def load():
        loads.append(1)
        time.sleep(0.05)  # long enough that the other threads ask while it loads
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get(("model", "m", "cpu"), load))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(loads) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert ("model", "m", "cpu") in cache and ("model", "m", "cuda") not in cache


def test_a_failed_load_is_not_kept():
    cache, calls = ModelCache(), []

    def load():
        calls.append(1)
        if len(calls) == 1:
            raise OSError("not there yet")
        return "model"

    with pytest.raises(OSError):
        cache.get("k", load)
    assert "k" not in cache
    assert cache.get("k", load) == "model" and len(calls) == 2


def test_model_cache_loads_a_model_and_a_reward_once_under_the_keys_pages_share():
    import torch

    cache = ModelCache()
    cpu = torch.device("cpu")
    model, tokenizer = cache.model("embedded", cpu)
    assert cache.model("embedded", cpu)[0] is model and ("model", "embedded", "cpu") in cache
    reward = cache.reward("vader", cpu)
    assert cache.reward("vader", cpu) is reward and ("reward", "vader", "cpu") in cache
    assert len(tokenizer) == model.config.vocab_size


def test_the_cache_keeps_the_newest_results_and_drops_the_oldest():
    cache = ModelCache(results=2)
    for key in "abc":
        cache.keep(key, key.upper())
    assert (cache.result("a"), cache.result("b"), cache.result("c")) == (None, "B", "C")
    cache.keep("b", "B2")  # kept again: the newest now
    cache.keep("d", "D")
    assert (cache.result("b"), cache.result("c"), cache.result("d")) == ("B2", None, "D")
    assert "b" not in cache  # results are apart from loaded models
