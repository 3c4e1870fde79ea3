"""The card that opens every page: why the page exists, a plain-language introduction, the key equation, what to notice."""

from __future__ import annotations

import panel as pn

EQUATION_CSS = ":host { overflow-x: auto; overflow-y: hidden; }"
"""An equation wider than its box (on a phone, whose width the box takes: assets/page.html) scrolls inside the box
instead of past the page's edge."""


def equation(latex: str, **kwargs) -> pn.pane.LaTeX:
    """A displayed equation (LaTeX, without the $$), scrolling inside its box when wider than the page."""
    return pn.pane.LaTeX(f"$${latex}$$", stylesheets=[EQUATION_CSS], margin=(0, 10), **kwargs)


def equation_card(intro: str, formula: str, notice: str, *, why: str | None = None, prediction=None) -> pn.Column:
    """"Why this page" (Markdown), the introduction, the equation (LaTeX, without the $$), a "What to notice" line.

    `why`, when given, opens the card: one paragraph on what the page is for.
    `prediction`, a `widgets.predict.PredictionCard`, is the page's last card (the page places its cards,
    `widgets.explorable`): the "What to notice" line, which gives the answer away, stays hidden until it is answered.
    """
    parts = []
    if why:
        parts.append(pn.pane.Markdown(f"**Why this page.** {why}", sizing_mode="stretch_width", margin=(0, 10)))
    parts += [
        pn.pane.Markdown(intro, sizing_mode="stretch_width", margin=(0, 10)),
        equation(formula, styles={"font-size": "1.15em"}),
    ]
    notice_pane = pn.pane.Markdown(f"**What to notice.** {notice}", sizing_mode="stretch_width", margin=(0, 10))
    if prediction is not None:
        parts.append(prediction.guard(notice_pane, placeholder=False))
    else:
        parts.append(notice_pane)
    return pn.Column(*parts, sizing_mode="stretch_width", css_classes=["equation-card"])
