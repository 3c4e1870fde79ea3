"""The card that opens every page: a plain-language introduction, the key equation, what to notice."""

from __future__ import annotations

import panel as pn


def equation_card(intro: str, equation: str, notice: str, predict: str | None = None) -> pn.Column:
    """Introduction (Markdown), the equation (LaTeX, without the $$), a "What to notice" line.

    `predict`, when given, is the seed's "Predict first" question, shown before the
    controls so the reader commits to an answer before moving anything.
    """
    parts = [
        pn.pane.Markdown(intro, sizing_mode="stretch_width", margin=(0, 10)),
        pn.pane.LaTeX(f"$${equation}$$", styles={"font-size": "1.15em"}, margin=(0, 10)),
        pn.pane.Markdown(f"**What to notice.** {notice}", sizing_mode="stretch_width", margin=(0, 10)),
    ]
    if predict:
        parts.append(pn.pane.Markdown(f"**Predict first.** {predict}", sizing_mode="stretch_width", margin=(0, 10)))
    return pn.Column(*parts, sizing_mode="stretch_width", css_classes=["equation-card"])
