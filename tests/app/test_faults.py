"""Faults inside a session: a job past the compute limit, a job that raises, a tab closed during a job.

Each is answered on the page with one sentence (the job's notice), the error is logged with its
traceback on the "feedback_lab" logger, and the session and the server go on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from types import SimpleNamespace

import panel as pn
import pytest

import app.pages.bandit as bandit
import app.pages.bandit.jobs as bandit_jobs
import app.pages.token_world as token_world
import app.pages.toy_target as toy_target
from app.pages import PageInfo
from app.serving import limits, server
from app.serving.limits import ServerLimits
from bench.servers import open_session_document, serving_in_process
from widgets.streaming import FAILED, THREAD_NAME, TIME_LIMIT, StreamingRun


def endless(stop_after: int | None = None):
    """A job that never ends by itself: a snapshot every 10 ms."""
    n = 0
    while stop_after is None or n < stop_after:
        n += 1
        yield n
        time.sleep(0.01)


@pytest.fixture
def tiny_compute_limit(monkeypatch):
    """The limits in force, with a compute limit no real job can stay under."""
    monkeypatch.setattr(limits, "_installed", ServerLimits(compute_seconds=1e-6))


def one_sentence(text: str) -> bool:
    return text.endswith(".") and ". " not in text and "\n" not in text and "Traceback" not in text


def test_a_job_past_its_time_limit_is_stopped_with_one_sentence_and_the_next_job_runs():
    shown, done = [], []
    run = StreamingRun(shown.append, done.append, period=0.0, time_limit=0.2)
    run.start(endless)
    run.join(10)
    assert not run.running and done == [False]
    assert run.notice.visible and run.notice.object == TIME_LIMIT.format(seconds=0.2) and one_sentence(run.notice.object)
    assert "stopped after 0.2 s, the server's limit per job; ask for fewer samples" in run.notice.object
    assert shown and shown == sorted(shown)  # the partial results up to the cut were delivered

    shown.clear()
    run.start(lambda: endless(stop_after=3))  # a job within the limit: the notice goes, the job finishes
    run.join(10)
    assert done == [False, True] and shown[-1] == 3 and not run.notice.visible


def test_jobs_with_a_compute_limit_take_turns_and_their_wait_is_not_counted():
    """However many sessions run a Monte Carlo, the web process's event loop competes with one of them for the
    interpreter lock: such jobs make their snapshots one at a time, and a job's time waiting its turn is not
    counted against its limit."""
    inside, most = [0], [0]
    lock = threading.Lock()

    def busy(n: int):
        for k in range(n):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.02)  # a chunk of work (sleeping holds no lock, so only COMPUTING can keep them apart)
            with lock:
                inside[0] -= 1
            yield k

    done = []
    runs = [StreamingRun(lambda _s: None, done.append, period=0.0, time_limit=0.5) for _ in range(4)]
    for run in runs:
        run.start(lambda: busy(10))  # 0.2 s of work each, 0.8 s in all: past the limit if waiting counted
    for run in runs:
        run.join(30)
    assert most[0] == 1 and done == [True] * 4 and not any(run.notice.visible for run in runs)
    free = StreamingRun(lambda _s: None, done.append, period=0.0)  # no compute limit: not in the turns
    free.start(lambda: busy(3))
    free.join(10)
    assert done[-1] is True


def test_join_waits_for_the_replaced_jobs_too():
    """A replaced job runs on to its next snapshot; join (a test's teardown, the process's exit) waits for it as well."""
    release = threading.Event()

    def slow_first():
        release.wait(10)  # e.g. importing torch before its first snapshot
        yield 1

    run = StreamingRun(lambda _: None, period=0.0)
    run.start(slow_first)
    first = run._thread
    run.start(lambda: endless(stop_after=1))
    threading.Timer(0.3, release.set).start()
    run.join(10)
    assert not first.is_alive() and not run._thread.is_alive()


LIMITED_JOBS = [
    (bandit.page, lambda pg: pg.training.start(), lambda pg: pg.training.job.run),
    (token_world.page, lambda pg: pg.mc.start(), lambda pg: pg.mc.job.run),
    (token_world.page, lambda pg: pg.training.start(), lambda pg: pg.training.job.run),
    (toy_target.page, lambda pg: pg.experiment.start(), lambda pg: pg.experiment.job.run),
    (toy_target.page, lambda pg: pg.training.start(), lambda pg: pg.training.job.run),
]


@pytest.mark.parametrize("make,start,job", LIMITED_JOBS, ids=["bandit-training", "token-world-mc", "token-world-training",
                                                              "toy-target-experiment", "toy-target-training"])
def test_every_analytic_job_obeys_the_servers_compute_limit(tiny_compute_limit, make, start, job):
    pg = make()
    try:
        (getattr(pg, start) if isinstance(start, str) else (lambda: start(pg)))()
        run = job(pg)
        run.join(60)
        assert not run.running
        assert run.notice.object == TIME_LIMIT.format(seconds=1e-6) and run.notice.visible
    finally:
        pg.close()


def test_an_exception_in_a_job_is_one_sentence_for_its_user_logged_with_its_traceback_and_the_next_job_works(caplog):
    def broken():
        yield 1
        raise ZeroDivisionError("a bug in an engine")

    done = []
    run = StreamingRun(lambda _snapshot: None, done.append, period=0.0)
    with caplog.at_level(logging.ERROR, logger="feedback_lab"):
        run.start(broken)
        run.join(10)
    assert done == [False] and run.notice.visible
    assert run.notice.object == FAILED.format(kind="ZeroDivisionError") and one_sentence(run.notice.object)
    records = [r for r in caplog.records if r.name == "feedback_lab"]
    assert len(records) == 1 and records[0].exc_info[0] is ZeroDivisionError  # the traceback goes to the log

    run.start(lambda: endless(stop_after=2))
    run.join(10)
    assert done == [False, True] and not run.notice.visible


def test_a_failing_engine_on_a_page_leaves_the_page_working(monkeypatch, caplog):
    pg = bandit.page()
    original = bandit_jobs.training_views

    def failing(settings, every):
        raise MemoryError("the engine ran out of memory")
        yield  # a generator, as the engine's is

    try:
        monkeypatch.setattr(bandit_jobs, "training_views", failing)
        with caplog.at_level(logging.ERROR, logger="feedback_lab"):
            pg.training.start()
            pg.training.job.run.join(30)
        assert pg.training.job.run.notice.object == FAILED.format(kind="MemoryError") and not pg.training.job.controls.running
        assert any(r.exc_info and r.exc_info[0] is MemoryError for r in caplog.records)
        monkeypatch.setattr(bandit_jobs, "training_views", original)
        pg.training.start()
        pg.training.job.run.join(60)
        assert not pg.training.job.run.notice.visible and pg.training.job.controls.progress == 1.0 and pg.training.view is not None
    finally:
        pg.close()


class LongJobPage(pn.viewable.Viewer):
    """A page whose job never ends by itself, started as the session is built."""

    started: list[threading.Thread] = []

    def __init__(self, **params):
        super().__init__(**params)
        self.text = pn.pane.Markdown("A long job runs.")
        self.snapshots: list[int] = []  # kept off the document, so that the session's first message is its document
        self.run = StreamingRun(self.snapshots.append)
        self.run.start(endless)
        LongJobPage.started.append(self.run._thread)

    def close(self) -> None:
        self.run.stop()

    def __panel__(self):
        return self.text


def test_a_closed_tabs_job_stops_within_five_seconds(monkeypatch):
    """A real server in this process (so its threads can be seen), built by app.serving.server.serve with the page
    wired as every page is; the session is opened over its websocket and closed."""
    info = PageInfo(name="long_job", route="long-job", module=SimpleNamespace(page=LongJobPage, TITLE="Long job", SUMMARY=""))
    monkeypatch.setattr(server, "routes", lambda: {"/long-job": server.admitted(lambda: server.build_page(info, [info], server.route_link))})
    monkeypatch.setattr(server, "titles", lambda: {"/long-job": "Long job"})
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args))
    with serving_in_process(monkeypatch, ServerLimits(unused_session_seconds=1)) as url:
        LongJobPage.started.clear()
        document = asyncio.run(open_session_document(url, "long-job", ""))
        assert "A long job runs." in document and len(LongJobPage.started) == 1
        worker = LongJobPage.started[0]
        assert worker.name.startswith(THREAD_NAME) and worker in threading.enumerate()
        worker.join(5.0)
        assert not worker.is_alive(), "the closed tab's job still runs 5 s after its websocket closed"
        assert errors == []  # the late snapshots of a destroyed session are dropped without an error


def test_an_exception_in_a_sessions_callback_is_logged_with_its_traceback_and_told_in_one_sentence(caplog):
    try:
        {}["missing"]
    except KeyError as error:
        bug = error
    refused = ValueError("Integer parameter 'TokenWorldPage.seeds' must be at least 1, not -5.")
    with caplog.at_level(logging.WARNING, logger="feedback_lab"):
        server.session_exception(bug)
        server.session_exception(refused)
    bug_record, refused_record = [r for r in caplog.records if r.name == "feedback_lab"]
    assert bug_record.exc_info[1] is bug and refused_record.exc_info is None  # a refused value is no bug
    assert server.exception_message(bug) == server.BROKEN.format(kind="KeyError")
    assert server.exception_message(refused).startswith("That value was not taken")
    for message in (server.exception_message(bug), server.exception_message(refused)):
        assert message.endswith(".") and "\n" not in message and "Traceback" not in message
