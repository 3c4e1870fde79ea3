"""The class-runs benchmark's learners against a real server (bench/class_runs.py; no timings asserted): learners who
press Start on one page's settings are all shown every step of the one run the server trains, read from the status
line their page writes; learners on two settings get two runs."""

import asyncio
import tempfile
from pathlib import Path

import pytest

from bench.class_runs import class_presses_start, settings_query
from bench.load_test import settled
from bench.servers import start_server, stop_server

pytestmark = pytest.mark.server  # every test here starts a process (an app server, nginx, or the Dask cluster the model jobs run on)


def run_class(learners: int, distinct: int) -> tuple[dict, Path]:
    runs = Path(tempfile.mkdtemp(prefix="fl-class-"))
    server = start_server("--max-sessions", "50", "--max-runs-per-device", "2", env={"FEEDBACK_LAB_RUNS": str(runs)})
    try:
        asyncio.run(settled(server, longest=300))  # its start-up done, as a lesson's server: it is not what is tested here
        report = asyncio.run(class_presses_start(server.url, learners, distinct, 4, 1.0, 60.0, False, 300.0))
        assert "Traceback" not in server.log()
    finally:
        stop_server(server)
    return report, runs


def test_the_learners_settings_go_round_the_distinct_ones():
    assert [settings_query(k, 6, 300) for k in (0, 1, 2, 3, 6)] == [
        "?steps=300&beta=0.05&seed=0", "?steps=300&beta=0&seed=0", "?steps=300&beta=0.2&seed=0", "?steps=300&beta=0.05&seed=1",
        "?steps=300&beta=0.05&seed=0"]


def test_learners_on_the_same_settings_see_every_step_of_one_run_and_two_settings_make_two_runs():
    report, runs = run_class(learners=3, distinct=1)
    assert report["first_step_s"]["missing"] == 0 and report["every_page_done_s"] is not None, report
    assert len(list(runs.glob("*/config.json"))) == 1 and list(report["runs"]) == ["?steps=4&beta=0.05&seed=0"]
    assert report["runs"]["?steps=4&beta=0.05&seed=0"]["learners"] == 3
    report, runs = run_class(learners=4, distinct=2)
    assert report["first_step_s"]["missing"] == 0 and report["every_page_done_s"] is not None, report
    assert len(list(runs.glob("*/config.json"))) == 2 and all(r["learners"] == 2 for r in report["runs"].values())
