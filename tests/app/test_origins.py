"""Only the hosts the server was given open sessions: every browser's websocket passes the server's origin check,
same-origin or not (app/serving/origins.py). Quick: the checks are called as Tornado calls them, with a request's
headers; tests/browser/test_lesson_command.py opens pages at a name not allowed in Chromium against a real server.
"""

from __future__ import annotations

import pytest
import tornado.web
from bokeh.server.views.ws import WSHandler
from tornado.httputil import HTTPHeaders

from app.serving.origins import check_every_websocket_origin, origin_refusal


def handler(**headers) -> object:
    """What the origin checks read of a websocket request: its headers."""
    request = type("Request", (), {"headers": HTTPHeaders(headers)})()
    return type("Handler", (), {"request": request, "_origin_matches_host": tornado.web.RequestHandler._origin_matches_host})()


ALLOWED = {"192.168.1.20:5006", "localhost:5006"}


def allowed(origin: str) -> bool:
    return origin.split("//", 1)[-1] in ALLOWED


def test_tornado_alone_lets_a_same_origin_websocket_through_without_the_allowlist():
    """The fault: a page at a name not allowed opens its websocket to the same name, which Chromium marks same-origin."""
    original = getattr(tornado.web.RequestHandler, "_check_cross_origin", None)
    if original is None:
        pytest.skip("this Tornado checks every origin itself (before 6.6)")
    same_site = handler(Origin="http://madeup.test:5006", Host="madeup.test:5006", **{"Sec-Fetch-Site": "same-origin"})
    assert original(same_site, allowed) is None
    assert original(handler(Origin="http://madeup.test:5006", Host="madeup.test:5006"), allowed) is None


def test_every_browser_websocket_must_come_from_a_host_allowed(monkeypatch):
    monkeypatch.setattr(WSHandler, "_check_cross_origin", getattr(WSHandler, "_check_cross_origin", None), raising=False)
    check_every_websocket_origin()
    check_every_websocket_origin()  # once is enough; again changes nothing
    check = WSHandler._check_cross_origin if getattr(WSHandler, "_check_cross_origin", None) else origin_refusal
    for headers in ({"Sec-Fetch-Site": "same-origin"}, {}, {"Sec-Fetch-Site": "cross-site"}):
        refused = check(handler(Origin="http://madeup.test:5006", Host="madeup.test:5006", **headers), allowed)
        assert refused == "Origin 'http://madeup.test:5006' not allowed"
        assert check(handler(Origin="http://192.168.1.20:5006", Host="192.168.1.20:5006", **headers), allowed) is None
    assert check(handler(Host="madeup.test:5006"), allowed) is None  # no Origin: not a browser, as before
