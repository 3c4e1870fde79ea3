"""A page's summary: the sentence under its controls that says what the plots show now, in numbers."""

from __future__ import annotations

import panel as pn


class Summary(pn.pane.HTML):
    """One paragraph a little larger than the page's text, rewritten in place when a control moves (`show`).

    It is one pane, so a slider step sends the browser one changed string, whatever the sentence holds."""

    def __init__(self, **params):
        super().__init__(**({"sizing_mode": "stretch_width", "styles": {"font-size": "1.1em"}} | params))

    def show(self, text: str) -> None:
        """Show `text` (HTML the page's text module wrote, its numbers formatted) as the summary."""
        self.object = f'<p class="fl-summary">{text}</p>'
