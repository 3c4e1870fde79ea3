"""The shared state of the sessions: the per-device queue of model jobs and the model cache, under threads."""

import threading
import time

import pytest

from app.run_queue import ModelCache, Queued, RunQueue, on_device, slots_from_environment


def test_one_run_per_device_the_others_wait_in_order():
    queue = RunQueue()
    a, b, c = (queue.join("cpu", name) for name in "abc")
    assert a.granted.is_set() and not b.granted.is_set() and not c.granted.is_set()
    assert [queue.position(t) for t in (a, b, c)] == [0, 1, 2]
    assert queue.overview()[0].running == ("a",) and queue.overview()[0].waiting == ("b", "c")
    queue.leave(a)  # a finished or was stopped: b starts, c moves up
    assert b.granted.is_set() and [queue.position(t) for t in (a, b, c)] == [None, 0, 1]


def test_a_waiting_run_that_leaves_is_taken_out_of_the_line():
    queue = RunQueue()
    a, b, c = (queue.join("cpu", name) for name in "abc")
    queue.leave(b)  # b's tab closed while it waited
    assert queue.position(b) is None and queue.position(c) == 1 and not b.granted.is_set()
    queue.leave(b)  # twice is harmless
    queue.leave(a)
    assert c.granted.is_set() and not b.granted.is_set()


def test_devices_queue_apart_and_slots_allow_more():
    queue = RunQueue()
    cpu, gpu = queue.join("cpu", "x"), queue.join("cuda", "y")
    assert cpu.granted.is_set() and gpu.granted.is_set()
    two = RunQueue(slots=2)
    tickets = [two.join("cpu", str(i)) for i in range(3)]
    assert [t.granted.is_set() for t in tickets] == [True, True, False]
    with pytest.raises(ValueError, match="whole number >= 1"):
        RunQueue(slots=0)


def test_a_waiting_thread_starts_when_the_slot_frees():
    queue = RunQueue()
    first, second = queue.join("cpu", "first"), queue.join("cpu", "second")
    assert not queue.wait(second, timeout=0.01)
    started = []
    worker = threading.Thread(target=lambda: started.append(queue.wait(second, timeout=10)))
    worker.start()
    queue.leave(first)
    worker.join(10)
    assert started == [True]


def test_listeners_hear_every_change_and_run_ids_mark_running_runs():
    queue = RunQueue()
    heard = []
    unsubscribe = queue.subscribe(lambda: heard.append(len(queue.overview())))
    ticket = queue.join("cpu", "run")
    queue.set_run_id(ticket, "20260101-000000-embedded-vader-beta0")
    assert queue.running_ids() == {"20260101-000000-embedded-vader-beta0"}
    queue.leave(ticket)
    assert heard == [1, 1, 0] and queue.running_ids() == set() and queue.overview() == []
    unsubscribe()
    queue.join("cpu", "later")
    assert len(heard) == 3


def test_slots_from_the_environment(monkeypatch):
    monkeypatch.delenv("FEEDBACK_LAB_RUNS_PER_DEVICE", raising=False)
    assert slots_from_environment() == 1
    monkeypatch.setenv("FEEDBACK_LAB_RUNS_PER_DEVICE", "3")
    assert slots_from_environment() == 3
    monkeypatch.setenv("FEEDBACK_LAB_RUNS_PER_DEVICE", "0")
    with pytest.raises(ValueError, match="FEEDBACK_LAB_RUNS_PER_DEVICE"):
        slots_from_environment()


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


def test_a_job_on_a_device_reports_its_place_then_runs_and_leaves_however_it_ends():
    queue = RunQueue()
    run = queue.join("cpu", "a run")

    def work(fail=False):
        yield "first"
        if fail:
            raise RuntimeError("out of memory")
        yield "second"

    job = on_device(queue, "cpu", "a job", work(), poll=0.01)
    assert next(job) == Queued("cpu", 1) and queue.overview()[0].waiting == ("a job",)
    queue.leave(run)
    assert [s for s in job if not isinstance(s, Queued)] == ["first", "second"] and queue.overview() == []
    job = on_device(queue, "cpu", "a job", work(fail=True), poll=0.01)
    assert next(job) == "first"
    with pytest.raises(RuntimeError):
        next(job)
    assert queue.overview() == []
    job = on_device(queue, "cpu", "a job", work(), poll=0.01)
    assert next(job) == "first" and queue.overview()[0].running == ("a job",)
    job.close()  # the tab closed, or Stop: the page's StreamingRun closes the generator
    assert queue.overview() == []


def test_a_queued_sentence_names_the_device_and_the_place():
    assert Queued("cuda", 2).sentence("The training").startswith("The training waits for the cuda (place 2 in line): ")
    assert "(place" not in Queued("cpu", None).sentence("The sweep")


def test_the_cache_keeps_the_newest_results_and_drops_the_oldest():
    cache = ModelCache(results=2)
    for key in "abc":
        cache.keep(key, key.upper())
    assert (cache.result("a"), cache.result("b"), cache.result("c")) == (None, "B", "C")
    cache.keep("b", "B2")  # kept again: the newest now
    cache.keep("d", "D")
    assert (cache.result("b"), cache.result("c"), cache.result("d")) == ("B2", None, "D")
    assert "b" not in cache  # results are apart from loaded models
