"""A section's heading inside a page: the level under the page's title, drawn at the size of the page's text."""

from __future__ import annotations

import panel as pn

HEADING_CSS = "h2 { font-size: 1em; margin-block: 0.67em; }"
"""A second-level heading as small as the bold lines the sections had before (headings were h4, a level skipped)."""


def section_heading(text: str) -> pn.pane.Markdown:
    """`text` (Markdown) as the <h2> of a section: screen readers then meet the headings in order, h1 then h2."""
    return pn.pane.Markdown(f"## {text}", margin=(0, 10), stylesheets=[HEADING_CSS])
