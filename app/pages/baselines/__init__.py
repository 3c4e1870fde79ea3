"""Baselines and variance: the two-action demo of seed 001 section 4.

A policy picks action 1 (reward 11) with probability p and action 2 (reward 10)
otherwise. The one-sample REINFORCE estimate with baseline b is one of two numbers,
g1 = (11 - b)(1 - p) or g2 = (10 - b)(-p); the page draws both as lines over b, their
probability-weighted mean p(1 - p), and where they cross, (1 - p) 11 + p 10.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource

from app.pages.baselines.figures import estimates_figure, line_columns, point_columns
from app.pages.baselines.text import (
    DEMO_HEADING,
    EQUATION,
    INTRO,
    METRICS,
    NOTICE,
    PREDICT,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    TABLE_HEADING,
    WHY,
    shift_card_text,
    summary_text,
    table_markdown,
)
from engines.two_action import R1, R2, TwoActionDemoSettings, two_action_estimates
from widgets.downloads import plot_with_downloads
from widgets.explorable import figure_first
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Baselines and variance"
SUMMARY = "Two actions, both rewarded: a baseline b slides the noise of REINFORCE, never its mean."
READY_AHEAD = True

DEMO = SettingsControls(TwoActionDemoSettings)
"""The demo's two sliders (engines/two_action.py), which start where the seed's do."""
WHAT_MOVES = card_spec("baselines/what-moves", PREDICT, PREDICT_CHOICES, "mean")
REWARD_LEVEL = card_spec("baselines/reward-level", *shift_card_text()[:2], "noise", kind="Check yourself")
CARDS = (WHAT_MOVES, REWARD_LEVEL)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class BaselinesPage(pn.viewable.Viewer):
    """Sliders p and b; the estimate lines, the dots at b, the crossing point, the sentence."""

    p = DEMO.number("p", "Probability of action 1, p = σ(θ)", bounds=(0.05, 0.95), step=0.05)
    b = DEMO.number("b", "Baseline b", bounds=(0.0, 15.0), step=0.1)

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.lines = ColumnDataSource(name="lines")
        self.dots = ColumnDataSource(name="dots")
        self.cross = ColumnDataSource(name="cross")
        self.figure, self.rule = estimates_figure(self.lines, self.dots, self.cross, self.b)
        self.summary = Summary()
        self.metrics = MetricRow(METRICS)
        self.table = pn.pane.Markdown(sizing_mode="stretch_width")
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(WHAT_MOVES, PREDICT_EXPLANATION, self.guide)
        self.shift_card = PredictionCard.of(REWARD_LEVEL, shift_card_text()[2], self.guide)
        self.param.watch(self._changed, DEMO.names)
        self.notice = sync_url(self, query=query)
        self._update_lines()
        self._update_point()

    def _changed(self, *events):
        # One batch per slider step; the plot's data first, the text after it.
        with one_update():
            if any(e.name == "p" for e in events):
                self._update_lines()
            self._update_point()

    def _update_lines(self):
        self.lines.data = line_columns(self.p)
        self.table.object = table_markdown(self.p)

    def _update_point(self):
        self.rule.location = self.b
        self.dots.data, self.cross.data = point_columns(self.p, self.b)
        self.summary.show(summary_text(self.p, self.b))
        s = two_action_estimates(self.p, self.b, R1, R2)
        self.metrics.update(g1=s.g1, g2=s.g2, mean=s.mean, sd=s.sd, cross=s.cross)

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.predict_card,), notices=(self.notice,),
            controls=(slider(self.param.p, width=300), slider(self.param.b, width=300)),
            figures=(section_heading(DEMO_HEADING), plot_with_downloads(self.figure, {"lines": self.lines, "dots": self.dots}),
                     section_heading(TABLE_HEADING), self.table),
            more=(self.summary, self.metrics),
            after=(self.shift_card,),
            guard=self.predict_card,
        )

def page(query: dict[str, str] | None = None) -> BaselinesPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return BaselinesPage(query=query)
