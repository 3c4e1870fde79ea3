"""The Feedback Lab web app: one route per page present in app/pages, and an index at /.

    feedback-lab serve [--port 5006] [--address localhost] [--allow-websocket-origin HOST:PORT]

serves / (the index), /baselines, /preferences and every other page module that
exists, each in a shared template with navigation and a light/dark theme toggle.
Panel users can serve the same app, from the repository root, with

    PYTHONPATH=. panel serve app/server.py

(plain `panel serve app/server.py` once the project is installed, `pip install -e .`),
which puts it at /server; there the page is chosen by the query string
(/server?page=baselines), since `panel serve` gives one route per script.

Every browser session builds its own page object (no state shared between
sessions), and a page's `close()` runs when its tab closes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import panel as pn

from app.pages import PageInfo, available_pages

APP_TITLE = "Feedback Lab"
CSS = (Path(__file__).resolve().parent.parent / "assets" / "app.css").read_text()


def route_link(route: str) -> str:
    """Where `feedback-lab serve` serves a page ("" is the index)."""
    return f"/{route}"


def query_link(route: str) -> str:
    """Where `panel serve app/server.py` shows a page: one script, the page in the query."""
    return f"?page={route}" if route else "?"


def nav_html(pages: list[PageInfo], active: str, link: Callable[[str], str]) -> str:
    """The header's links: the index, then every page present; the active one marked."""
    entries = [("", "Overview")] + [(p.route, p.title) for p in pages]
    anchors = [
        f'<a href="{link(route)}"{" aria-current=page" if route == active else ""}>{title}</a>'
        for route, title in entries
    ]
    return f'<nav class="fl-nav">{"".join(anchors)}</nav>'


def index_view(pages: list[PageInfo], link: Callable[[str], str]) -> pn.Column:
    """The index: what the app is, then one linked entry per page present."""
    intro = pn.pane.Markdown(
        "An explorable of reinforcement learning for language models. Each page takes one idea "
        "of the policy gradient and of learning from preferences, shows its equation, and lets "
        "you move its numbers. Every control is in the address bar, so a link shares what you see.",
        sizing_mode="stretch_width",
    )
    items = "\n".join(f'<li><a href="{link(p.route)}">{p.title}</a>: {p.summary}</li>' for p in pages)
    return pn.Column(intro, pn.pane.HTML(f'<ol class="fl-index">{items}</ol>', sizing_mode="stretch_width", stylesheets=[CSS]))


def theme_toggle() -> pn.widgets.Button:
    """Light/dark switch: reloads with ?theme=dark or ?theme=default, which Panel's templates read.

    The rest of the query string (every control) is kept, so the state survives the switch.
    """
    button = pn.widgets.Button(label="Light / dark", color="light", width=110, align="center")
    button.js_on_click(
        code="""
        const url = new URL(window.location.href);
        url.searchParams.set('theme', url.searchParams.get('theme') === 'dark' ? 'default' : 'dark');
        window.location.href = url.toString();
        """
    )
    return button


def framed(body, pages: list[PageInfo], active: str, link: Callable[[str], str], title: str) -> pn.template.BootstrapTemplate:
    """`body` inside the shared template: header navigation and the light/dark switch."""
    template = pn.template.BootstrapTemplate(
        title=APP_TITLE,
        header=[pn.pane.HTML(nav_html(pages, active, link), sizing_mode="stretch_width", stylesheets=[CSS]), theme_toggle()],
        header_background="#0072B2",
        main_max_width="1100px",
        busy_indicator=None,  # it would send two extra messages on every slider step
    )
    template.main.append(pn.Column(pn.pane.Markdown(f"# {title}"), body, sizing_mode="stretch_width"))
    return template


def build_page(info: PageInfo, pages: list[PageInfo], link: Callable[[str], str]) -> pn.template.BootstrapTemplate:
    """One session's page: a fresh page object, framed; its work stops when the tab closes."""
    viewer = info.module.page()
    close = getattr(viewer, "close", None)
    if close is not None:
        pn.state.on_session_destroyed(lambda _context: close())
    return framed(viewer, pages, info.route, link, info.title)


def build_index(pages: list[PageInfo], link: Callable[[str], str]) -> pn.template.BootstrapTemplate:
    return framed(index_view(pages, link), pages, "", link, APP_TITLE)


def routes() -> dict[str, Callable[[], pn.template.BootstrapTemplate]]:
    """URL path -> a function building that page for a new session (pages present only)."""
    pages = available_pages()
    table = {"/": lambda: build_index(pages, route_link)}
    for info in pages:
        table[f"/{info.route}"] = lambda info=info: build_page(info, pages, route_link)
    return table


def titles() -> dict[str, str]:
    return {"/": APP_TITLE} | {f"/{p.route}": f"{p.title} · {APP_TITLE}" for p in available_pages()}


def serve(port: int = 5006, address: str = "localhost", websocket_origin: list[str] | None = None, show: bool = False, threaded: bool = False):
    """Start the server (blocking unless `threaded`); returns the server object."""
    origins = websocket_origin or [f"{address}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"]
    return pn.serve(
        routes(),
        port=port,
        address=address,
        websocket_origin=origins,
        show=show,
        title=titles(),
        threaded=threaded,
        print_url=not threaded,
    )


def panel_serve_view() -> pn.template.BootstrapTemplate:
    """The session of `panel serve app/server.py`: the page named by ?page=, else the index."""
    pages = available_pages()
    wanted = (pn.state.session_args.get("page") or [b""])[0].decode(errors="replace")
    for info in pages:
        if info.route == wanted:
            return build_page(info, pages, query_link)
    return build_index(pages, query_link)


if __name__.startswith("bokeh_app"):
    panel_serve_view().servable(title=APP_TITLE)
