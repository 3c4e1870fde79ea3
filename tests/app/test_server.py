"""The app's frame without a browser: routes from the pages present, URL parsing, widgets."""

import logging
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace
from urllib.parse import parse_qsl

import panel as pn
import param
import pytest
from bokeh.models import ColumnDataSource

from app.cli import build_parser, serving_plan
from app.pages import PAGE_ORDER, available_pages
from app.serving.server import index_view, nav_html, query_link, route_link, routes
from widgets.downloads import source_csv
from widgets.streaming import StreamingRun
from widgets.url_state import parse_query, step_text


def test_routes_are_the_page_modules_present():
    pages = available_pages()
    names = [p.name for p in pages]
    assert names == [n for n in PAGE_ORDER if n in names]  # reading order kept
    assert "baselines" in names
    table = routes()
    assert set(table) == {"/", "/room"} | {f"/{p.route}" for p in pages}  # and the teacher's room view, outside the navigation
    assert all("_" not in route for route in table)  # token_world is served at /token-world
    for p in pages:
        assert callable(p.module.page) and p.title and p.summary
        assert isinstance(p.module.page(), pn.viewable.Viewer)


def test_navigation_and_index_link_every_page():
    pages = available_pages()
    nav = nav_html(pages, "baselines", route_link)
    assert '<a href="/" data-text="Overview">Overview</a>' in nav
    # Each page by a word or two of its title, the whole title its accessible name and tooltip.
    assert ('<a href="/baselines" aria-current=page aria-label="Baselines and variance" title="Baselines and variance" '
            'data-text="Baselines">Baselines</a>') in nav
    assert '<a href="/reward-model" data-text="Reward models">Reward models</a>' in nav
    assert nav.count("<a ") == len(pages) + 1
    index_html = index_view(pages, query_link)[1].object
    assert all(f'href="?page={p.route}"' in index_html for p in pages)


def test_serve_command_options():
    args = build_parser().parse_args(["serve"])
    assert (args.port, args.address, args.allow_websocket_origin, args.classroom) == (5006, None, None, False)
    assert serving_plan(args) == ("localhost", None, None)  # localhost, and serve's default origins
    args = build_parser().parse_args(["serve", "--port", "8000", "--address", "0.0.0.0", "--allow-websocket-origin", "lab.example:80"])
    assert (args.port, args.address, args.allow_websocket_origin) == (8000, "0.0.0.0", ["lab.example:80"])


class Controls(param.Parameterized):
    x = param.Number(default=1.0, bounds=(0.0, 2.0))
    n = param.Integer(default=10, bounds=(1, 100))
    flag = param.Boolean(default=False)
    mode = param.Selector(default="a", objects=["a", "b"])


@pytest.mark.parametrize(
    "query,applied,bad",
    [
        ({"x": "1.5", "n": "20", "flag": "true", "mode": "b"}, {"x": 1.5, "n": 20, "flag": True, "mode": "b"}, []),
        ({"x": "3"}, {}, ["x"]),
        ({"x": "inf", "n": "2.5"}, {}, ["x", "n"]),
        ({"n": "0", "flag": "maybe", "mode": "c"}, {}, ["n", "flag", "mode"]),
        ({"x": "0.5", "other": "ignored"}, {"x": 0.5}, []),
    ],
)
def test_parse_query_keeps_valid_values_and_explains_the_rest(query, applied, bad):
    values, notices = parse_query(Controls(), query, ["x", "n", "flag", "mode"])
    assert values == applied
    assert len(notices) == len(bad)
    for name, notice in zip(bad, notices):
        assert notice.startswith(f"{name}=") and "ignored" in notice


def test_source_csv_has_a_header_and_one_row_per_point():
    text = source_csv(ColumnDataSource({"b": [0.0, 0.5], "g": [5.5, -5.0]}))
    assert text == "b,g\n0.0,5.5\n0.5,-5.0\n"


@dataclass(frozen=True)
class Snapshot:
    step: int
    values: tuple


def counting(steps: int, delay: float = 0.0):
    def make():
        for t in range(1, steps + 1):
            time.sleep(delay)
            yield Snapshot(t, tuple(range(t)))

    return make


def test_streaming_run_delivers_partial_results_and_the_last_one():
    seen, done = [], threading.Event()
    run = StreamingRun(seen.append, lambda finished: done.set() if finished else None, period=0.02)
    run.start(counting(30, delay=0.005))
    assert done.wait(5)
    assert 2 <= len(seen) < 30  # throttled, but partial results arrived before the end
    assert seen[-1].step == 30


def test_streaming_run_stops_and_a_newer_start_cancels_stale_work():
    seen = []
    run = StreamingRun(seen.append, period=0.0)
    run.start(counting(10_000, delay=0.001))
    time.sleep(0.05)
    run.start(counting(3))
    run.join(5)
    assert seen[-1].step == 3 and len(seen[-1].values) == 3
    run.start(counting(10_000, delay=0.001))
    time.sleep(0.05)
    run.stop()
    run.join(5)
    assert not run.running
    assert seen[-1].step < 10_000


def test_serve_gives_torch_half_the_cores_unless_told(monkeypatch):
    import torch

    from app.serving.server import share_cores

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        monkeypatch.setattr("os.cpu_count", lambda: 8)
        assert share_cores() == 4 and torch.get_num_threads() == 4 and os.environ["OMP_NUM_THREADS"] == "4"
        monkeypatch.setattr("os.cpu_count", lambda: 1)
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert share_cores() == 1  # never zero
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert share_cores() == 3 and torch.get_num_threads() == 3  # the operator's choice wins
    finally:
        torch.set_num_threads(before)


def _record(name: str, error: BaseException | None, level: int = logging.ERROR, msg: str = "Future exception was never retrieved"):
    exc_info = (type(error), error, error.__traceback__) if error is not None else None
    return logging.LogRecord(name, level, __file__, 1, msg, (), exc_info)


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def test_a_websocket_closed_mid_message_is_one_info_line_and_other_errors_keep_their_traceback():
    from bokeh.server.connection import ServerConnection
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    from app.serving.server import ClosedConnectionFilter

    quiet = ClosedConnectionFilter()
    for error in (WebSocketClosedError(), StreamClosedError()):
        record = _record("asyncio", _raised(error))
        assert quiet.filter(record)
        assert (record.levelno, record.exc_info) == (logging.INFO, None)
        assert type(error).__name__ in record.getMessage() and "\n" not in record.getMessage()
    try:  # Bokeh's assertion, from a message that reaches a connection whose session is gone
        ServerConnection.session.fget(SimpleNamespace(_session=None))
    except AssertionError as error:
        record = _record("bokeh.server.views.ws", error)
    assert quiet.filter(record) and (record.levelno, record.exc_info) == (logging.INFO, None)
    warning = _record("bokeh.server.views.ws", None, logging.WARNING, "Failed sending message as connection was closed")
    assert quiet.filter(warning) and warning.levelno == logging.INFO
    for error in (ValueError("a bug"), AssertionError("an assertion of the app's own")):
        record = _record("tornado.application", _raised(error))
        assert quiet.filter(record)
        assert record.levelno == logging.ERROR and record.exc_info[1] is error


COLLECTED_ON_A_TIMER = """
import gc, time, weakref
from panel.io import document
from app.serving.server import NEVER, collect_on_a_timer

class Node:
    pass

assert collect_on_a_timer(every=0.2)
assert not collect_on_a_timer(every=0.2)  # one collecting thread per process
assert gc.get_freeze_count() > 0 and gc.get_threshold()[2] == NEVER and document.GC_DEBOUNCE >= 0.2
cycle = Node()
cycle.me = cycle
gone = weakref.ref(cycle)
gc.collect(1)
gc.collect(1)  # the cycle, still referenced, now sits in the oldest generation, which only a full collection walks
del cycle
deadline = time.monotonic() + 10
while gone() is not None and time.monotonic() < deadline:
    time.sleep(0.05)
assert gone() is None, "the timer's full collection never freed the cycle"
"""


@pytest.mark.server
def test_the_server_s_full_collections_come_from_its_timer_and_free_old_cycles():
    # In a process of its own: the test's interpreter keeps Python's own collection rules.
    done = subprocess.run([sys.executable, "-c", COLLECTED_ON_A_TIMER], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_pages_link_holds_every_control_and_no_state():
    from app.pages.live_run import LiveRunPage
    from widgets.url_state import controls_of

    class Page(param.Parameterized):
        b = param.Number(1.0)
        a = param.Integer(2)
        phase = param.String("idle", precedence=-1)  # state the page keeps, not a control

    assert controls_of(Page()) == ["b", "a"]
    names = controls_of(LiveRunPage)  # a page class, as its instance
    assert names[:2] == ["model", "reward"] and "phase" not in names and "name" not in names


class Stepped(param.Parameterized):
    p = param.Number(default=0.5, bounds=(0.05, 0.95), step=0.05)
    b = param.Number(default=1.0, bounds=(0.0, 15.0), step=0.1)
    free = param.Number(default=0.5)
    n = param.Integer(default=10, bounds=(10, 500), step=10)


@pytest.mark.parametrize(
    "name,text,written",
    [
        ("p", "0.7000000000000001", "0.7"),
        ("p", "0.9400000000000002", "0.94"),
        ("b", "0.30000000000000004", "0.3"),
        ("p", "0.123", "0.123"),  # off the step's decimals: every digit kept
        ("free", "0.30000000000000004", "0.30000000000000004"),  # no step: as it is
        ("n", "30", "30"),
        ("b", "1.0", "1.0"),
    ],
)
def test_a_link_writes_a_number_with_its_step_s_decimals(name, text, written):
    assert step_text(Stepped.param[name], text) == written
    values, notices = parse_query(Stepped(), {name: written}, [name])
    assert not notices and math.isclose(values[name], float(text), rel_tol=1e-9)


def test_moving_a_slider_writes_a_clean_query_value():
    from panel.io.location import Location

    from widgets.url_state import _round_to_steps

    controls, location = Stepped(), Location()
    _round_to_steps(location, controls, ["p", "b", "n"])
    location.sync(controls, {"p": "p", "b": "b", "n": "n"})
    controls.p = 0.65 + 0.05  # 0.7000000000000001
    controls.b = 0.1 + 0.2
    query = dict(parse_qsl(location.search.lstrip("?")))
    assert (query["p"], query["b"], query["n"]) == ("0.7", "0.3", "10")
