"""The address learners type, large and as a QR code, for a projector: learners type poorly from a wall.

qr_svg(url) is the code as an inline SVG (segno, pure Python, nothing fetched), an image whose accessible name is
the URL; join_pane(url) shows the URL as a link beside it.
"""

from __future__ import annotations

import html

import panel as pn

JOIN_CSS = """
.fl-join { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5em 1.5em; }
.fl-join-url { font-size: 1.6em; font-weight: 600; overflow-wrap: anywhere; margin: 0; }
.fl-join svg { flex: none; background: #fff; }
"""
SCALE = 8
"""Pixels per module of the code: a version 2 code (an address with its port) is then 232 px wide, border included."""


def qr_svg(url: str, scale: int = SCALE) -> str:
    """`url`'s QR code as an `<svg>` element, black on white, its accessible name "QR code of URL"."""
    import segno

    label = html.escape(f"QR code of {url}", quote=True)
    svg = segno.make(url, error="m").svg_inline(scale=scale, border=2, dark="#000", light="#fff", svgclass="fl-qr")
    return svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)


def join_html(url: str) -> str:
    """The learners' URL as a large link, and its QR code."""
    link = html.escape(url, quote=True)
    return (f'<div class="fl-join"><p class="fl-join-url">Learners open <a href="{link}" target="_blank" rel="noreferrer">'
            f"{html.escape(url)}</a></p>{qr_svg(url)}</div>")


def join_pane(url: str) -> pn.pane.HTML:
    return pn.pane.HTML(join_html(url), sizing_mode="stretch_width", stylesheets=[JOIN_CSS], css_classes=["fl-join-pane"])
