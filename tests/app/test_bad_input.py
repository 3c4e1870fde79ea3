"""Hostile links through the real server: every page route, every control, answered with 200 and no traceback."""

import inspect
import urllib.parse

import panel as pn
import pytest

from app.pages import available_pages

HOSTILE = (
    "", "%00%01%1b[31m%7f%0a", "%ff%fe%c3%28", "nan", "NaN", "inf", "-inf", "-1", "-1e308", "1e308",
    "99999999999999999999999", "0x10", "[1, 2", "{}", "../../etc/passwd", "unknown-model-id", "true%e2%80%ae",
)
"""Empty, control characters, bytes that are not UTF-8, NaN and infinities, negative and huge numbers,
malformed JSON, a path outside every folder, an unknown name (already percent-encoded where they must be)."""
LONG = "9" * 100_000
"""A value of 100,000 characters."""


def controls(module) -> list[str]:
    """The query names of a page: its Viewer class's parameters."""
    viewers = [c for _, c in inspect.getmembers(module, inspect.isclass) if issubclass(c, pn.viewable.Viewer) and c.__module__ == module.__name__]
    return sorted({name for cls in viewers for name in cls.param if name != "name"})


def queries(names: list[str]) -> list[str]:
    """A few links that between them give every hostile value to several controls, and one long value each."""
    def encode(value: str) -> str:
        return value if "%" in value else urllib.parse.quote(value, safe="")

    links = []
    for shift in range(3):
        pairs = [(n, HOSTILE[(shift * 5 + j) % len(HOSTILE)]) for j, n in enumerate(names)]
        pairs += [(f"no_such_control_{shift}", HOSTILE[shift]), ("page", "../x")]
        links.append("?" + "&".join(f"{n}={encode(v)}" for n, v in pairs))
    links.append("?" + "&".join(f"{n}={LONG}" for n in names[:1]) + f"&{LONG[:5000]}=1")
    links.append("?" + "&".join(names))  # names without '=' or values
    return links


ROUTES = [("", [])] + [(p.route, controls(p.module)) for p in available_pages()]


@pytest.mark.parametrize("route,names", ROUTES, ids=[r or "index" for r, _ in ROUTES])
def test_every_hostile_link_is_answered_and_the_server_goes_on(roomy_server, route, names):
    server = roomy_server
    for query in queries(names):
        status, body = server.get(f"/{route}{query}")
        assert status == 200, (query[:200], body[:500])
        assert "Traceback" not in body
    assert server.get("/healthz") == (200, "ok")
    log = server.log()
    for marker in ("Traceback", "Exception", "ERROR"):
        assert marker not in log, log[-3000:]


def test_a_hostile_link_over_the_websocket_builds_a_page_with_a_notice(roomy_server):
    server = roomy_server
    names = dict(ROUTES)["baselines"]
    document = server.open_session("baselines", f"?{names[0]}=nan&{names[-1]}=-1e308")
    assert "ignored" in document and "Traceback" not in document
    assert server.get("/healthz") == (200, "ok")
