"""Sessions built before they are asked for (app/serving/ready_pages.py), on a real server in this process.

Each test starts `app.serving.server.serve` on its own port with two ready sessions of each page built
ahead, opens pages as a browser does (the GET, whose HTML carries the session's token, then the
websocket and the document) and reads which sessions are waiting from the server's `READY`.
"""

import asyncio
import json
from contextlib import contextmanager

import pytest
from bokeh.util.token import get_session_id
from tornado.websocket import websocket_connect

from app.pages import available_pages, baselines
from app.serving import limits, ready_pages, server
from app.serving.limits import ServerLimits
from bench.servers import _read_message, page_token, pull_document, serving_in_process, wait_until

READY = [f"/{info.route}" for info in available_pages() if info.ready_ahead]


@contextmanager
def serving(monkeypatch, **given):
    """`serve()` in this process with `given` limits and two ready sessions of each page, once all are built."""
    with serving_in_process(monkeypatch, ServerLimits(ready_pages=2, **given)) as url:
        wait_until(lambda: all(len(ready_pages.READY.waiting(path)) == 2 for path in READY), 60,
                   "the ready sessions to be built")
        yield url


def test_the_analytic_pages_are_built_ahead_and_the_pages_with_files_or_jobs_are_not():
    assert {"/baselines", "/toy-target", "/bandit", "/token-world", "/preferences"} <= set(READY)
    assert not {"/live-run", "/kl", "/reward-model", "/lab"} & set(READY)  # run files and jobs: built for their visitor


@pytest.mark.server  # serves pages (in this process) and waits for them to be built ahead
def test_a_visit_gets_the_session_built_first_and_one_is_built_in_its_place(monkeypatch):
    with serving(monkeypatch) as url:
        first, second = ready_pages.READY.waiting("/baselines")
        token = page_token(url, "baselines", "")
        assert get_session_id(token) == first and ready_pages.READY.waiting("/baselines") == [second]
        document = asyncio.run(pull_document(url, "baselines", token))
        assert "Baselines and variance" in document and baselines.PREDICT.split(":")[0] in document  # the page, its first question
        wait_until(lambda: len(ready_pages.READY.waiting("/baselines")) == 2, 30,
                   "a session built in place of the one taken, once the server was quiet")
        assert ready_pages.READY.waiting("/baselines")[0] == second


@pytest.mark.server  # serves pages (in this process) and waits for them to be built ahead
def test_a_link_with_a_query_has_its_page_built_for_it(monkeypatch):
    with serving(monkeypatch) as url:
        waiting = ready_pages.READY.waiting("/baselines")
        token = page_token(url, "baselines", "?b=3.5")
        assert get_session_id(token) not in waiting and ready_pages.READY.waiting("/baselines") == waiting
        document = json.loads(asyncio.run(pull_document(url, "baselines", token)))
        assert "3.5" in json.dumps(document)  # the link's b, applied as it is to any page built for its link


@pytest.mark.server  # serves pages (in this process) and waits for them to be built ahead
def test_a_full_server_refuses_the_visitor_and_keeps_its_ready_session(monkeypatch):
    async def hold_one_then_visit(url: str) -> tuple[str, list[str], str]:
        token = page_token(url, "baselines", "")
        ws = await websocket_connect(url.replace("http", "ws", 1) + "/baselines/ws", subprotocols=["bokeh", token])
        try:
            await _read_message(ws)  # ACK: the first learner's tab holds its websocket, so it counts
            waiting = ready_pages.READY.waiting("/baselines")
            second = page_token(url, "baselines", "")
            return get_session_id(second), waiting, await pull_document(url, "baselines", second)
        finally:
            ws.close()

    with serving(monkeypatch, max_sessions=1) as url:
        refused, waiting, document = asyncio.run(hold_one_then_visit(url))
        assert server.FULL.format(n=1) in document and "fl-full" in document
        assert refused not in waiting and ready_pages.READY.waiting("/baselines") == waiting


@pytest.mark.server  # serves pages (in this process) and waits for them to be built ahead
def test_a_session_handed_out_whose_websocket_never_comes_is_dropped_after_the_unused_lifetime(monkeypatch):
    with serving(monkeypatch, unused_session_seconds=1) as url:
        kept = limits.SESSIONS.open(grace_s=1e9)  # those of this process's earlier servers, never closed, counted too
        page_token(url, "baselines", "")  # a GET, and no websocket: the tab was closed at once
        assert limits.SESSIONS.open(grace_s=1e9) == kept + 1  # admitted, and its place kept while it may still connect
        wait_until(lambda: limits.SESSIONS.open(grace_s=1e9) == kept, 30,
                   "the session to be dropped after its unused lifetime of 1 s")
