"""The Feedback Lab web app: one route per page present in app/pages, and an index at /.

    feedback-lab serve [--port 5006] [--address localhost] [--allow-websocket-origin HOST:PORT] [--admin] [limits]

serves / (the index), /baselines, /preferences and every other page module that
exists, each in a shared template with navigation and a light/dark theme toggle,
/healthz (200 "ok" while the server answers) and, with --admin, Panel's /admin.
The limits (app/serving/limits.py) are options and FEEDBACK_LAB_* variables.
Panel users can serve the same app, from the repository root, with

    PYTHONPATH=. panel serve app/serving/server.py

(plain `panel serve app/serving/server.py` once the project is installed, `pip install -e .`),
which puts it at /server; there the page is chosen by the query string
(/server?page=baselines), since `panel serve` gives one route per script. The page
limits (sessions, compute seconds, run sizes) come from the FEEDBACK_LAB_* variables
there too; the unused-session lifetime and the websocket bound are `panel serve`'s own
options (--unused-session-lifetime, --websocket-max-message-size).

Every browser session builds its own page object (no state shared between
sessions), and a page's `close()` runs when its tab closes. `feedback-lab serve` builds a few
sessions of each analytic page before their visitors come (app/serving/ready_pages.py, `--ready-pages`).
"""

from __future__ import annotations

import base64
import functools
import gc
import html
import logging
import os
import re
import signal
import threading
import time
import webbrowser
from collections.abc import Callable
from functools import partial

import panel as pn
import tornado.ioloop
import tornado.web
from bokeh.server.session import ServerSession
from bokeh.settings import settings as bokeh_settings
from panel.io import document as panel_document
from panel.io.application import build_applications
from panel.io.document import create_doc_if_none_exists
from panel.io.notifications import NotificationArea
from panel.theme import Bootstrap

import assets
from app.freed_memory import trim_freed_memory
from app.pages import COURSE, PageInfo, available_pages
from app.pages.thumbnails import PICTURES, shipped
from app.serving import limits, ready_pages, room
from app.serving.classroom import serving_lines
from app.serving.cores import share_cores
from app.serving.origins import check_every_websocket_origin
from app.serving.web_processes import default_origins
from widgets import katex
from widgets.pace_banner import PaceBanner
from widgets.predict import guide_switch, session_guide
from widgets.streaming import LOG, deliver, session_document

APP_TITLE = "Feedback Lab"
CSS = assets.path("app.css").read_text()


def route_link(route: str) -> str:
    """Where `feedback-lab serve` serves a page ("" is the index)."""
    return f"/{route}"


def query_link(route: str) -> str:
    """Where `panel serve app/serving/server.py` shows a page: one script, the page in the query."""
    return f"?page={route}" if route else "?"


NAV_LABELS = {
    "baselines": "Baselines",
    "toy_target": "Toy target",
    "bandit": "Bandit",
    "token_world": "Token world",
    "group_baselines": "Group baselines",
    "live_run": "Live run",
    "kl": "KL penalty",
    "preferences": "Preferences",
    "reward_model": "Reward models",
    "lab": "Lab",
}
"""Each page's name in the header: a word or two of its title, so that the links fit on the header's one row from
1280 px wide. The link's accessible name and tooltip are the whole title, which contains these words (WCAG's label
in name)."""


def nav_html(pages: list[PageInfo], active: str, link: Callable[[str], str]) -> str:
    """The header's links: the index, then every page present, each by its short name (`NAV_LABELS`; `data-text`
    keeps its bold width, assets/app.css); the active one marked. Below `assets/app.css`'s width for one row they fold
    behind the menu button."""
    anchors = [f'<a href="{link("")}"{" aria-current=page" if active == "" else ""} data-text="Overview">Overview</a>']
    for p in pages:
        label = NAV_LABELS.get(p.name, p.title)
        name = f' aria-label="{html.escape(p.title)}" title="{html.escape(p.title)}"' if label != p.title else ""
        current = " aria-current=page" if p.route == active else ""
        anchors.append(f'<a href="{link(p.route)}"{current}{name} data-text="{html.escape(label)}">{label}</a>')
    return f'<nav class="fl-nav" aria-label="Pages">{MENU_BUTTON}<div class="fl-links" id="fl-links">{"".join(anchors)}</div>{THEME_SWITCH}</nav>'


MENU_BUTTON = (
    '<button type="button" class="fl-menu" aria-expanded="false" aria-controls="fl-links" '
    "onclick=\"const open = this.parentElement.classList.toggle('fl-open'); this.setAttribute('aria-expanded', open); "
    "document.getElementById('header').classList.toggle('fl-open', open);\">Menu</button>"
)
"""The menu button of a narrow screen: shows or hides the links, and on a phone the header's switches (`#header.fl-open`,
assets/page.html); hidden where the links fit on the header's row (assets/app.css)."""


SWITCHES_CSS = ".fl-guide { display: flex !important; margin: 1px 0 1px 10px !important; font-size: 0.9em; }"
"""The guided-prompts and room switches one above the other, at the header row's right end: side by side they took
the width of three page links."""


THEME_SWITCH = (
    '<button type="button" class="fl-theme" onclick="const url = new window.URL(window.location.href); '
    "url.searchParams.set('theme', url.searchParams.get('theme') === 'dark' ? 'default' : 'dark'); "
    'window.location.href = url.toString();">Light / dark</button>'
)
"""The light/dark switch: reloads with ?theme=dark or ?theme=default, which Panel's templates read, keeping the rest
of the query string (every control), so the state survives the switch. A button of the header's HTML rather than a
Panel button with a JavaScript callback: any such callback makes Panel search every model of every page's document
for linked objects on each visit (about 25 ms of a 0.25 s visit). (`window.URL`: in an inline handler a bare `URL`
is the document's own `document.URL`, a string.)"""


NOTATION = (
    ("x, y", "a prompt, and a reply y = (y<sub>1</sub>, …, y<sub>T</sub>) of T tokens"),
    ("s<sub>t</sub>, a<sub>t</sub>", "state and action at step t; for text s<sub>t</sub> = (x, y<sub>&lt;t</sub>), the prompt and the tokens so far, and a<sub>t</sub> = y<sub>t</sub>, the next token"),
    ("π<sub>θ</sub>(a | s)", "the policy, with parameters θ (logits on these pages); for text, the language model"),
    ("r<sub>t</sub>, R(x, y)", "the reward at step t; the reward of a whole reply"),
    ("G<sub>t</sub>", "the return from step t on, the reward-to-go; G = G<sub>1</sub> is the whole episode's"),
    ("J(θ)", "the expected return, what training maximises"),
    ("b, b<sub>t</sub>", "a baseline subtracted from the reward or return; it must not depend on the sampled action. b* is the constant with the least variance"),
    ("N", "sampled replies in one gradient estimate"),
    ("V(s), Q(s, a)", "the expected return from a state, and from a state after a given action (the critic learns V; module 9 writes v<sub>ψ</sub>, and its V is the vocabulary, as on the toy target page)"),
    ("A(s, a)", "the advantage Q − V: how much better an action is than the policy's average from that state"),
    ("δ<sub>t</sub>", "the TD error r<sub>t</sub> + γ V(s<sub>t+1</sub>) − V(s<sub>t</sub>)"),
    ("λ", "GAE's weight on later TD errors, from 0 (one TD error) to 1 (the return minus V)"),
    ("γ", "the discount; 1 for text"),
    ("β", "the KL coefficient: what one nat of distance from the reference costs, in reward units"),
    ("π<sub>ref</sub>, π*", "the frozen reference model the policy starts from; the best policy under reward − β·KL"),
    ("u", "the latent quality of a response in the Bradley–Terry model"),
    ("τ<sub>label</sub>", "the label temperature of a noisy rater: low is consistent, high is a coin (τ alone stays the sampling temperature)"),
    ("a ≻ b, (x, y<sub>w</sub>, y<sub>l</sub>)", "a is preferred to b; a preference triple, winner y<sub>w</sub> and loser y<sub>l</sub>"),
    ("g(y)", "the gold score: the hidden rule that generates the preferences"),
    ("r<sub>φ</sub>", "the reward model, with parameters φ, trained on the comparisons"),
    ("σ, Acc*", "the logistic sigmoid 1 / (1 + e<sup>−a</sup>); the best accuracy any model can reach on noisy labels"),
)
"""The reference card of the index: module 9's notation table, with chapter 6's symbols, as the pages use them."""

INDEX_CSS = """
.fl-card-title { font-size: 1.25em; margin: 0.2em 0; }
.fl-stage { font-size: 1.25em; margin: 0.9em 0 0.3em; }
.fl-index { margin: 0; padding-left: 2em; }
.fl-index > li { margin: 0 0 0.8em; }
.fl-entry { display: flex; flex-wrap: wrap; gap: 0.4em 1em; align-items: flex-start; }
.fl-entry img { flex: none; border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 4px; }
.fl-entry-text { flex: 1 1 10em; min-width: 0; align-self: baseline; }  /* the number sits by the title, not the picture's foot */
@media (max-width: 480px) { .fl-entry img { width: 112px; height: auto; } }  /* a phone keeps the picture beside its text */
.fl-entry-text a { font-weight: 600; }
.fl-sections { opacity: 0.75; font-size: 0.9em; }
.fl-notation { border-collapse: collapse; }
.fl-notation th, .fl-notation td { padding: 0.2em 0.8em; border-bottom: 1px solid rgba(128, 128, 128, 0.35); text-align: left; vertical-align: top; }
.fl-notation td:first-child { white-space: nowrap; font-family: serif; font-size: 1.1em; }
"""


def notation_html() -> str:
    rows = "".join(f"<tr><td>{symbol}</td><td>{meaning}</td></tr>" for symbol, meaning in NOTATION)
    return f'<table class="fl-notation"><thead><tr><th>Symbol</th><th>Meaning</th></tr></thead><tbody>{rows}</tbody></table>'


@functools.cache
def picture_html(name: str) -> str:
    """A page's picture (assets/thumbnails/, drawn by `feedback-lab thumbnails`) as an `<img>` with its alt text, the
    file inlined as a data URI; "" for a page without one. Inlined, the index needs no route of its own for them, under
    `feedback-lab serve`, `panel serve` and a proxy alike; the nine files are about 9 KB in all."""
    path = shipped(name)
    if name not in PICTURES or not path.is_file():
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<img src="data:image/svg+xml;base64,{data}" width="160" height="96" '
            f'alt="{html.escape(PICTURES[name].alt)}">')


def course_html(pages: list[PageInfo], link: Callable[[str], str]) -> str:
    """The course as a path: each stage of `COURSE` a heading, its pages present a numbered entry, with its picture,
    its title linked, where it is in the texts and its summary; the numbers run on across the stages."""
    present = {p.name: p for p in pages}
    parts, number = [], 1
    for stage, names in COURSE:
        entries = [present[name] for name in names if name in present]
        if not entries:
            continue
        items = "".join(
            f'<li><div class="fl-entry">{picture_html(p.name)}<div class="fl-entry-text"><a href="{link(p.route)}">{p.title}</a>'
            + (f' <span class="fl-sections">({p.sections})</span>' if p.sections else "")
            + f"<br>{p.summary}</div></div></li>"
            for p in entries
        )
        parts.append(f'<h2 class="fl-stage">{stage}</h2><ol class="fl-index" start="{number}">{items}</ol>')
        number += len(entries)
    return "".join(parts)


def index_view(pages: list[PageInfo], link: Callable[[str], str]) -> pn.Column:
    """The index: what the app is, the course as a path (one entry per page present, with its picture), the notation
    card."""
    intro = pn.pane.Markdown(
        "An explorable of reinforcement learning for language models. Each page takes one idea "
        "of the policy gradient and of learning from preferences, shows its equation, and lets "
        "you move its numbers. Every control is in the address bar, so a link shares what you see.\n\n"
        "The pages follow two texts, chapter 6 of *How Models Are Trained* (“Reinforcement learning, from "
        "scratch”) and module 9 of the workshop (“Reinforcement and Preference Learning”), each in its own "
        "order of sections: first the policy gradient and its noise, then critics, then a language model "
        "and its KL penalty, then rewards learned from comparisons. Most pages ask you to predict before "
        "they show; the switch in the header turns those prompts off, in this browser only.",
        sizing_mode="stretch_width",
    )
    notation = pn.Card(
        pn.pane.HTML(notation_html(), sizing_mode="stretch_width", stylesheets=[INDEX_CSS]),
        # A card's title is an <h3>; under the page's <h1> the next level is <h2> (headings in order).
        header=pn.pane.HTML('<h2 class="fl-card-title">Notation: the symbols of every page</h2>', stylesheets=[INDEX_CSS]),
        sizing_mode="stretch_width",
        css_classes=["fl-notation-card"],
    )
    return pn.Column(intro, pn.pane.HTML(course_html(pages, link), sizing_mode="stretch_width", stylesheets=[CSS, INDEX_CSS]), notation)


class TemplateBootstrap(Bootstrap):
    """Bootstrap as the template applies it: a pane's update asks for the stylesheets the page was built with.

    The template applies its design to the page as not isolated (the template's HTML loads
    Bootstrap and the theme's CSS once), but `Design.params`, which every pane's update calls,
    adds the isolated set (bootstrap.min.css and the theme's CSS again). A pane's first update
    then swapped its stylesheets, and Bokeh walked the whole document: a page's first slider step
    cost 140 ms on token world instead of 14.
    """

    def params(self, viewable, doc=None):
        cache = {} if doc is None else pn.state._stylesheets.setdefault(doc, {})
        modifiers, child_modifiers = self._get_modifiers(viewable, theme=self.theme, isolated=False)
        self._patch_modifiers(doc, modifiers, cache)
        return modifiers, child_modifiers


class PageTemplate(pn.template.BootstrapTemplate):
    """Panel's Bootstrap template in assets/page.html (a phone's width, accessible names and landmarks for what
    Bokeh draws), its session document's set of models computed once rather than once per root.

    Bokeh recomputes a document's models (a walk of every property of every model reachable from
    its roots) each time a root is added, unless the document is frozen; the template adds about
    ten roots (header, main, sidebar, modal, notifications, location...), so a visit walked the
    whole page ten times: 35 to 60 ms of a 0.25 to 0.4 s visit.
    """

    _template = assets.path("page.html")

    def server_doc(self, doc=None, title=None, location=True):
        doc = create_doc_if_none_exists(doc)
        with doc.models.freeze():
            return super().server_doc(doc, title, location)

    def _init_doc(self, doc=None, comm=None, title=None, notebook=False, location=True):
        """Panel's, and the document's hidden root noted where the template's own session cleanup looks for it.

        Panel (1.9) lists that root's id in the process-wide `state._fake_roots` and its template's
        `_server_destroy` removes the id kept in `self._refs`, which Panel never fills: every visit
        left its id (56 bytes) listed for good, and every update of every session searched the
        list (`ref in state._fake_roots`)."""
        document = super()._init_doc(doc, comm, title, notebook, location)
        hidden_root = next((ref for ref in reversed(pn.state._fake_roots)
                            if pn.state._views.get(ref, (None,) * 4)[2] is document), None)
        if hidden_root is not None:
            self._refs[document] = hidden_root
        return document


def join_room(route: str) -> PaceBanner:
    """Count this session on `route` in the room (app.serving.room) from the moment its browser has loaded the page until the
    tab closes, with its answers to the page's cards; and the banner that shows where the teacher sends the class."""
    doc = session_document()
    guide = session_guide()
    request = doc.session_context.request if doc is not None else None
    query = "&".join(f"{k}={v[0].decode(errors='replace')}" for k, v in request.arguments.items()) if request is not None else ""
    banner = PaceBanner(here=f"/{route}" + (f"?{query}" if query else ""))
    the_room = room.current()
    show = lambda pace: banner.show(pace.link, pace.title) if pace is not None else banner.show(None)  # noqa: E731
    show(the_room.pace)
    if doc is None:
        return banner
    stop_following = the_room.follow_pace(lambda pace: deliver(doc, partial(show, pace)))
    leave = []
    context = doc.session_context
    is_open = lambda: context.session is None or context.session.connection_count > 0  # noqa: E731 (see app.serving.limits)
    pn.state.onload(lambda: leave.append(the_room.enter(context.id, route, guide, is_open)))

    def left(_context) -> None:
        stop_following()
        for step in leave:
            step()

    pn.state.on_session_destroyed(left)
    return banner


def framed(body, pages: list[PageInfo], active: str, link: Callable[[str], str], title: str, learners: bool = True) -> PageTemplate:
    """`body` inside the shared template: header navigation with the light/dark switch, the guided-prompts and room
    switches; on a learner's page (`learners`), the teacher's banner above the page, and the session counted in the room."""
    switches = guide_switch(session_guide())
    switches.param.update(css_classes=[*switches.css_classes, "fl-switches"], stylesheets=[*switches.stylesheets, SWITCHES_CSS])
    template = PageTemplate(
        title=APP_TITLE,
        header=[
            pn.pane.HTML(nav_html(pages, active, link), sizing_mode="stretch_width", stylesheets=[CSS]),
            switches,
        ],
        header_background="#0072B2",
        meta_viewport="width=device-width, initial-scale=1",  # without it a phone lays the page out 980 px wide
        design=TemplateBootstrap,
        main_max_width="1100px",
        busy_indicator=None,  # it would send two extra messages on every slider step
        notifications=NotificationArea(),  # where `session_exception` tells this session what went wrong
        css_files=[katex.FONTS],  # KaTeX's @font-face rules in the head (widgets/katex.py)
    )
    top = [join_room(active)] if learners else []
    template.main.append(pn.Column(*top, pn.pane.Markdown(f"# {title}"), body, sizing_mode="stretch_width"))
    return template


def build_page(info: PageInfo, pages: list[PageInfo], link: Callable[[str], str]) -> PageTemplate:
    """One session's page: a fresh page object, framed; its work stops when the tab closes."""
    viewer = info.module.page()
    close = getattr(viewer, "close", None)
    if close is not None:
        pn.state.on_session_destroyed(lambda _context: close())
    return framed(viewer, pages, info.route, link, info.title)


def build_index(pages: list[PageInfo], link: Callable[[str], str]) -> PageTemplate:
    return framed(index_view(pages, link), pages, "", link, APP_TITLE)


def build_room(pages: list[PageInfo], link: Callable[[str], str]) -> pn.viewable.Viewable:
    """The teacher's room view, or the one sentence of refusal without the teacher's token.

    The HTTP GET of /room is refused before any session is built (`GatedDocHandler`); this check
    covers a session opened by its websocket alone, whose arguments come from the token it carries.
    """
    given = (pn.state.session_args.get("token") or [b""])[0].decode(errors="replace")
    if not room.TOKEN.admits(given):
        return pn.pane.Markdown(room.REFUSED, css_classes=["fl-refused"])
    return framed_room(pages, link)


def framed_room(pages: list[PageInfo], link: Callable[[str], str]) -> PageTemplate:
    """The room view in the template, its feeds stopped when the tab closes."""
    from app.pages import room as room_page

    view = room_page.page()
    pn.state.on_session_destroyed(lambda _context: view.close())
    return framed(view, pages, room.ROUTE, link, room_page.TITLE, learners=False)


FULL = "The lab is full: {n} sessions are open, the most this server takes; please try again in a few minutes."
"""The whole page a visitor beyond `ServerLimits.max_sessions` gets."""


MAX_QUERY_VALUE_CHARS = 4000
"""Longest query value a link may carry: more than any control takes, and under Python's 4300-digit
bound on int(), which Panel's Location would otherwise hit while reading the link."""
TOO_LONG = "This link has a value longer than {n:,} characters, more than any control takes; open [the page without it]({path})."


def too_long_value() -> bool:
    """Whether this session's link has an over-long query value; if so its query is dropped from the request
    (before Panel's Location reads it), so the session can still be built."""
    request = pn.state.curdoc.session_context.request if pn.state.curdoc and pn.state.curdoc.session_context else None
    if request is None or not any(len(v) > MAX_QUERY_VALUE_CHARS for values in request.arguments.values() for v in values) \
            and len(request.uri) <= 64 * MAX_QUERY_VALUE_CHARS and not any(len(k) > MAX_QUERY_VALUE_CHARS for k in request.arguments):
        return False
    request._request.uri = request._request.path  # tornado's request; the proxy reads through to it
    return True


def admit() -> object | None:
    """Count this session among the open ones until its tab closes (`limits.SESSIONS`): its ticket, or None when full."""
    server_limits = limits.current()
    context = pn.state.curdoc.session_context if pn.state.curdoc else None
    ticket = limits.SESSIONS.enter(server_limits.max_sessions, context, server_limits.unused_session_seconds)
    if ticket is not None:
        pn.state.on_session_destroyed(lambda _context: limits.SESSIONS.leave(ticket))
        pn.state.onload(lambda: limits.SESSIONS.connected(ticket))
    return ticket


def admitted(build: Callable[[], pn.viewable.Viewable]) -> Callable[[], pn.viewable.Viewable]:
    """`build` for a new session while the server has room for one more, else the one-sentence page.

    A session built ahead (app.serving.ready_pages) has no visitor yet: it is admitted when one takes it.
    """

    def session():
        context = pn.state.curdoc.session_context if pn.state.curdoc else None
        if ready_pages.READY is not None and context is not None and ready_pages.READY.building_ahead(context.id):
            return build()
        if too_long_value():
            return pn.pane.Markdown(TOO_LONG.format(n=MAX_QUERY_VALUE_CHARS, path=pn.state.location.pathname), css_classes=["fl-refused"])
        ticket = admit()
        if ticket is None:
            return pn.pane.Markdown(FULL.format(n=limits.current().max_sessions), css_classes=["fl-full"])
        try:
            return build()
        except BaseException:
            limits.SESSIONS.leave(ticket)
            raise

    return session


def routes() -> dict[str, Callable[[], PageTemplate]]:
    """URL path -> a function building that page for a new session (pages present only)."""
    pages = available_pages()
    table = {"/": admitted(lambda: build_index(pages, route_link))}
    for info in pages:
        table[f"/{info.route}"] = admitted(lambda info=info: build_page(info, pages, route_link))
    table[f"/{room.ROUTE}"] = admitted(lambda: build_room(pages, route_link))
    return table


def titles() -> dict[str, str]:
    return {"/": APP_TITLE, f"/{room.ROUTE}": f"The room · {APP_TITLE}"} | {f"/{p.route}": f"{p.title} · {APP_TITLE}" for p in available_pages()}


class GatedDocHandler(ready_pages.ReadyDocHandler):
    """The pages' handler, which answers a GET of the room view without the teacher's token with HTTP 403 and one
    sentence, before any session is built for it."""

    async def get(self, *args, **kwargs):
        if self.request.path == f"/{room.ROUTE}" and not room.TOKEN.admits(self.get_query_argument("token", None)):
            self.set_status(403)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.set_header("Cache-Control", "no-store")
            self.finish(room.REFUSED)
            return
        await super().get(*args, **kwargs)


class HealthHandler(tornado.web.RequestHandler):
    """GET /healthz: 200 "ok" while the server's event loop answers (for load balancers and Docker)."""

    def get(self):
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.write("ok")


REFUSED = "That value was not taken, so the page keeps the one it had: {reason}"
"""What a session's user reads when a control sent a value its parameter refuses (an emptied number box)."""
BROKEN = "Something went wrong on the server ({kind}); it is logged, and the page goes on."


def refusal_reason(error: Exception) -> str:
    """param's message, readable: "... must be an integer, not <class 'NoneType'>." -> "... not empty."."""
    text = re.sub(r"<class '(\w+)'>", r"\1", str(error)).replace("not NoneType", "not empty")
    return text if text.endswith(".") else text + "."


def refused_value(error: BaseException) -> bool:
    """Whether `error` is param refusing a value (its messages name the parameter), not a bug."""
    return isinstance(error, ValueError) and re.search(r"\bparameter '[^']+'", str(error)) is not None


def exception_message(error: BaseException) -> str:
    """The one sentence a session's user reads about `error`."""
    if refused_value(error):
        return REFUSED.format(reason=refusal_reason(error))
    return BROKEN.format(kind=type(error).__name__)


def session_exception(error: BaseException) -> None:
    """Panel's handler for an exception in a session's callback: logged (a bug with its traceback), and told to
    that session's user in one sentence; the session and the server go on."""
    if refused_value(error):
        LOG.warning("A session's value was refused: %s", error)
    else:
        LOG.error("A session's callback failed", exc_info=error)
    notifications = pn.state.notifications
    if notifications is not None:
        notifications.error(html.escape(exception_message(error)), duration=10_000)


def log_to_stderr() -> None:
    """Send the app's own log (the "feedback_lab" logger: a job's unexpected error, with its traceback) to
    stderr with time and level, as the server's other messages go."""
    if not LOG.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        LOG.addHandler(handler)
        LOG.setLevel(logging.INFO)


CLOSED_CONNECTION_LOGGERS = ("asyncio", "tornado.application", "tornado.general", "bokeh.server.views.ws",
                             "bokeh.server.protocol_handler", "bokeh.server.session", "panel.io.document")
"""Where tornado, asyncio, Bokeh and Panel report an error met while writing to or reading from a websocket."""


def closed_connection(error: BaseException | None) -> bool:
    """Whether `error` only says that a learner's websocket closed while the server was writing or answering:
    tornado's WebSocketClosedError and StreamClosedError, or Bokeh's assertion that the connection still has a
    session (raised by a message that arrives as its session is torn down)."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    if isinstance(error, (WebSocketClosedError, StreamClosedError)):
        return True
    if isinstance(error, AssertionError) and error.__traceback__ is not None:
        tb = error.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        return f"bokeh{os.sep}server{os.sep}" in tb.tb_frame.f_code.co_filename
    return False


class ClosedConnectionFilter(logging.Filter):
    """Write a tab that closed mid-message as one INFO line instead of an error with its traceback.

    A learner who closes a tab, or whose network drops, while the server sends a plot's new data is
    normal in a classroom; thirty of them left the log of one load test with 25 tracebacks that hid the
    real errors. Bokeh's and Panel's own warning about it ("Failed sending message as connection was
    closed") becomes INFO too. Every other record passes unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.levelno == logging.WARNING and str(record.msg).startswith("Failed sending message"):
            record.levelno, record.levelname = logging.INFO, "INFO"
        elif closed_connection(error):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "A websocket closed while the server used it (%s); its session ends", (type(error).__name__,)
            record.exc_info = record.exc_text = None
        return True


def quiet_closed_connections() -> None:
    """Put `ClosedConnectionFilter` on every logger that reports a closed websocket (once)."""
    for name in CLOSED_CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ClosedConnectionFilter) for f in logger.filters):
            logger.addFilter(ClosedConnectionFilter())


LEFT_SESSION_CHECK_MS = 1000
"""How often Bokeh's server looks for sessions to end: a page whose last connection closed ends within it."""


def end_sessions_when_their_page_closes() -> None:
    """End a session as soon as its last websocket closes, not `unused_session_seconds` later.

    Bokeh discards a session once it has had no connection for its unused-session lifetime, a
    grace meant for a page that has not connected yet (under load a browser may take seconds to
    open its websocket). A page that was connected and closed (a closed tab, a page left) has
    no such reason to wait, and its session's end is what stops its jobs: with Bokeh's 15 s
    lifetime and 15 s checks, a learner who left held a live run's place for up to half a minute.
    Bokeh's own `request_expiration` marks the session for its next check (`LEFT_SESSION_CHECK_MS`).
    """
    if getattr(ServerSession.unsubscribe, "ends_session", False):
        return
    unsubscribe = ServerSession.unsubscribe

    def unsubscribe_and_end(self, connection) -> None:
        unsubscribe(self, connection)
        if self.connection_count == 0:
            self.request_expiration()

    unsubscribe_and_end.ends_session = True
    ServerSession.unsubscribe = unsubscribe_and_end


def skip_document_validation() -> None:
    """Build each session's document without Bokeh's integrity checks (its setting `validate_doc`, BOKEH_VALIDATE_DOC).

    Bokeh runs them on every new document, walking every model of it once per root: about 20 ms
    of a visit's 0.3 s here, and an opening burst of thirty visits builds thirty documents one
    after another. The pages' documents are the same for every visit, so the checks run once per
    page in the tests instead (tests/app/test_page_models.py), which fail on any error or warning.
    """
    bokeh_settings.perform_document_validation.set_value(False)


COLLECT_THREAD = "feedback-lab-collect"
NEVER = 2**30
"""A gen-1 count Python's collector never reaches before our own collections reset it."""


def collect_on_a_timer(every: float) -> bool:
    """Make the process's full garbage collections one every `every` seconds, after leaving every object alive now
    out of them (`gc.freeze`: the libraries, the pages' modules and caches, never garbage); False if already so.

    A full collection walks every tracked object of the process and holds the interpreter while it
    does. Panel starts one 5 s after a session closes (`panel.io.document.GC_DEBOUNCE`, unless
    another closes meanwhile) and Python one whenever the objects that survived younger
    collections have grown by a quarter: with thirty learners changing page, a full collection
    every few seconds (16 in 90 s), the later ones walking about a million objects for 0.5 to 1.1 s
    each, every slider step and page load waiting behind them. A closed session's page is cyclic
    garbage that only a full collection frees, so they cannot stop; the cost of one is the objects
    alive, not the garbage, so fewer of them pause the server less. The server's `collect_seconds`
    (120 s by default; app.serving.limits) sets how long a closed page's memory may wait. Panel's own then
    comes only after that long without a session closing. Younger generations are collected as
    before. Started once per process, on a daemon thread.
    """
    if any(t.name == COLLECT_THREAD for t in threading.enumerate()):
        return False
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    panel_document.GC_DEBOUNCE = max(panel_document.GC_DEBOUNCE, every)

    def collect() -> None:
        while True:
            time.sleep(every)
            gc.collect()

    threading.Thread(target=collect, name=COLLECT_THREAD, daemon=True).start()
    return True


MAX_REQUEST_HEADER_BYTES = 1 << 20
"""Longest request line and headers accepted (tornado's own 64 KiB would drop a long link without a word)."""


def serve(
    port: int = 5006,
    address: str = "localhost",
    websocket_origin: list[str] | None = None,
    show: bool = False,
    threaded: bool = False,
    server_limits: limits.ServerLimits | None = None,
    admin: bool = False,
    teacher: room.TeacherToken | None = None,
    the_room: room.Room | None = None,
    lines: list[str] | None = None,
):
    """Start the server (blocking unless `threaded`); returns the server object.

    `teacher` is the room view's token (default: a new random one; its link is printed, never
    logged), `the_room` the room its learners are counted in (default: this process's alone).
    `lines` are printed instead of the address served and the teacher's link (`serve --class`'s).
    Only the hosts of `websocket_origin` open sessions (app/serving/origins.py).

    `server_limits` (default: the environment's) are installed for the pages to read; the
    unused-session lifetime and the websocket message bound go to Bokeh's server. `admin`
    adds Panel's admin page at /admin; `server_limits.ready_pages` sessions of each analytic page are
    kept built ahead (app/serving/ready_pages.py). One process serves every session (no `num_procs`:
    it has no session affinity); deploy/nginx.conf puts several processes behind a proxy.
    """
    server_limits = server_limits or limits.from_environment()
    limits.install(server_limits)
    share_cores()
    trim_freed_memory()
    log_to_stderr()
    quiet_closed_connections()
    skip_document_validation()
    katex.leave_panels_stylesheet_out()
    end_sessions_when_their_page_closes()
    check_every_websocket_origin()
    pn.config.exception_handler = session_exception
    origins = websocket_origin or default_origins(address, port)
    room.install_token(teacher or room.TeacherToken())
    if the_room is not None:
        room.install(the_room)
    lifetime_ms = int(server_limits.unused_session_seconds * 1000)
    table = routes()  # imports every page module first, so the freeze below leaves them out of later collections
    collect_on_a_timer(server_limits.collect_seconds)
    if not threaded:
        stop_on_sigterm()
        # On standard output, the address to open and the teacher's link; the log (standard error) never holds the link.
        print("\n".join(lines or serving_lines(origins, room.TOKEN.link("http://" + origins[0]))), flush=True)
        if show:  # the address printed, never 0.0.0.0 (Panel's would open the address listened on), once serving
            tornado.ioloop.IOLoop.current().add_callback(webbrowser.open, f"http://{origins[0]}/")
    return pn.serve(
        applications(table, server_limits),
        port=port,
        address=address,
        websocket_origin=origins,
        show=show and threaded,
        title=titles(),
        threaded=threaded,
        print_url=not threaded,
        verbose=False,  # Panel's line would name the address listened on, 0.0.0.0 included; ours names the one to type
        admin=admin,
        extra_patterns=[(r"/healthz", HealthHandler)],
        unused_session_lifetime_milliseconds=lifetime_ms,  # Bokeh's --unused-session-lifetime
        check_unused_sessions_milliseconds=min(lifetime_ms, LEFT_SESSION_CHECK_MS),
        websocket_max_message_size=server_limits.websocket_max_bytes,
        http_server_kwargs={"max_header_size": MAX_REQUEST_HEADER_BYTES},
    )


def stop_on_sigterm() -> None:
    """Take SIGTERM (`docker stop`, `docker compose down`, systemd) as Ctrl-C: the server stops and the process leaves
    through its exit handlers, which close the model jobs' cluster (app.jobs.cluster.Cluster.close).

    Panel's serve stops on SIGINT only (it sets that handler once serving); under Python's default a SIGTERM ends the
    process at once, so its local cluster's workers learned of it only when their nannies were gone, and their
    semaphores were left for the resource tracker to report.
    """
    signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))


def applications(table: dict[str, Callable[[], pn.viewable.Viewable]], server_limits: limits.ServerLimits) -> dict:
    """Panel's applications of the routes; those of pages built ahead (app.serving.ready_pages) keep `ready_pages` sessions ready."""
    apps = build_applications(table, title=titles())
    ready_pages.use_handler(GatedDocHandler)
    ready = [path for path in (f"/{info.route}" for info in available_pages() if info.ready_ahead) if path in apps]
    if server_limits.ready_pages == 0 or not ready:
        ready_pages.READY = None
        return apps
    ready_pages.READY = ready_pages.ReadyPages(server_limits.ready_pages, admit=lambda: admit() is not None,
                                               unused_session_seconds=server_limits.unused_session_seconds)
    for path in ready:
        apps[path].add(ready_pages.READY.hook(path))
    return apps


def panel_serve_view() -> PageTemplate:
    """The session of `panel serve app/serving/server.py`: the page named by ?page=, else the index."""
    pages = available_pages()
    wanted = (pn.state.session_args.get("page") or [b""])[0].decode(errors="replace")
    for info in pages:
        if info.route == wanted:
            return build_page(info, pages, query_link)
    return build_index(pages, query_link)


def serve_panel_session() -> None:
    """Make this session's page servable, for `panel serve app/serving/server.py`."""
    pn.config.exception_handler = session_exception
    skip_document_validation()
    katex.leave_panels_stylesheet_out()
    admitted(panel_serve_view)().servable(title=APP_TITLE)


if __name__.startswith("bokeh_app"):
    # `panel serve` runs this file as a fresh module for each session and empties that module when the session ends,
    # before the session's end callbacks run: the callbacks are made by the imported module, whose names outlive it.
    from app.serving import server

    server.serve_panel_session()
