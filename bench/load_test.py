"""A classroom on one server: N learners for D seconds while a language-model run trains.

    python -m bench.load_test [--sessions 30] [--seconds 300] [--no-run] [--room] [--web-processes N | --compare N [N ...]] [--json]
    python -m bench.load_test --burst 30 [--pages baselines token-world] [--ready-pages M] [--compare N] [--json]

starts `python -m app.cli serve` on a free localhost port with its default limits but room for
every learner (`--max-sessions` twice `--sessions`, at least 60, so that the test measures serving,
not the limit; run folders in a temporary folder, one torch thread) and `--web-processes`
web processes behind nginx (default 1), opens /live-run with 2,000 steps and
presses Start, waits for the run's first step, and then runs `--sessions` simulated learners
for `--seconds` seconds. A learner goes round the analytic pages; on each it loads the page
and moves its sliders `--moves` times, one step at a time, pausing about `--think` seconds
between moves and waiting for each answer. Then every learner closes its page, the run's tab
closes, the server stops, and the figures are printed: interactions answered, latency p50,
p95 and max per page and overall, errors, the run's steps during the test, and the server's
resident memory.

With `--room` the server's room is in use too: the teacher's room view (app/pages/room/) is open
for the whole test, and each learner's browser has the guided prompts on and counts in the room,
and answers every prediction card it meets (a random choice) before it moves the sliders behind
them. The report then adds whether the room view's tally equals the votes given (a lesson keeps
the votes of closed tabs), with the last pages open and again once every tab has closed, and how
long the tally trailed each answer: from the answer sent to the first update of the room view that
shows, for that card and choice, the count the class's votes made at that moment (p50, p95, max); and,
less strict, to the first update whose count is one the class held at some moment after the answer
(the answer is in it, other learners' answers sent meanwhile may not be yet).

With `--burst N` the test is the opening of a lesson instead: for each page of `--pages`, on a
fresh server, N learners open the same page within one second (spread evenly) and the times
from the first request to each page's document received are printed: p50, p95 and the last.
`--ready-pages M` starts that server with M sessions of each page built ahead and bursts once
they are built (a server started before the lesson); without it the burst comes as soon as the
server answers, before any is.

With `--compare N` the same test runs twice, on a fresh server of one web process, then of N, and
the figures are printed side by side (machines differ: compare columns of one run, never another
day's). Each learner keeps its cookies from page to page, as a browser does, so nginx keeps it on
one web process.

A learner is not a browser (thirty Chromium tabs do not fit two cores): it speaks Bokeh's
websocket protocol as a browser does (the page's GET, the websocket, PULL-DOC, the
document-ready event that starts a page's onload work, the guide its browser has stored,
here prompts off, so that every part of the page is built and shown as for a learner who has
answered its cards, and one PATCH-DOC per slider step), so the server does a browser
session's work. A move's latency runs from the change sent to
the first change of one of the page's ColumnDataSources received; the browser's redraw after
it is what bench/bench_latency.py adds. A page load runs from the GET to the document
received; its sliders are ready once a slider of every title the learner moves has arrived (most
sit in the parts behind the cards, built when the stored answers arrive), and moves start then. The learners
share this process, so its own CPU time is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from bokeh.protocol import Protocol
from bokeh.protocol.receiver import Receiver
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from bench.servers import Server, start_server, stop_server

ANALYTIC = ("baselines", "bandit", "token-world", "toy-target", "preferences", "kl")
"""The pages a learner goes round: every page whose sliders are answered by analysis, not by a training run."""
GOAL_P95 = 1.0
"""Seconds: a slider move's p95 on every analytic page while the run trains."""
SLIDER_DEFAULTS = {"title": "", "step": 1, "visible": True, "disabled": False}
"""Bokeh leaves a model's default values out of the document it sends."""
SLIDER_KEYS = ("title", "start", "end", "step", "value", "visible", "disabled")
UNUSED_SESSION_SECONDS = 15
"""The server's default lifetime of a closed session (`--unused-session-seconds`), which the test keeps."""
DATA_EVENTS = ("ColumnDataChanged", "ColumnsStreamed", "ColumnsPatched")
REFUSED = ("fl-full", "fl-refused")
"""CSS classes of the one-sentence pages a server sends instead of a page it will not build."""
DOCUMENT_READY = {"kind": "MessageSent", "msg_type": "bokeh_event",
                  "msg_data": {"type": "event", "name": "document_ready", "values": {"type": "map", "entries": []}}}
"""What BokehJS sends once a page is drawn; Panel holds a page's plot updates and its onload work until then."""
STORED_GUIDE = json.dumps({"prompts": False, "answers": {}})
"""What a learner's browser hands the page header's store (widgets.predict.BrowserStore): guided prompts switched
off in an earlier lesson, so every part of a page is shown, and built, as for a learner who has answered its cards."""


ROOM_GUIDE = json.dumps({"prompts": True, "room": True, "answers": {}})
"""With --room: a learner's browser with the guided prompts on, counted in the room, nothing answered yet."""
TEACHER_TOKEN = "the-load-tests-teacher-token"
"""The teacher's token of the server the load test starts (FEEDBACK_LAB_TEACHER_TOKEN)."""


def plain(value):
    """A value of a Bokeh message as plain Python: its maps ({"type": "map", "entries": [...]}) as dicts."""
    if isinstance(value, dict) and value.get("type") == "map":
        return {plain(k): plain(v) for k, v in value.get("entries", [])}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@dataclass
class Classroom:
    """With --room: what the learners answered, in order, and what the teacher's room view showed, in order."""

    changes: list[tuple[float, str, str, int]] = field(default_factory=list)
    """(time, card's CSS class, choice, change of its count) per vote given (+1; a lesson keeps a closed tab's votes)."""
    answers: list[tuple[float, str, str]] = field(default_factory=list)
    """(time sent, card's CSS class, choice) per answer."""
    shown: list[tuple[float, dict]] = field(default_factory=list)
    """(time received, card's CSS class -> choice -> count) per update of the room view's tally (`keyed`)."""

    def change(self, card: str, choice: str, step: int) -> None:
        self.changes.append((time.perf_counter(), card, choice, step))

    def expected(self, at: float = math.inf) -> dict[str, dict[str, int]]:
        """The counts the class's votes made at time `at`."""
        counts: dict[str, dict[str, int]] = {}
        for t, card, choice, step in self.changes:
            if t <= at:
                counts.setdefault(card, {})[choice] = counts.get(card, {}).get(choice, 0) + step
        return {card: {c: n for c, n in choices.items() if n} for card, choices in counts.items() if any(choices.values())}

    def held(self, card: str, choice: str, start: float, end: float) -> set[int]:
        """Every count of `card`'s `choice` the learners' open pages held from time `start` to `end`."""
        count = sum(step for t, c, k, step in self.changes if t <= start and (c, k) == (card, choice))
        counts = {count}
        for t, c, k, step in self.changes:
            if start < t <= end and (c, k) == (card, choice):
                count += step
                counts.add(count)
        return counts

    def reached(self) -> list[float]:
        """Seconds from each answer to the first update of the room view whose count for its card and choice is one the
        class held at some moment after the answer: the answer is in it, though other learners' answers and closed
        tabs sent meanwhile may not be yet (`lags` waits for those too)."""
        return [next((t - sent for t, counts in self.shown
                      if t >= sent and counts.get(card, {}).get(choice, 0) in self.held(card, choice, sent, t)), math.inf)
                for sent, card, choice in self.answers]

    def lags(self) -> tuple[list[float], int]:
        """Seconds from each answer to the first update of the room view that shows its card's choice at the count
        then expected; and the answers no update ever showed so."""
        lags, missed = [], 0
        for sent, card, choice in self.answers:
            caught = next((t for t, counts in self.shown
                           if t >= sent and counts.get(card, {}).get(choice, 0) == self.expected(t).get(card, {}).get(choice, 0)), None)
            if caught is None:
                missed += 1
            else:
                lags.append(caught - sent)
        return lags, missed


KINDS = {"move": "moves", "load": "loads", "ready": "readies"}
"""Each kind of answered interaction in the timeline, and its figures' name (in `Figures` and in the report)."""


class Refused(RuntimeError):
    """The server sent its one-sentence page instead of the page."""


class ServerError(RuntimeError):
    """The server answered a message with Bokeh's ERROR message."""


def cpu_seconds(pid: int) -> float:
    """CPU seconds the process has used so far, user and system (its threads included, its children not)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15 of stat


def by_minute(timeline: list[tuple[float, str, float]]) -> list[dict]:
    """The moves', loads' and readies' figures of each minute of the test (by when each ended): when the slow ones came."""
    minutes = int(max((t for t, _, _ in timeline), default=0) // 60) + 1
    return [{"minute": m + 1, **{kinds: summary([x for t, k, x in timeline if k == kind and m * 60 <= t < (m + 1) * 60])
                                for kind, kinds in KINDS.items()}} for m in range(minutes)]


def resident_mb(pid: int) -> dict[str, float]:
    """The process's resident memory in MB: now (VmRSS), at its peak (VmHWM), and the part of it now that the process
    allocated (RssAnon; the rest is pages of the files it maps, mostly shared libraries' code)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            values[key] = int(rest.split()[0]) / 1024
    return values


def web_pids(server: Server) -> list[int]:
    """The processes that serve the pages: the server's own, or, with `--web-processes N` > 1, the N it started."""
    import psutil

    web = []
    for child in psutil.Process(server.process.pid).children():
        try:
            if "serve" in child.cmdline():
                web.append(child.pid)
        except psutil.Error:  # one that has just exited
            continue
    return web or [server.process.pid]


def web_cpu_seconds(server: Server) -> float:
    return sum(cpu_seconds(pid) for pid in web_pids(server))


def web_resident_mb(server: Server) -> dict[str, float]:
    """resident_mb summed over the web processes (the peak: the sum of each one's peak)."""
    each = [resident_mb(pid) for pid in web_pids(server)]
    return {key: sum(r[key] for r in each) for key in each[0]}


def server_cpu_seconds(server: Server) -> float:
    """CPU seconds so far of every process of the server: its web processes, its local Dask cluster, nginx."""
    import psutil

    pids = [server.process.pid]
    try:
        pids += [child.pid for child in psutil.Process(server.process.pid).children(recursive=True)]
    except psutil.Error:
        pass
    return sum(cpu_seconds(pid) for pid in pids)


SETTLED_SHARE = 0.2
SETTLED_WINDOW = 2.0
"""A server has settled once its processes together used less than SETTLED_SHARE of a core per web process over
SETTLED_WINDOW seconds: the sessions it builds ahead (app/serving/ready_pages.py) are all built, and its cluster's
worker has loaded the default model (app.jobs.model_jobs.warm_up)."""


async def settled(server: Server, longest: float = 60.0) -> float:
    """Wait until the server has been nearly idle for a window (at most `longest` seconds); the seconds waited."""
    start = time.monotonic()
    while time.monotonic() < start + longest:
        before = server_cpu_seconds(server)
        await asyncio.sleep(SETTLED_WINDOW)
        if server_cpu_seconds(server) - before < SETTLED_SHARE * len(web_pids(server)) * SETTLED_WINDOW:
            break
    return time.monotonic() - start


def machine_load() -> str:
    """The 1, 5 and 15 minute load averages, as `uptime` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _objects(node, found: dict[str, dict]) -> None:
    """Every model object of a Bokeh document (or of a patch's new values), by id."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "id" in node:
            found[node["id"]] = node
        for value in node.values():
            _objects(value, found)
    elif isinstance(node, list):
        for value in node:
            _objects(value, found)


def cookie_header(cookies: dict[str, str]) -> dict[str, str]:
    return {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}


def keep_cookies(cookies: dict[str, str], set_cookie: list[str]) -> None:
    """What a browser keeps of each Set-Cookie header: its name and value (every cookie of the app is for all of it)."""
    for header in set_cookie:
        name, _, value = header.split(";", 1)[0].partition("=")
        cookies[name.strip()] = value.strip()


class PageSession:
    """One open page, as a browser tab holds it: its websocket, sliders and data sources."""

    def __init__(self, ws, receiver: Receiver, content: dict):
        self.ws, self.receiver = ws, receiver
        self.sliders: dict[str, dict] = {}
        self.sources: set[str] = set()
        self.buttons: dict[str, str] = {}
        self.store: str | None = None
        self.cards: dict[str, tuple[str, str]] = {}  # a card's component id -> (its data model's id, its CSS class)
        self.choices: dict[str, list] = {}  # a card's data model id -> its choices ([value, label] pairs)
        self.tally: str | None = None  # the room view's TallyBoard data model id
        self.on_tally = None  # called with (time, counts) at each update of the tally
        self._register(content)
        self._ids = itertools.count()
        self._answer: asyncio.Future | None = None
        self.last_message = time.perf_counter()
        self.closed = False
        self.get_seconds = math.nan  # the page's GET (its document built, the page sent); the rest of a load is the websocket and the document
        self._reader = asyncio.get_running_loop().create_task(self._read_forever())

    @classmethod
    async def open(cls, base: str, route: str, query: str = "", timeout: float = 60.0, guide: str = STORED_GUIDE,
                   cookies: dict[str, str] | None = None) -> "PageSession":
        """Load `base/route?query`: the page, its websocket, the document; then tell the server the page is drawn.
        `cookies`: the browser's cookies, sent with both and kept as the server sets them (default: a new browser's),
        as nginx in front of several web processes keeps a browser on one by a cookie (app/serving/web_processes.py)."""
        cookies = {} if cookies is None else cookies
        start = time.perf_counter()
        response = await AsyncHTTPClient().fetch(f"{base}/{route}{query}", request_timeout=timeout, headers=cookie_header(cookies))
        got = time.perf_counter() - start
        keep_cookies(cookies, response.headers.get_list("Set-Cookie"))
        token = re.search(r'"token":"([^"]+)"', response.body.decode()).group(1)
        ws_url = base.replace("http", "ws", 1) + (f"/{route}/ws" if route else "/ws")
        ws = await asyncio.wait_for(websocket_connect(HTTPRequest(ws_url, headers=cookie_header(cookies)), subprotocols=["bokeh", token]), timeout)
        ws.protocol.set_nodelay(True)  # as browsers do; else Nagle holds a message's second and third frames
        receiver = Receiver(Protocol())
        try:
            ack = await asyncio.wait_for(_read(ws, receiver), timeout)
            if ack.header["msgtype"] != "ACK":
                raise ServerError(f"expected ACK, got {ack.header['msgtype']}")
            await _send(ws, {"msgid": "pull", "msgtype": "PULL-DOC-REQ"}, {})
            reply = await asyncio.wait_for(_read(ws, receiver), timeout)
            while reply.header["msgtype"] == "PATCH-DOC":  # a change made before the pull, which the document holds too
                reply = await asyncio.wait_for(_read(ws, receiver), timeout)
            if reply.header["msgtype"] != "PULL-DOC-REPLY":
                raise ServerError(f"expected PULL-DOC-REPLY, got {reply.header['msgtype']}: {reply.content}")
        except BaseException:
            ws.close()
            raise
        text = json.dumps(reply.content)
        if any(f'"{css}"' in text for css in REFUSED):
            ws.close()
            raise Refused(f"/{route}: the server sent its one-sentence page")
        session = cls(ws, receiver, reply.content)
        session.get_seconds = got
        await session.send_events([DOCUMENT_READY])
        if session.store is not None:  # as the browser's script does once the page is drawn
            await session.send_events([{"kind": "ModelChanged", "model": {"id": session.store}, "attr": "value", "new": guide},
                                       {"kind": "ModelChanged", "model": {"id": session.store}, "attr": "loaded", "new": True}])
        return session

    def _register(self, node) -> None:
        found: dict[str, dict] = {}
        _objects(node, found)
        for model_id, model in found.items():
            attributes = model.get("attributes", {})
            if model["name"] == "Slider":
                self.sliders[model_id] = SLIDER_DEFAULTS | {k: attributes[k] for k in SLIDER_KEYS if k in attributes}
            elif model["name"] == "ColumnDataSource":
                self.sources.add(model_id)
            elif model["name"].endswith("Button"):
                self.buttons[model_id] = attributes.get("label", "")
            elif model["name"].startswith("BrowserStore"):
                self.store = model_id
            elif model["name"].endswith("ReactiveESM") and "fl-predict" in (attributes.get("css_classes") or []):
                card = next(c for c in attributes["css_classes"] if c.startswith("fl-card-"))
                self.cards[model_id] = (attributes["data"]["id"], card)
            elif model["name"].startswith("CardView") and "choices" in attributes:
                self.choices[model_id] = plain(attributes["choices"])
            elif model["name"].startswith("TallyBoard"):
                self.tally = model_id
                self._tallied(plain(attributes.get("counts", {"type": "map", "entries": []})))

    async def _read_forever(self) -> None:
        try:
            while True:
                message = await _read(self.ws, self.receiver)
                self.last_message = time.perf_counter()
                kind = message.header["msgtype"]
                if kind == "ERROR":
                    self._resolve(ServerError(str(message.content)))
                elif kind == "PATCH-DOC":
                    self._patched(message.content.get("events", []))
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception as error:  # a message this client cannot read: the pending move fails with it
            self._resolve(error)
        finally:
            self.closed = True
            self._resolve(ConnectionError("the websocket closed"))

    def _patched(self, events: list[dict]) -> None:
        self._register(events)
        for event in events:
            model = (event.get("model") or {}).get("id")
            if event.get("kind") == "ModelChanged" and model in self.sliders and event.get("attr") in SLIDER_KEYS:
                if isinstance(event.get("new"), (int, float, str, bool)):
                    self.sliders[model][event["attr"]] = event["new"]
            if model in self.sources and (event.get("kind") in DATA_EVENTS or event.get("attr") == "data"):
                self._resolve(None)
            if model is not None and model == self.tally and event.get("attr") == "counts":
                self._tallied(plain(event.get("new")))

    def _resolve(self, error: BaseException | None) -> None:
        if self._answer is not None and not self._answer.done():
            if error is None:
                self._answer.set_result(time.perf_counter())
            else:
                self._answer.set_exception(error)

    async def send_events(self, events: list[dict]) -> None:
        await _send(self.ws, {"msgid": f"m{next(self._ids)}", "msgtype": "PATCH-DOC"}, {"events": events})

    def movable(self) -> list[str]:
        """The sliders a learner can move now: shown and enabled."""
        return [k for k, s in self.sliders.items() if s["visible"] and not s["disabled"] and "value" in s]

    async def move(self, slider: str, k: int, timeout: float) -> float:
        """Step `slider` once (right and left in turn, away from an end), in seconds until a data source changed."""
        s = self.sliders[slider]
        now, low, high, step = s["value"], s["start"], s["end"], s["step"]
        right = now <= low or (k % 2 == 0 and now < high)
        new = min(max(round(now + (step if right else -step), 10), low), high)
        if all(isinstance(v, int) for v in (now, low, high, step)):
            new = int(new)
        s["value"] = new
        self._answer = asyncio.get_running_loop().create_future()
        start = time.perf_counter()
        await self.send_events([{"kind": "ModelChanged", "model": {"id": slider}, "attr": "value", "new": new}])
        return await asyncio.wait_for(self._answer, timeout) - start

    def _tallied(self, counts: dict) -> None:
        if self.on_tally is not None:
            self.on_tally(time.perf_counter(), counts)

    async def answer_cards(self, rng: random.Random, room: Classroom) -> dict[str, str]:
        """Answer every prediction card of the page with a random choice, as Reveal sends it; card class -> choice."""
        given = {}
        for card, (data, css_class) in self.cards.items():
            choice = rng.choice(self.choices[data])[0]
            room.answers.append((time.perf_counter(), css_class, choice))
            room.change(css_class, choice, +1)
            given[css_class] = choice
            await self.send_events([{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
                "type": "event", "name": "data_event", "values": {"type": "map", "entries": [
                    ["model", {"id": card}], ["data", {"type": "map", "entries": [["commit", choice]]}]]}}}])
        return given

    async def click(self, label: str) -> None:
        """Press the button labelled `label`, as BokehJS reports a click."""
        button = next((k for k, v in self.buttons.items() if v == label), None)
        if button is None:
            raise RuntimeError(f"the page has no button labelled {label!r}")
        await self.send_events([{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
            "type": "event", "name": "button_click", "values": {"type": "map", "entries": [["model", {"id": button}]]}}}])

    def ready(self, titles: set[str]) -> bool:
        """Whether a slider of every title in `titles` is movable."""
        return titles <= {self.sliders[s]["title"] for s in self.movable()}

    async def revealed(self, titles: set[str], timeout: float) -> None:
        """Wait (at most `timeout` seconds) until a slider of every title in `titles` is movable: the parts of a page
        that the stored guide reveals arrive as patches after the document, later the busier the server is."""
        deadline = time.perf_counter() + timeout
        while not self.closed and time.perf_counter() < deadline and not self.ready(titles):
            await asyncio.sleep(0.05)

    async def settle(self, quiet: float = 0.5, longest: float = 5.0) -> None:
        """Wait until the server has sent nothing for `quiet` seconds (at most `longest` seconds)."""
        deadline = time.perf_counter() + longest
        while not self.closed and time.perf_counter() < deadline and time.perf_counter() - self.last_message < quiet:
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        self.ws.close()
        self._reader.cancel()
        await asyncio.gather(self._reader, return_exceptions=True)


async def _read(ws, receiver: Receiver):
    """One whole Bokeh message (header, metadata, content and any binary buffers)."""
    while True:
        fragment = await ws.read_message()
        if fragment is None:
            raise ConnectionError("the websocket closed")
        message = await receiver.consume(fragment)
        if message is not None:
            return message


async def _send(ws, header: dict, content: dict) -> None:
    for frame in (json.dumps(header), "{}", json.dumps(content)):
        await ws.write_message(frame)


@dataclass
class Figures:
    """What the learners saw."""

    moves: dict[str, list[float]] = field(default_factory=dict)
    """Seconds per answered slider move, by page."""
    loads: dict[str, list[float]] = field(default_factory=dict)
    """Seconds per page load, by page."""
    gets: dict[str, list[float]] = field(default_factory=dict)
    """Seconds of each load's GET (the page's wait to be built, its build, the page sent), by page."""
    readies: dict[str, list[float]] = field(default_factory=dict)
    """Seconds per page from its GET until a slider of every title the learner moves had arrived (the parts behind
    its answered cards built), by page."""
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    """(kind, page, what) per interaction not answered: timeout (a load or a move), refused, closed, server error,
    exception; and healthz, a /healthz request not answered."""
    timeline: list[tuple[float, str, float]] = field(default_factory=list)
    """(seconds since the learners started, "move", "load" or "ready", its seconds) per answered interaction, as it ended."""
    started: float = field(default_factory=time.perf_counter)

    def answered(self, kind: str, route: str, seconds: float) -> None:
        getattr(self, KINDS[kind]).setdefault(route, []).append(seconds)
        self.timeline.append((time.perf_counter() - self.started, kind, seconds))

    def error(self, kind: str, route: str, what: object) -> None:
        self.errors.append((kind, route, str(what)[:200]))


def _what(error: BaseException, timeout: float) -> str:
    return f"no answer within {timeout:.0f} s" if _kind(error) == "timeout" else f"{type(error).__name__}: {error}"


def _kind(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError) or isinstance(error, HTTPClientError) and error.code == 599:
        return "timeout"  # 599: tornado's HTTP client gave up waiting
    if isinstance(error, Refused):
        return "refused"
    if isinstance(error, ServerError):
        return "server error"
    if isinstance(error, ConnectionError):
        return "closed"
    return "exception"


async def probe(base: str, routes: tuple[str, ...], timeout: float) -> dict[str, set[str]]:
    """The sliders of each page that change a plot's data, by title (one move each, before the load):
    a slider that changes only text or an axis has no answer to wait for."""
    answered = {}
    for route in routes:
        session = await PageSession.open(base, route)
        await session.settle()
        answered[route] = set()
        for slider in session.movable():
            try:
                await session.move(slider, 0, timeout)
                answered[route].add(session.sliders[slider]["title"])
            except asyncio.TimeoutError:
                pass
            await session.settle()
        await session.close()
    return answered


async def visit(base: str, route: str, titles: set[str], moves: int, think: float, timeout: float, figures: Figures,
                rng: random.Random, deadline: float = math.inf, room: Classroom | None = None,
                held: list | None = None, cookies: dict[str, str] | None = None) -> None:
    """One page visit: load /route, move its sliders named in `titles` `moves` times (fewer if `deadline`
    passes), about `think` seconds apart, each time waiting for the answer; close the page. With `room`, the
    learner counts in the room and first answers the page's cards; with `held`, a visit the deadline ends is left
    open and added to it as (session, its answers), for the tally at the end."""
    start = time.perf_counter()
    try:
        session = await PageSession.open(base, route, timeout=timeout, guide=ROOM_GUIDE if room is not None else STORED_GUIDE,
                                         cookies=cookies)
    except Exception as error:
        figures.error(_kind(error), route, _what(error, timeout))
        await asyncio.sleep(think)
        return
    figures.answered("load", route, time.perf_counter() - start)
    figures.gets.setdefault(route, []).append(session.get_seconds)
    given: dict[str, str] = {}
    try:
        if room is not None:
            await session.settle(quiet=0.2, longest=2.0)  # the stored guide has reached the page's cards
            given = await session.answer_cards(rng, room)
        await session.revealed(titles, timeout)
        if titles and not session.closed and not session.ready(titles):
            figures.error("timeout", route, f"the page's sliders did not all arrive within {timeout:.0f} s")
        elif titles:
            figures.answered("ready", route, time.perf_counter() - start)
        for step in range(moves):
            await asyncio.sleep(think * rng.uniform(0.5, 1.5))
            if time.monotonic() >= deadline:
                break
            choices = [s for s in session.movable() if session.sliders[s]["title"] in titles]
            if not choices:
                break
            try:
                figures.answered("move", route, await session.move(rng.choice(choices), step, timeout))
            except Exception as error:
                figures.error(_kind(error), route, _what(error, timeout))
                if session.closed:
                    break
    finally:
        if held is not None and time.monotonic() >= deadline and not session.closed:
            held.append((session, given))
        else:
            await session.close()  # its votes stay in the room's tally: a lesson keeps them


async def learner(k: int, base: str, answered: dict[str, set[str]], deadline: float, moves: int, think: float,
                  timeout: float, figures: Figures, room: Classroom | None = None, held: list | None = None) -> None:
    """Visit the analytic pages in turn, from page k (mod 6), until `deadline`."""
    rng, cookies = random.Random(k), {}  # one browser: its cookies kept from page to page
    await asyncio.sleep(rng.uniform(0, think))  # learners do not all arrive in the same second
    for route in itertools.islice(itertools.cycle(ANALYTIC), k % len(ANALYTIC), None):
        if time.monotonic() >= deadline:
            return
        await visit(base, route, answered[route], moves, think, timeout, figures, rng, deadline, room, held, cookies)


def run_steps(runs: Path) -> int:
    """Training steps written so far by every run under `runs` (lines of metrics.jsonl)."""
    return sum(len(p.read_text().splitlines()) for p in runs.glob("*/metrics.jsonl"))


async def health_checks(base: str, until: float, figures: Figures, every: float = 2.0, timeout: float = 30.0) -> list[float]:
    """Seconds /healthz took, every `every` seconds until `until`: how long the server's event loop keeps a request
    waiting (one not answered within `timeout` is an error)."""
    times = []
    while time.monotonic() < until:
        start = time.perf_counter()
        try:
            await AsyncHTTPClient().fetch(f"{base}/healthz", request_timeout=timeout)
            times.append(time.perf_counter() - start)
        except Exception as error:
            figures.error("healthz", "healthz", f"{type(error).__name__}: {error}")
        await asyncio.sleep(every)
    return times


async def start_run(base: str, runs: Path, steps: int, timeout: float = 600.0) -> PageSession:
    """Open /live-run with `steps` steps, press Start, and return once the run has written its first step."""
    session = await PageSession.open(base, "live-run", f"?steps={steps}")
    await session.settle()
    await session.click("Start")
    deadline = time.monotonic() + timeout
    while run_steps(runs) == 0:
        if time.monotonic() > deadline or session.closed:
            raise RuntimeError(f"the language-model run wrote no step within {timeout:.0f} s")
        await asyncio.sleep(0.5)
    return session


def summary(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)), "max": float(a.max())} if a.size else {"n": 0}


async def room_view(base: str, room: Classroom) -> PageSession:
    """The teacher's room view, open; each update of its tally recorded in `room`."""
    session = await PageSession.open(base, "room", f"?token={TEACHER_TOKEN}")
    session.on_tally = lambda t, counts: room.shown.append((t, keyed(counts)))
    return session


def keyed(counts: dict) -> dict:
    """The room view's first-round votes (card key -> round -> choice -> count) by the card's CSS class (what a
    learner's page names it by): card class -> choice -> count."""
    from widgets.predict import card_class

    first = {key: rounds.get("1", {}) for key, rounds in counts.items()}
    return {card_class(key): {c: n for c, n in choices.items() if n} for key, choices in first.items() if any(choices.values())}


async def tally_at_end(room: Classroom, held: list, teacher: PageSession) -> dict:
    """Whether the room view's tally equals the answers given, with their pages open and again once they have closed
    (a closed page's votes stay counted for the lesson)."""
    report = {}
    for moment in ("open", "closed"):
        if moment == "closed":
            for session, given in held:
                await session.close()  # its votes stay in the room's tally: a lesson keeps them
        await asyncio.sleep(3.0)  # several looks of the room's board, and the update on its way
        shown = room.shown[-1][1] if room.shown else {}
        report[moment] = {"right": shown == room.expected(), "answers": sum(n for c in room.expected().values() for n in c.values()),
                          "shown": sum(n for c in shown.values() for n in c.values())}
    lags, missed = room.lags()
    reached = [lag for lag in room.reached() if lag != math.inf]
    report |= {"answers_given": len(room.answers), "lag": summary(lags), "never_shown": missed, "updates": len(room.shown),
                "reached": summary(reached)}
    await teacher.close()
    return report


async def load_test(server: Server, runs: Path, sessions: int, seconds: float, lm_run: bool, moves: int, think: float,
                    timeout: float, lm_steps: int, with_room: bool = False) -> dict:
    AsyncHTTPClient.configure(None, max_clients=4 * sessions)  # tornado's default of 10 would queue the learners' GETs
    report: dict = {"sessions": sessions, "seconds": seconds, "moves_per_page": moves, "think_s": think,
                    "timeout_s": timeout, "machine_load_before": machine_load(), "web_processes": len(web_pids(server)),
                    "rss_mb": {"idle": web_resident_mb(server)["VmRSS"]}}
    answered = await probe(server.url, ANALYTIC, timeout)
    report["plot_sliders"] = {route: sorted(titles) for route, titles in answered.items()}
    run_session = await start_run(server.url, runs, lm_steps) if lm_run else None
    report["rss_mb"]["start"] = web_resident_mb(server)["VmRSS"]
    figures = Figures()
    room, held = (Classroom(), []) if with_room else (None, None)
    teacher = await room_view(server.url, room) if with_room else None
    steps_before, started, cpu, server_cpu = run_steps(runs), time.monotonic(), time.process_time(), web_cpu_seconds(server)
    health = asyncio.get_running_loop().create_task(health_checks(server.url, started + seconds, figures))
    await asyncio.wait_for(
        asyncio.gather(*(learner(k, server.url, answered, started + seconds, moves, think, timeout, figures, room, held)
                         for k in range(sessions))),
        seconds + 4 * timeout,
    )
    report["healthz"] = summary(await health)
    if with_room:
        report["room"] = await tally_at_end(room, held, teacher)
    wall = time.monotonic() - started
    report["wall_s"], report["client_cpu_s"] = wall, time.process_time() - cpu
    report["server_cpu_s"] = web_cpu_seconds(server) - server_cpu
    report["by_minute"] = by_minute(figures.timeline)
    if run_session is not None:
        steps = run_steps(runs) - steps_before
        report["lm_run"] = {"steps_during_test": steps, "s_per_step": wall / steps if steps else None,
                            "still_connected": not run_session.closed}
        await run_session.close()
    report["rss_mb"]["end"] = web_resident_mb(server)["VmRSS"]
    report["machine_load_after"] = machine_load()
    for kinds in KINDS.values():
        by_page = getattr(figures, kinds)
        report[kinds] = {route: summary(v) for route, v in by_page.items()} | {"all": summary([x for v in by_page.values() for x in v])}
    report["gets"] = summary([x for v in figures.gets.values() for x in v])
    report["errors"] = {"count": len(figures.errors), "by_kind": {}, "by_page": {}, "by_what": {}}
    for kind, route, what in figures.errors:
        for table, key in (("by_kind", kind), ("by_page", route), ("by_what", f"{kind}: {what}")):
            report["errors"][table][key] = report["errors"][table].get(key, 0) + 1
    return report


BURST_GOAL = 10.0
"""Seconds: every page of a 30-learner burst ready (its document received) within this."""


async def burst(base: str, route: str, learners: int, timeout: float) -> dict:
    """`learners` open /route within one second: seconds from the burst's first request to each document received."""
    AsyncHTTPClient.configure(None, max_clients=4 * learners)
    start = time.perf_counter()
    ready: list[float] = []
    errors: list[str] = []

    async def one(k: int) -> None:
        await asyncio.sleep(k / learners)  # within one second, evenly
        try:
            session = await PageSession.open(base, route, timeout=timeout)
        except Exception as error:
            errors.append(f"{_kind(error)}: {_what(error, timeout)}")
            return
        ready.append(time.perf_counter() - start)
        await session.close()

    await asyncio.gather(*(one(k) for k in range(learners)))
    return {"route": route, "learners": learners, "ready": summary(ready), "errors": errors}


def run_bursts(routes: list[str], learners: int, timeout: float, ready_pages: int | None = None, web_processes: int = 1,
               settle: bool = False) -> list[dict]:
    """One fresh server per page (nothing warm from the page before), its bursts' figures and log problems.

    With `settle` the burst waits until the server has settled, as a lesson's server started a few minutes before its
    learners come; with `ready_pages` too, the server keeps that many sessions of each page built ahead (all of them
    built once settled).
    """
    reports = []
    for route in routes:
        server = start_server("--max-sessions", str(max(60, 2 * learners)), "--web-processes", str(web_processes),
                              *(("--ready-pages", str(ready_pages)) if ready_pages is not None else ()), up_seconds=300)
        try:
            if settle or ready_pages is not None:
                asyncio.run(settled(server, longest=600))
            report = asyncio.run(burst(server.url, route, learners, timeout)) | {"web_processes": web_processes}
            report["server_log_problems"] = server_log_problems(server.log())
        finally:
            stop_server(server)
        reports.append(report)
    return reports


def print_bursts(reports: list[dict]) -> None:
    print(f"opening burst: N learners open one page within 1 s, one fresh server per page; seconds from the first request "
          f"to each page's document received (goal: the last within {BURST_GOAL:g} s for 30)")
    for r in reports:
        ready = r["ready"]
        figures = f"p50 {ready['p50']:.1f} s, p95 {ready['p95']:.1f} s, last {ready['max']:.1f} s" if ready["n"] else "none ready"
        print(f"  /{r['route']}: {r['learners']} learners, {ready['n']} ready: {figures}; {len(r['errors'])} errors; "
              f"{len(r['server_log_problems'])} tracebacks or error lines in the server log")
        for line in (r["errors"] + r["server_log_problems"])[:5]:
            print(f"    {line}")


def server_log_problems(log: str) -> list[str]:
    """The last line of each traceback in the server's log (the exception), and its error lines."""
    lines, problems = log.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            end = next((j for j in range(i + 1, len(lines)) if not lines[j].startswith((" ", "\t"))), len(lines) - 1)
            problems.append(f"traceback: {lines[end]}")
        elif "ERROR" in line:
            problems.append(line)
    return problems


def print_report(r: dict) -> None:
    ms = lambda s: f"{1000 * s:.0f} ms"  # noqa: E731
    print(f"load test: {r['sessions']} learners for {r['seconds']:.0f} s (ran {r['wall_s']:.0f} s), {r['moves_per_page']} moves "
          f"per page visit, {r['think_s']:g} s (0.5x to 1.5x) between moves, {r['timeout_s']:.0f} s timeout")
    print(f"machine load (1, 5, 15 min) before: {r['machine_load_before']}; after: {r['machine_load_after']}")
    for route in (*ANALYTIC, "all"):
        m, ld, rd = (r[kind].get(route, {"n": 0}) for kind in ("moves", "loads", "readies"))
        moves = f"{m['n']} moves answered, p50 {ms(m['p50'])}, p95 {ms(m['p95'])}, max {ms(m['max'])}" if m["n"] else "no moves answered"
        loads = f"{ld['n']} loads, p50 {ms(ld['p50'])}, p95 {ms(ld['p95'])}, max {ms(ld['max'])}" if ld["n"] else "no loads"
        ready = f"sliders ready p50 {ms(rd['p50'])}, p95 {ms(rd['p95'])}" if rd["n"] else "no sliders ready"
        errors = r["errors"]["by_page"].get(route, 0) if route != "all" else r["errors"]["count"]
        print(f"  {route}: {moves}; {loads}; {ready}; {errors} errors")
    for m in r["by_minute"]:
        moves, loads, ready = m["moves"], m["loads"], m["readies"]
        print(f"  minute {m['minute']}: " + (f"{moves['n']} moves, p50 {ms(moves['p50'])}, p95 {ms(moves['p95'])}" if moves["n"] else "no moves")
              + "; " + (f"{loads['n']} loads, p50 {ms(loads['p50'])}, p95 {ms(loads['p95'])}" if loads["n"] else "no loads")
              + "; " + (f"sliders ready p50 {ms(ready['p50'])}, p95 {ms(ready['p95'])}" if ready["n"] else "no sliders ready"))
    g = r["gets"]
    if g["n"]:
        print(f"  of a load, its GET (the page built and sent): p50 {ms(g['p50'])}, p95 {ms(g['p95'])}, max {ms(g['max'])}; "
              "the rest is the websocket and the document")
    meets = all(r["moves"].get(p, {"n": 0})["n"] and r["moves"][p]["p95"] < GOAL_P95 for p in ANALYTIC)
    print(f"slider p95 under {GOAL_P95:g} s on every analytic page: {'yes' if meets else 'no'}")
    h = r["healthz"]
    if h["n"]:
        print(f"/healthz every 2 s during the test: {h['n']} answered, p50 {ms(h['p50'])}, p95 {ms(h['p95'])}, max {ms(h['max'])} (the event loop's wait)")
    e = r["errors"]
    print(f"errors: {e['count']}" + (f" ({', '.join(f'{k} {n}' for k, n in e['by_kind'].items())})" if e["count"] else ""))
    for what, n in sorted(e["by_what"].items(), key=lambda item: -item[1])[:10]:
        print(f"  {n} x {what}")
    print(f"server log ({r['server_log']}): {len(r['server_log_problems'])} tracebacks or error lines" +
          "".join(f"\n  {line}" for line in r["server_log_problems"][:10]))
    if "room" in r:
        room, lag = r["room"], r["room"]["lag"]
        print(f"the room: {room['answers_given']} answers given, the room view updated {room['updates']} times; its tally right with "
              f"the last pages open: {room['open']['right']} ({room['open']['shown']} shown, {room['open']['answers']} given), "
              f"once they closed: {room['closed']['right']} ({room['closed']['shown']} shown)")
        if lag["n"]:
            print(f"  the tally trailed an answer by p50 {ms(lag['p50'])}, p95 {ms(lag['p95'])}, max {ms(lag['max'])}; "
                  f"{room['never_shown']} answers never shown at their count")
            reached = room["reached"]
            print(f"  an answer was in the tally shown (a count the class held after it) after p50 {ms(reached['p50'])}, "
                  f"p95 {ms(reached['p95'])}, max {ms(reached['max'])} ({reached['n']} answers)")
    if "lm_run" in r:
        lm = r["lm_run"]
        per = f", {lm['s_per_step']:.2f} s per step" if lm["s_per_step"] else ""
        print(f"language-model run: {lm['steps_during_test']} steps during the test{per}; its tab still connected at the end: {lm['still_connected']}")
    rss = r["rss_mb"]
    print(f"server resident memory ({r['web_processes']} web process(es) together): {rss['idle']:.0f} MB idle, {rss['start']:.0f} MB at the start, {rss['end']:.0f} MB at the end, "
          f"{rss['after_expiry']:.0f} MB once closed sessions expired, peak {rss['peak']:.0f} MB")
    print(f"server still running at the end: {r['server_alive']}")
    print(f"the {r['web_processes']} web process(es) used {r['server_cpu_s']:.0f} CPU-seconds in the {r['wall_s']:.0f} s (one core "
          f"each: {r['server_cpu_s'] / r['wall_s'] / r['web_processes']:.0%}; an interpreter lock lets each use about one)")
    print(f"this process (the learners) used {r['client_cpu_s']:.1f} CPU-seconds of the machine's {2 * r['wall_s']:.0f} "
          f"({os.cpu_count()} cores x {r['wall_s']:.0f} s)")
    print("sliders that change a plot (the others change only text and are not moved): " +
          "; ".join(f"{route}: {', '.join(t)}" for route, t in r["plot_sliders"].items()))


def serve_and_load(args: argparse.Namespace, web_processes: int) -> dict:
    """One load test (main's options) on a fresh server of `web_processes` web processes; its report."""
    runs = Path(tempfile.mkdtemp(prefix="fl-load-runs-"))
    server = start_server("--web-processes", str(web_processes), "--max-sessions", str(max(60, 2 * args.sessions)),
                          env={"FEEDBACK_LAB_RUNS": str(runs), "OMP_NUM_THREADS": "1", "FEEDBACK_LAB_TEACHER_TOKEN": TEACHER_TOKEN},
                          up_seconds=300)
    try:
        report = asyncio.run(load_test(server, runs, args.sessions, args.seconds, not args.no_run, args.moves, args.think, args.timeout, 2000,
                                       args.room))
        time.sleep(2 * UNUSED_SESSION_SECONDS + 2)  # a closed session is dropped one to two lifetimes after its tab closed
        rss = web_resident_mb(server)
        report["rss_mb"] |= {"after_expiry": rss["VmRSS"], "peak": rss["VmHWM"]}
        report["server_alive"] = server.process.poll() is None
        report["server_log_problems"] = server_log_problems(server.log())
        report["server_log"] = str(server.log_path)
    finally:
        stop_server(server)
    return report


def print_side_by_side(reports: list[dict]) -> None:
    """The figures that say how many learners a server takes, one column per number of web processes."""
    ms = lambda s: f"{1000 * s:.0f} ms"  # noqa: E731
    spread = lambda f: f"{ms(f['p50'])} / {ms(f['p95'])} / {ms(f['max'])}" if f["n"] else "none"  # noqa: E731
    rows = [("web processes", lambda r: str(r["web_processes"]))]
    if "ready" in reports[0]:  # a burst
        rows += [("pages ready p50 / p95 / last", lambda r: spread(r["ready"])),
                 ("errors", lambda r: str(len(r["errors"]))),
                 ("tracebacks or error lines", lambda r: str(len(r["server_log_problems"])))]
        title = f"/{reports[0]['route']}: {reports[0]['learners']} learners open it within 1 s"
    else:
        rows += [("slider moves p50 / p95 / max", lambda r: spread(r["moves"]["all"])),
                 ("page loads p50 / p95 / max", lambda r: spread(r["loads"]["all"])),
                 ("sliders ready p50 / p95 / max", lambda r: spread(r["readies"]["all"])),
                 ("moves answered", lambda r: str(r["moves"]["all"]["n"])),
                 ("errors", lambda r: str(r["errors"]["count"])),
                 ("tracebacks or error lines", lambda r: str(len(r["server_log_problems"]))),
                 ("run steps in the test", lambda r: str(r.get("lm_run", {}).get("steps_during_test", "-"))),
                 ("web processes' CPU, share of a core each", lambda r: f"{r['server_cpu_s'] / r['wall_s'] / r['web_processes']:.0%}"),
                 ("web processes' memory at the end", lambda r: f"{r['rss_mb']['end']:.0f} MB"),
                 ("machine load before / after", lambda r: f"{r['machine_load_before']} / {r['machine_load_after']}")]
        title = f"{reports[0]['sessions']} learners for {reports[0]['seconds']:.0f} s"
    print(f"side by side, {title}:")
    for name, value in rows:
        print(f"  {name:<42}" + "".join(f"  {value(r):>32}" for r in reports))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30, help="simulated learners (default: 30)")
    parser.add_argument("--seconds", type=float, default=300, help="how long they work (default: 300)")
    parser.add_argument("--no-run", action="store_true", help="no language-model run during the test")
    parser.add_argument("--moves", type=int, default=15, help="slider moves per page visit (default: 15)")
    parser.add_argument("--think", type=float, default=3.0, help="mean seconds between a learner's moves (default: 3)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before an unanswered move or load is an error (default: 30)")
    parser.add_argument("--burst", type=int, default=0, metavar="N",
                        help="instead: N learners open each page of --pages within one second; print when each is ready")
    parser.add_argument("--pages", nargs="+", default=["baselines", "token-world"], help="the pages of --burst (default: baselines token-world)")
    parser.add_argument("--ready-pages", type=int, default=None, metavar="N",
                        help="with --burst: the server keeps N sessions of each page built ahead, and the burst waits until they are")
    parser.add_argument("--settled", action="store_true",
                        help="--burst waits until the server has settled (its start-up done) rather than coming as it answers")
    parser.add_argument("--room", action="store_true",
                        help="the teacher's room view open, and every learner answers the cards it meets, counted in the room")
    parser.add_argument("--web-processes", type=int, default=1, metavar="N", help="the server's web processes (default: 1)")
    parser.add_argument("--compare", type=int, nargs="+", default=[], metavar="N",
                        help="run the same test on a server of 1 web process, then of each N, and print them side by side")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.seconds <= 0 or args.burst < 0 or args.moves < 1 or args.web_processes < 1 or any(n < 1 for n in args.compare):
        parser.error("--sessions, --moves, --web-processes and each --compare must be at least 1, --seconds more than 0 "
                     "and --burst not negative")
    counts = list(dict.fromkeys([1, *args.compare])) if args.compare else [args.web_processes]
    if args.burst:
        runs = [run_bursts(args.pages, args.burst, args.timeout, args.ready_pages, n, args.settled) for n in counts]
        if args.json:
            print(json.dumps(runs if args.compare else runs[0], indent=1))
            return
        for reports in runs:
            print_bursts(reports)
        if args.compare:
            for by_page in zip(*runs):
                print_side_by_side(list(by_page))
        return
    reports = [serve_and_load(args, n) for n in counts]
    if args.json:
        print(json.dumps(reports if args.compare else reports[0], indent=1))
        return
    for report in reports:
        print_report(report)
    if args.compare:
        print_side_by_side(reports)


if __name__ == "__main__":
    main()
