"""`feedback-lab serve --class` (`make lesson`), started as a teacher starts it: it prints the URL learners type, with
this machine's network address, its QR code and the teacher's link; a learner's Chromium at that URL gets a working
page and the room view shows the URL as a QR code; a page at a name the server did not print gets no session.

The name not printed is made up and mapped to 127.0.0.1 inside Chromium (--host-resolver-rules), as a host name,
another interface's address or a hosts-file entry would reach the machine. Before app/serving/origins.py, Chromium's
websocket to that same name was same-origin, which Tornado 6.6 lets through without the server's list, so the page
worked.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from app.serving.classroom import NO_LAN, lan_address
from bench.servers import CHROMIUM, CHROMIUM_ARGS, free_port, get_page, start_server, stop_server, wait_until

TOKEN = "the-lesson-command-teacher"
UNLISTED = "madeup.test"
"""A name that reaches the machine (inside Chromium) but that the server did not print."""


@pytest.fixture(scope="module")
def lesson():
    port = free_port()
    server = start_server("--class", port=port, env={"FEEDBACK_LAB_TEACHER_TOKEN": TOKEN})
    lan = lan_address()
    server.learners = f"{lan or 'localhost'}:{port}"
    server.port = port
    yield server
    stop_server(server)


@pytest.fixture
def chromium(browser_type):
    """A Chromium of its own, that resolves UNLISTED to this machine."""
    launched = browser_type.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {UNLISTED} 127.0.0.1"])
    yield launched
    launched.close()


def documents(page) -> int:
    """How many documents Bokeh's client holds: one once the page's session has opened over its websocket."""
    return page.evaluate("() => window.Bokeh ? Bokeh.documents.length : 0")


def test_it_prints_the_learners_url_with_the_network_address_its_qr_code_and_the_teachers_link(lesson):
    printed = lesson.output()
    assert f"Learners open http://{lesson.learners}/ (or scan this code):" in printed, printed
    if lan_address() is None:
        assert NO_LAN in printed
    else:
        assert not lesson.learners.startswith("localhost")
    assert re.search(r"^[█▀▄ ]{25,}$", printed, re.M), printed  # the QR code's rows
    assert f"The teacher's room view (keep this link to yourself): http://localhost:{lesson.port}/room?token={TOKEN}" in printed
    assert "A new lesson began" in printed
    assert "0.0.0.0" not in printed


def test_a_learner_at_the_printed_url_gets_a_working_page_and_the_room_view_shows_its_qr_code(lesson, chromium):
    page = chromium.new_page()
    page.goto(f"http://{lesson.learners}/baselines")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.locator(".fl-predict, .bk-Canvas").first.wait_for(state="attached", timeout=30_000)
    page.goto(f"http://localhost:{lesson.port}/room?token={TOKEN}")
    code = page.locator(f'svg[role="img"][aria-label="QR code of http://{lesson.learners}/"]')
    code.wait_for(state="visible", timeout=30_000)
    assert code.bounding_box()["width"] >= 200
    assert page.get_by_role("link", name=f"http://{lesson.learners}/").count() == 1


def test_a_page_at_a_name_not_printed_gets_no_session(lesson, chromium):
    page = chromium.new_page()
    page.goto(f"http://{UNLISTED}:{lesson.port}/baselines")  # the HTML is served, as Bokeh serves it
    refused = f"Refusing websocket connection from Origin 'http://{UNLISTED}:{lesson.port}'"
    wait_until(lambda: refused in lesson.log(), 30, "the server to refuse the page's websocket")
    page.wait_for_timeout(1000)
    assert documents(page) == 0
    assert page.locator(".fl-predict, .bk-Canvas").count() == 0


def websocket(url: str, origin: str, **headers: str) -> str:
    """Open a page's session as a browser's websocket with `origin` would: "opened", or the HTTP status refusing it.
    On a thread of its own: Playwright's event loop may be running on this one."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, open_websocket(url, origin, **headers)).result()


async def open_websocket(url: str, origin: str, **headers: str) -> str:
    token, cookies, _ = get_page(url, "baselines", "")
    request = HTTPRequest(url.replace("http", "ws", 1) + "/baselines/ws", headers={**cookies, "Origin": origin, **headers})
    try:
        ws = await websocket_connect(request, subprotocols=["bokeh", token])
    except HTTPClientError as error:
        return str(error.code)
    ws.close()
    return "opened"


def test_only_the_printed_hosts_open_sessions_same_origin_or_not(lesson):
    url, port = f"http://localhost:{lesson.port}", lesson.port
    same = {"Sec-Fetch-Site": "same-origin"}
    assert websocket(url, f"http://{lesson.learners}", **same) == "opened"
    assert websocket(url, f"http://localhost:{port}", **same) == "opened"
    for origin in (f"http://{UNLISTED}:{port}", f"http://127.0.0.1:{port}", f"http://{lesson.learners.split(':')[0]}:1"):
        assert websocket(url, origin, Host=origin.split("//")[1], **same) == "403", origin
        assert websocket(url, origin, Host=origin.split("//")[1]) == "403", origin
