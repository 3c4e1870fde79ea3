"""The layout every page shares: the figure first, the prose folded.

A learner comes to drag a slider and watch the plot it moves, on a 1366 x 768 laptop or a 390 x 844 phone. So a page
opens with one sentence (its summary), the prose folded under "About this page" (why the page exists, the
introduction, the equation, what to notice: one click opens it), its prediction cards (asked before the reveal, one
line each once answered), and then the demo:

    wide screen (900 px and more)          phone
    +-----------+------------------+       +------------+
    | controls  |                  |       | controls   |
    |-----------|     figures      |       | figures    |
    | more      |                  |       | more       |
    +-----------+------------------+       +------------+
    after (full width)                      after

`controls` are the first controls: beside the figures on a wide screen, right above them on a phone, so they are
kept short (what fits above a plot on a phone's screen). `more` holds the other controls and the numbers: under
the first ones on a wide screen, under the figures on a phone. `after` is the rest of the page. The three areas
are one Bokeh column laid out by CSS grid (`demo_css`), so the layout costs no Bokeh model beyond the page's own
and the same parts move when the screen narrows, with no server round trip.
"""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn
import param

from widgets.equation_card import equation_card

WIDE = 900
"""The narrowest window, in CSS pixels, that puts the controls beside the figures (below it they stack)."""
CONTROLS_WIDTH = 360
"""The controls' column on a wide screen, at most (at least a slider's 300 px); a page with wider controls asks for more."""


def demo_css(width: int = CONTROLS_WIDTH) -> str:
    """The demo's three areas as a CSS grid (Bokeh's column is a flexbox; the grid replaces it): one column on a phone,
    the controls and more, at most `width` px wide, beside the figures on a wide screen."""
    return f"""
:host {{ display: grid !important; grid-template-columns: minmax(0, 1fr); align-items: start;
         grid-template-areas: "controls" "figures" "more"; }}
:host > .fl-controls {{ grid-area: controls; }}
:host > .fl-figures {{ grid-area: figures; min-width: 0; }}
:host > .fl-more {{ grid-area: more; }}
@media (min-width: {WIDE}px) {{
  :host {{ grid-template-columns: minmax(300px, {width}px) minmax(0, 1fr);
           grid-template-rows: auto 1fr; grid-template-areas: "controls figures" "more figures"; column-gap: 8px; }}
}}
"""


COLUMN_CSS = ":host > * { max-width: 100%; max-width: -webkit-fill-available; }"
"""The controls' columns: no part wider than the column (a button group or a row then wraps: assets/page.html)."""
LEAD_STYLE = "margin: 0 0 0.3em 0;"
"""The summary sentence close under the page's title (a paragraph's margins are 1em each side)."""
ABOUT_TITLE = "About this page: the idea, its equation, what to notice"
"""The header of the folded prose."""


FOLD_CSS = ".bk-btn { text-align: left; font-weight: 600; white-space: normal; }"
"""A fold's button reads as a header: left-aligned, bold, its words wrapping on a narrow screen."""


def layout_of(items, **params) -> pn.layout.Panel:
    """`items` (one Panel object or a list) as one layout with `params` set: a single layout (a Viewer's too) is taken
    as it is, anything else is put in a column. Every Bokeh model is built anew on each visit, so a page keeps out
    the columns that would hold just one layout."""
    items = list(items) if isinstance(items, (list, tuple)) else [items]
    if len(items) == 1:
        shown = items[0].__panel__() if isinstance(items[0], pn.viewable.Viewer) else items[0]
        if isinstance(shown, pn.layout.Panel):
            extra = {k: [*getattr(shown, k), *v] for k, v in params.items() if k in ("css_classes", "stylesheets")}
            shown.param.update(params | extra)
            return shown
    return pn.Column(*items, **params)


class Fold(pn.viewable.Viewer):
    """A button that shows or hides what it holds, one click each way.

    The content is built with the page, not when first opened: a LaTeX pane arriving later would have the browser
    fetch KaTeX from its CDN, which an offline room cannot reach. A toggle and a column rather than Panel's Card: a
    Card drawn folded makes Bokeh lay out the document before a data table further down has drawn itself (a page
    error on the reward-models page, Bokeh 3.9).
    """

    open = param.Boolean(default=False, doc="The content is shown.")

    def __init__(self, title: str, content, **params):
        super().__init__(**params)
        self._title = title
        self.button = pn.widgets.Toggle.from_param(self.param.open, name=self._label(), color="light",
                                                   sizing_mode="stretch_width", stylesheets=[FOLD_CSS], margin=(2, 10))
        self.body = layout_of(content, sizing_mode="stretch_width", visible=self.open)

    def _label(self) -> str:
        return f"{'▾' if self.open else '▸'} {self._title}"

    @param.depends("open", watch=True)
    def _shown(self) -> None:
        self.body.visible = self.open
        self.button.name = self._label()

    def parts(self) -> tuple:
        """The button and what it folds, for a column that holds them with no column of their own."""
        return self.button, self.body

    def __panel__(self):
        return pn.Column(*self.parts(), sizing_mode="stretch_width")


def figure_first(
    *,
    summary: str,
    prose: tuple[str, str, str, str | None],
    cards: Sequence = (),
    controls: Sequence,
    figures: Sequence,
    more: Sequence = (),
    after: Sequence = (),
    notices: Sequence = (),
    guard=None,
    guard_note: str = "the demo",
    controls_width: int = CONTROLS_WIDTH,
) -> pn.Column:
    """A page laid out figure first (see the module's docstring).

    `summary` is the page's one sentence, shown first; `prose` is (introduction, equation in LaTeX, what to notice,
    why this page or None), folded under `ABOUT_TITLE`; its "What to notice" stays
    hidden until the last of `cards` (`PredictionCard`s, shown before the demo) is answered. `notices` (a link's
    ignored values, a file's error) come first of all. `guard`, a `PredictionCard`, keeps the whole demo hidden until
    it is answered ("Answer the question above to see `guard_note`" in its place); `controls_width` is the controls' column's widest, in px. The
    other arguments are lists of Panel objects (see the module's docstring).
    """
    intro, formula, notice, why = prose
    last_card = tuple(cards)[-1] if cards else None
    about = Fold(ABOUT_TITLE, equation_card(intro, formula, notice, why=why, prediction=last_card))
    areas = (
        layout_of(area, sizing_mode="stretch_width", stylesheets=stylesheets, css_classes=[name])
        for area, name, stylesheets in ((controls, "fl-controls", [COLUMN_CSS]), (figures, "fl-figures", []), (more, "fl-more", [COLUMN_CSS]))
        if area  # an empty area is left out: its grid cell stays empty
    )
    demo = pn.Column(*areas, sizing_mode="stretch_width", stylesheets=[demo_css(controls_width)], css_classes=["fl-demo"])
    if guard is not None:
        demo = guard.guard(demo, note=guard_note)
    lead = pn.pane.HTML(f'<p class="fl-lead" style="{LEAD_STYLE}">{summary}</p>', sizing_mode="stretch_width", margin=(0, 10))
    return pn.Column(*notices, lead, *about.parts(), *cards, demo, *after, sizing_mode="stretch_width")
