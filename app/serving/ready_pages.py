"""Pages built before they are asked for: a lesson's opening served from sessions built while the server was idle.

The heaviest minute of a class is its first: thirty learners open their pages within a few
seconds, and Bokeh builds each session's page inside its HTTP request, on the one event loop
(0.1 to 0.2 s each), so the last learner waits for everyone's build. The server therefore keeps
`ServerLimits.ready_pages` sessions of each page that needs nothing of its visitor built ahead:
a page module with `READY_AHEAD = True`, whose first view is a function of its controls alone
(no run files, no job), the engines' results included. A visit with no query string takes one;
a visit with one (a shared link, the light/dark switch) has its page built for it as before.

A session built ahead is an ordinary Bokeh session of its route, made by the route's own
application: its `Document`, its page object, its close-on-tab-closed callback. It is built
without a visitor (its request is a plain GET of the route's path, no headers or cookies; the
pages read neither), kept from Bokeh's unused-session cleanup until it is handed out, and then:
admitted like any other visit (`app.serving.server.admit`: the "lab is full" page is built instead when
the server is full), given a fresh token carrying the visitor's request (the token the page's
HTML embeds; its websocket finds the session by the id inside it), and released to the cleanup
after the unused-session lifetime, as a visit whose websocket never came would be.

Builds of the ready sessions go after the visitors: one is built only when the server's process
has been nearly idle for a moment (`IDLE_SHARE`), one per `IDLE_WINDOW_SECONDS` at most, from the
start of the server on, and a taken session is replaced the same way. Built back to back they
would delay slider steps as visits do (a step needs several turns of the event loop, each behind
a build); spaced and held back while the server works, they fill the lulls. A server that was
just started, or that is never idle, builds its pages in their requests as before: the ready
sessions are for a lesson's opening on a server started before it. Their cost is memory: each
ready session holds its page (see the README).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

from bokeh.application.handlers.lifecycle import LifecycleHandler
from bokeh.server.contexts import ApplicationContext
from bokeh.server.session import ServerSession
from bokeh.server.urls import per_app_patterns
from bokeh.util.token import generate_jwt_token, generate_session_id
from panel.io.server import DocHandler
from panel.io.state import set_curdoc
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
from tornado.ioloop import IOLoop

from widgets.streaming import LOG

IDLE_WINDOW_SECONDS = 0.5
IDLE_SHARE = 0.2
"""A ready session is built only after a window of IDLE_WINDOW_SECONDS in which the server's process used less than
IDLE_SHARE of a core (its event loop and its jobs' threads together), at most one per window: builds go after visitors."""


class ReadyPages:
    """The sessions built ahead, by route path, and the one task that keeps them filled.

    `admit()`, called with a ready session's document as Panel's current one, admits a visit to it
    (app.serving.server.admit): it returns False when the server is full, and the visitor's page is then
    built (refused) as usual.
    """

    def __init__(self, per_route: int, admit: Callable[[], bool], unused_session_seconds: float):
        self.per_route = per_route
        self._admit = admit
        self._unused_s = unused_session_seconds
        self._contexts: dict[str, ApplicationContext] = {}
        self._ready: dict[str, deque[ServerSession]] = {}
        self._building: set[str] = set()  # session ids being built ahead, read by `building_ahead`
        self._wake: asyncio.Event | None = None
        self._filling: asyncio.Task | None = None

    # ------------------------------------------------------------------ wiring into the server

    def hook(self, path: str) -> LifecycleHandler:
        """A handler for the route's application: when the server has loaded it, the route's sessions start filling."""
        return _FillWhenLoaded(self, path)

    def _attach(self, path: str, context: ApplicationContext) -> None:
        self._contexts[path] = context
        self._ready.setdefault(path, deque())
        if self._filling is None:
            self._wake = asyncio.Event()
            self._filling = asyncio.ensure_future(self._keep_filled())
        self._wake.set()

    def building_ahead(self, session_id: str) -> bool:
        """Whether the session of this id is being built ahead (no visitor yet: not admitted, not counted)."""
        return session_id in self._building

    def waiting(self, path: str) -> list[str]:
        """The ids of the sessions of `path` built and waiting for a visitor, the next one handed out first."""
        return [session.id for session in self._ready.get(path, ())]

    # ------------------------------------------------------------------ a visit

    def take(self, handler: DocHandler) -> ServerSession | None:
        """The ready session for this GET, admitted and with the visitor's token, or None to build one as usual."""
        request = handler.request
        ready = self._ready.get(request.path)
        if not ready or request.query:
            return None
        session = ready.popleft()
        with set_curdoc(session.document):
            admitted = self._admit()
        if not admitted:
            ready.appendleft(session)
            return None
        app = handler.application
        session._token = generate_jwt_token(  # what the page's HTML embeds (Bokeh keeps a session's token here)
            session.id, secret_key=app.secret_key, signed=app.sign_sessions,
            expiration=app.session_token_expiration, extra_payload=handler._generate_token_payload(),
        )
        # Still kept from the cleanup until the unused-session lifetime has passed: a session never
        # connected counts as unused since it was built, and would otherwise go before the websocket came.
        IOLoop.current().call_later(self._unused_s, session.unblock_expiration)
        self._wake.set()
        return session

    # ------------------------------------------------------------------ building ahead

    async def _keep_filled(self) -> None:
        while True:
            path = min(self._ready, key=lambda p: len(self._ready[p]), default=None)
            if path is None or len(self._ready[path]) >= self.per_route:
                self._wake.clear()
                await self._wake.wait()
                continue
            cpu, start = time.process_time(), time.monotonic()
            await asyncio.sleep(IDLE_WINDOW_SECONDS)
            if time.process_time() - cpu < IDLE_SHARE * (time.monotonic() - start):
                await self._build(path)

    async def _build(self, path: str) -> None:
        context = self._contexts[path]
        session_id = generate_session_id()  # Bokeh's settings, as the server's own ids
        self._building.add(session_id)
        try:
            session = await context.create_session_if_needed(session_id, plain_get(path))
        except Exception:
            LOG.exception("A page of %s could not be built ahead; its visitors get theirs built for them", path)
            del self._ready[path]
            return
        finally:
            self._building.discard(session_id)
        session.block_expiration()
        self._ready[path].append(session)


class _FillWhenLoaded(LifecycleHandler):
    """Bokeh's hook of a route's application at server start: hands the route's context to the ready pages."""

    def __init__(self, ready: ReadyPages, path: str):
        super().__init__()
        self._ready_pages, self._path = ready, path

    def on_server_loaded(self, server_context) -> None:
        self._ready_pages._attach(self._path, server_context.application_context)


def plain_get(path: str) -> HTTPServerRequest:
    """A GET of `path` with no query or cookies, only the Host header HTTP/1.1 requires: what a session built ahead is built for."""
    return HTTPServerRequest(start_line=RequestStartLine("GET", path, "HTTP/1.1"), headers=HTTPHeaders({"Host": "localhost"}))


class ReadyDocHandler(DocHandler):
    """Panel's page handler, serving a visit without a query string a session built ahead when one is ready."""

    async def get_session(self) -> ServerSession:
        session = READY.take(self) if READY is not None else None
        return session if session is not None else await super().get_session()


def use_handler(page_handler: type[DocHandler] = ReadyDocHandler) -> None:
    """Have every Panel server of this process answer its pages' GETs with `page_handler` (a DocHandler, by default
    `ReadyDocHandler`), in place of Panel's handler or of one put there before.

    Bokeh builds each route's handlers from its module-level table `per_app_patterns`, where Panel
    has put its own page handler; the table has no other way in.
    """
    per_app_patterns[:] = [(route, page_handler if isinstance(handler, type) and issubclass(handler, DocHandler) else handler, *rest)
                           for route, handler, *rest in per_app_patterns]


READY: ReadyPages | None = None
"""The server's ready sessions (`serve` sets them up), None where none are kept."""
