"""The banner a teacher's "send the class there" puts on every learner's page: where, and one link to go.

Desmos Classroom paces a class by moving every screen; here nobody is moved: a learner reads where
the teacher asks the class to go and follows the link when ready. The banner is one HTML pane at
the top of every page, hidden until the teacher sends a link, and hidden on the page it names.
"""

from __future__ import annotations

import html

import panel as pn

CSS = """
.fl-pace-line { margin: 0; padding: 0.5em 0.8em; border-radius: 4px; border-left: 4px solid #009E73;
  background: rgba(0, 158, 115, 0.1); }
.fl-pace-line a { font-weight: 700; color: var(--fl-link, #0a58ca); margin-left: 0.4em; }
"""


def banner_html(link: str, title: str) -> str:
    """The banner's line: the page the teacher asks for, and its link (a path of this app)."""
    return (f'<p class="fl-pace-line" role="status">Your teacher asks the class to open <strong>{html.escape(title)}</strong>.'
            f'<a href="{html.escape(link)}">Go there</a></p>')


class PaceBanner(pn.viewable.Viewer):
    """The banner of one page: `show(link, title)` puts it up (unless `here` is that link), `show(None)` takes it away."""

    def __init__(self, here: str = "", **params):
        super().__init__(**params)
        self.here = here
        self.pane = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", stylesheets=[CSS], css_classes=["fl-pace"],
                                 margin=(4, 10))

    def show(self, link: str | None, title: str = "") -> None:
        shown = link is not None and link != self.here
        if shown:
            self.pane.object = banner_html(link, title)
        self.pane.visible = shown

    def __panel__(self):
        return self.pane
