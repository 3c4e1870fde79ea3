"""A real app server in a subprocess, for the tests that need one (limits, bad input, session lifecycle).

    app_server(*options, env={}) -> Server   starts `python -m app.cli serve --port FREE *options`
                                              and waits for /healthz; stopped at the test's end
    roomy_server                              one per test module: --max-sessions 1000, closed sessions dropped after 1 s
    cpu_taken                                 the CPU of the test session's local Dask cluster held by a paused run
    offer(models=(...), rewards=(...))       the models and reward classifiers the pages offer, for one test

Server and start_server live in bench/servers.py, shared with the browser tests and the benchmarks.
"""

from __future__ import annotations

import os

import pytest

# The tests run offline, the local cluster's workers too: they inherit this process's environment when they start,
# and a test that sets the variable later reaches only this process.
os.environ["HF_HUB_OFFLINE"] = "1"
# This test session's own local cluster trains one job at a time, so that the line tests can fill its CPU with one
# run; servers started by the tests inherit it unless given --max-runs-per-device.
os.environ.setdefault("FEEDBACK_LAB_RUNS_PER_DEVICE", "1")

from bench.servers import Server, start_server, stop_server


@pytest.fixture
def app_server():
    started: list[Server] = []

    def start(*options: str, env: dict[str, str] | None = None) -> Server:
        started.append(start_server(*options, env=env))
        return started[-1]

    yield start
    for server in started:
        stop_server(server)


@pytest.fixture(scope="module")
def roomy_server():
    """One server for a test module, with room for many sessions and closed ones dropped after 1 s."""
    server = start_server("--max-sessions", "1000", "--unused-session-seconds", "1")
    yield server
    stop_server(server)


@pytest.fixture
def offer(monkeypatch):
    """Install what the server offers for this test (as `feedback-lab serve --models ... --rewards ...` does),
    instead of what this machine's cache holds."""
    from app.serving import offered

    def install(models=("embedded",), rewards=()) -> offered.Offer:
        chosen = offered.Offer(tuple(models), tuple(rewards))
        monkeypatch.setattr(offered, "_installed", chosen)
        return chosen

    return install


@pytest.fixture
def cpu_taken(tmp_path_factory):
    """The CPU of this test session's local cluster taken by a paused language-model run (a real job on a real
    worker), so that the next job waits in line; `cpu_taken.free()` stops the run (also at the test's end)."""
    from app.jobs.cluster import current
    from app.jobs.model_jobs import LiveRun
    from engines.lm.settings import LMSettings

    settings = LMSettings(steps=2000, prompts=1, replies=2, T=4, eval_every=2000, eval_prompts=1, eval_replies=1,
                          keep_samples=1, device="cpu")
    run = LiveRun(settings, tmp_path_factory.mktemp("holding-run"), current())
    states = run.states()
    for state in states:
        if state.phase == "running":
            break
    run.pause()
    for state in states:
        if state.phase == "paused":
            break

    class Taken:
        label = "embedded · vader · β 0.05 · 2000 steps"

        @staticmethod
        def free():
            states.close()

    yield Taken
    states.close()
