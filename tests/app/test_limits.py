"""Server limits: defaults, environment variables, options that win, refusals, and the limits in a real server."""

import dataclasses
import threading
import time

import pytest

from app.cli import build_parser
from app.jobs.cluster import RUNS_PER_DEVICE
from app.serving import limits
from app.serving.limits import ServerLimits, SessionCount, from_environment
from app.serving.server import FULL


def test_every_limit_has_a_default_an_option_a_variable_and_one_line_of_help():
    help_text = build_parser()._subparsers._group_actions[0].choices["serve"].format_help()
    assert ServerLimits().max_runs_per_device == RUNS_PER_DEVICE and ServerLimits().max_sessions == 60
    for field in dataclasses.fields(ServerLimits):
        assert limits.option(field.name) in help_text
        assert limits.variable(field.name).startswith("FEEDBACK_LAB_")
        assert limits.variable(field.name) in help_text.replace("\n", "").replace(" ", "")
    assert limits.variable("max_runs_per_device") == "FEEDBACK_LAB_RUNS_PER_DEVICE"  # the run queue's own


def test_an_option_wins_over_the_environment_which_wins_over_the_default():
    environ = {"FEEDBACK_LAB_MAX_SESSIONS": "12", "FEEDBACK_LAB_MAX_STEPS": "300", "FEEDBACK_LAB_RUNS_PER_DEVICE": "2"}
    args = build_parser().parse_args(["serve", "--max-sessions", "5", "--unused-session-seconds", "2.5"])
    got = from_environment(args, environ)
    assert (got.max_sessions, got.max_steps, got.max_runs_per_device, got.unused_session_seconds) == (5, 300, 2, 2.5)
    assert got.max_prompts == ServerLimits().max_prompts
    assert from_environment(None, {}) == ServerLimits()


@pytest.mark.parametrize(
    "environ",
    [{"FEEDBACK_LAB_MAX_SESSIONS": "0"}, {"FEEDBACK_LAB_MAX_SESSIONS": "many"}, {"FEEDBACK_LAB_COMPUTE_SECONDS": "nan"},
     {"FEEDBACK_LAB_COMPUTE_SECONDS": "inf"}, {"FEEDBACK_LAB_UNUSED_SESSION_SECONDS": "-1"}, {"FEEDBACK_LAB_WEBSOCKET_MAX_BYTES": "10"},
     {"FEEDBACK_LAB_READY_PAGES": "-1"}, {"FEEDBACK_LAB_READY_PAGES": "2.5"}],
)
def test_a_bad_limit_is_refused_with_one_sentence(environ):
    with pytest.raises(ValueError) as error:
        from_environment(None, environ)
    message = str(error.value)
    assert message.endswith(".") and message.count(". ") == 0 and "\n" not in message


def test_ready_pages_may_be_switched_off_with_zero_where_the_other_counts_need_one():
    assert from_environment(None, {"FEEDBACK_LAB_READY_PAGES": "0"}).ready_pages == 0
    with pytest.raises(ValueError, match="--ready-pages must be a whole number >= 0, got -1."):
        ServerLimits(ready_pages=-1)


def test_serve_refuses_a_bad_option_with_status_2(capsys):
    from app.cli import main

    assert main(["serve", "--max-sessions", "0"]) == 2
    assert "--max-sessions must be a whole number >= 1" in capsys.readouterr().err


def test_session_count_is_thread_safe_and_stops_at_the_limit():
    count = SessionCount()
    tickets = []
    threads = [threading.Thread(target=lambda: tickets.append(count.enter(50))) for _ in range(80)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    admitted = [t for t in tickets if t is not None]
    assert len(admitted) == 50 and count.open() == 50
    for ticket in admitted:
        count.leave(ticket)
    assert count.open() == 0 and count.enter(1) is not None


class FakeSession:
    """What SessionCount reads of Bokeh's ServerSession."""

    def __init__(self):
        self.connection_count = 0


class FakeContext:
    def __init__(self):
        self.session = None


def test_a_session_is_open_while_built_connected_or_not_yet_connected_and_a_closed_tab_frees_its_place():
    count, contexts = SessionCount(), [FakeContext() for _ in range(3)]
    tickets = [count.enter(3, context, grace_s=15.0) for context in contexts]
    assert None not in tickets and count.enter(3, FakeContext()) is None  # three being built
    for context in contexts:
        context.session = FakeSession()
    assert count.open() == 3  # pages sent, websockets not yet connected: within the grace
    contexts[0].session.connection_count = 1
    count.connected(tickets[1])  # its page was drawn (Panel's onload), its tab closed since
    assert count.open() == 2
    contexts[0].session.connection_count = 0  # its tab closed: it had been seen connected
    tickets[2].entered -= 16.0  # admitted 16 s ago and never connected: past the grace
    assert count.open() == 0
    count.leave(tickets[0])
    assert count.open() == 0 and count.enter(1, FakeContext()) is not None


def test_a_real_server_answers_health_admin_and_turns_the_visitor_beyond_max_sessions_away(app_server):
    import asyncio

    from bench.load_test import PageSession, Refused

    server = app_server("--admin", "--max-sessions", "2", "--unused-session-seconds", "60")
    assert server.get("/healthz") == (200, "ok")
    assert server.get("/admin")[0] == 200

    async def tabs():
        first, second = [await PageSession.open(server.url, "") for _ in range(2)]
        with pytest.raises(Refused):  # one sentence, not a hang
            await PageSession.open(server.url, "")
        await first.close()  # a closed tab frees its place at once, long before its session is dropped
        for _ in range(50):
            try:
                third = await PageSession.open(server.url, "")
                break
            except Refused:
                await asyncio.sleep(0.1)  # the close is still on its way to the server
        else:
            pytest.fail("the place of a closed tab did not come back")
        await second.close()
        await third.close()

    asyncio.run(tabs())
    assert FULL.format(n=2) not in server.open_session("")
    assert "Traceback" not in server.log()


def test_without_admin_there_is_no_admin_page(app_server):
    server = app_server()
    assert server.get("/healthz") == (200, "ok")
    assert server.get("/admin")[0] == 404


@pytest.mark.server
def test_panel_serve_of_the_script_counts_sessions_too(tmp_path):
    """`PYTHONPATH=. panel serve app/serving/server.py` reads the limits from FEEDBACK_LAB_* and turns the visitor away;
    a session that ends gives its place back, and its end callback runs without failing (the log says none failed)."""
    import os
    import subprocess
    import sys

    from bench.servers import ROOT, Server, free_port, stop_server, wait_until_up

    port = free_port()
    log = tmp_path / "panel.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FEEDBACK_LAB_MAX_SESSIONS": "1", "FEEDBACK_LAB_RUNS": str(tmp_path),
           "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "app/serving/server.py", "--port", str(port), "--unused-session-lifetime", "1000",
         "--check-unused-sessions", "200"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"),
    )
    server = Server(f"http://localhost:{port}", process, log)
    try:
        wait_until_up(f"{server.url}/server", process, timeout=90)  # this first page is a session, closed at once
        deadline = time.monotonic() + 60
        while FULL.format(n=1) in (shown := server.open_session("server", "?page=baselines")) and time.monotonic() < deadline:
            time.sleep(0.3)  # the first session is destroyed once unused for a second
        assert FULL.format(n=1) not in shown and "Traceback" not in shown
    finally:
        stop_server(server)
    assert "Traceback" not in server.log()
    assert "callback" not in server.log() and "failed" not in server.log()
