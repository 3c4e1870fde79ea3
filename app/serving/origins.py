"""Only the hosts the server was given may open its sessions, as the server's options say (`--allow-websocket-origin`).

A page's session lives on its websocket, and Bokeh's server refuses a websocket whose Origin
header is not on its list (`WSHandler.check_origin`). Tornado 6.6 calls that check for a
cross-site request only: a request its browser marks same-origin (`Sec-Fetch-Site:
same-origin`, which Chromium sends for a page's websocket to its own host), or one without that
header whose Origin equals its Host, is let through without it
(`tornado.web.RequestHandler._check_cross_origin`). A page opened at any name or address that
reaches the machine (its host name, another interface's address, a name in a learner's hosts
file) therefore got a working session, whatever the list said. `check_every_websocket_origin`
puts the list back in charge: a browser's websocket (one with an Origin header) is refused
unless Bokeh's check accepts its origin, same-origin or not; a client that sends no Origin (not
a browser) is let through, as Tornado and Bokeh always did. The page's HTML itself is still
served, as Bokeh serves it; without its session it stays empty, and the log says why ("Refusing
websocket connection from Origin ...").
"""

from __future__ import annotations

from bokeh.server.views.ws import WSHandler


def origin_refusal(handler, check) -> str | None:
    """Why `handler`'s websocket request is refused (its Origin is not one `check` accepts), or None to open it."""
    origin = handler.request.headers.get("Origin")
    if origin is None or check(origin):
        return None
    return f"Origin {origin!r} not allowed"


def check_every_websocket_origin() -> bool:
    """Make every browser's websocket to Bokeh's server pass its origin check, same-origin or not; False if already so.

    Tornado before 6.6 has no `_check_cross_origin` and calls `check_origin` for every request with an Origin:
    there this changes nothing."""
    if getattr(WSHandler, "_check_cross_origin", None) is None or getattr(WSHandler._check_cross_origin, "every_origin", False):
        return False

    def check_cross_origin(self, check) -> str | None:
        return origin_refusal(self, check)

    check_cross_origin.every_origin = True
    WSHandler._check_cross_origin = check_cross_origin
    return True
