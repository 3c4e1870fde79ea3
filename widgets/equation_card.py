"""The card that opens every page: why the page exists, a plain-language introduction, the key equation, what to notice."""

from __future__ import annotations

import functools
import re

import panel as pn

from widgets import katex

EQUATION_CSS = ":host { overflow-x: auto; overflow-y: hidden; text-align: center; }"
"""The equation's lines centred across the page; a part wider than its box (on a phone, whose width the box takes:
assets/page.html) scrolls inside the box instead of past the page's edge."""
GATHERED = (r"\begin{gathered}", r"\end{gathered}")
ROW_SEPARATOR = re.compile(r"\\\\\s*")
PART_SEPARATOR = re.compile(r"\\q?quad(?![A-Za-z])\s*")
PART_GAP = "&emsp;&emsp;"
"""Between two parts of a line: the width of \\qquad, in em spaces, at which a line may break."""


def equation(latex: str, **kwargs) -> pn.pane.LaTeX:
    """A displayed equation (LaTeX, without the $$) whose parts go onto lines of their own when the page is narrow,
    typeset in KaTeX's own fonts, which the app serves (widgets/katex.py)."""
    return pn.pane.LaTeX(breakable(latex), stylesheets=[*katex.stylesheets(), EQUATION_CSS], margin=(0, 10), **{"sizing_mode": "stretch_width", **kwargs})


@functools.lru_cache(maxsize=64)
def breakable(latex: str) -> str:
    """The LaTeX pane's text for the displayed equation `latex`: lines of parts, each inline math in display style.

    KaTeX never breaks display math, and breaks inline math only between top-level atoms, none of which is left
    once \\displaystyle opens the formula (KaTeX's docs, "Line breaks"). So each part, the formulas that `latex`
    separates by a top-level \\quad or \\qquad, is inline math of its own, the gap between two parts is where the
    browser breaks a line on a narrow page, and each row of a gathered environment is a line of its own.
    """
    rows = _top_level_split(_without(latex, GATHERED), ROW_SEPARATOR)
    return "<br>".join(PART_GAP.join(f"$\\displaystyle {part}$" for part in _top_level_split(row, PART_SEPARATOR))
                       for row in rows)


def _without(latex: str, environment: tuple[str, str]) -> str:
    """`latex` without the environment that wraps all of it, if one does."""
    begin, end = environment
    latex = latex.strip()
    return latex[len(begin):-len(end)] if latex.startswith(begin) and latex.endswith(end) else latex


def _top_level_split(latex: str, separator: re.Pattern) -> list[str]:
    """`latex` cut at each match of `separator` outside braces (a \\quad inside a \\frac's argument stays)."""
    parts, start, depth = [], 0, 0
    for position, char in enumerate(latex):
        depth += {"{": 1, "}": -1}.get(char, 0) if latex[position - 1:position] != "\\" else 0
        match = separator.match(latex, position) if depth == 0 and position >= start else None
        if match:
            parts.append(latex[start:position].strip())
            start = match.end()
    parts.append(latex[start:].strip())
    return [part for part in parts if part]


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
