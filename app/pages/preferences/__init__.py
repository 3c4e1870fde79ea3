"""Preferences and the accuracy ceiling: the Bradley-Terry rater of seed 001 section 7.

A rater prefers response a to response b with probability sigma((u_a - u_b) / tau_label)
(equation 12). Even the true quality u predicts a label only with probability
max(p, 1 - p), so over a set of pairs no model can beat Acc* = E[max(p, 1 - p)]
(equation 13). The page draws P(a > b) against the gap, Acc* against tau_label, and
compares Acc* with the accuracy of u on a freshly sampled labelled set.
"""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, Span

from app.pages.preferences.figures import (
    ceiling_columns,
    ceiling_figure,
    frequency_columns,
    gap_population,
    labelled_set,
    probability_columns,
    probability_figure,
)
from app.pages.preferences.text import (
    CEILING_QUESTION,
    CEILING_TITLE,
    COMPARE_CHOICES,
    COMPARE_EXPLANATION,
    COMPARE_QUESTION,
    EQUATION,
    GAP_CHOICES,
    GUARDED_NOTE,
    INTRO,
    METRICS,
    NOTICE,
    PROBABILITY_TITLE,
    WHY,
    ceiling_choices,
    check_yourself_text,
    summary_text,
)
from engines.bradley_terry import LabelledSetSettings, oracle_accuracy
from widgets.downloads import plot_with_downloads
from widgets.explorable import figure_first
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.style import OKABE_ITO
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Preferences and the accuracy ceiling"
SUMMARY = "A noisy rater labels pairs by Bradley-Terry; even the true quality cannot predict every label."
READY_AHEAD = True

RATER = SettingsControls(LabelledSetSettings)
"""The rater's and its labelled set's controls (engines/bradley_terry.py)."""

SCORES_OR_COMPARISONS = card_spec("preferences/scores-or-comparisons", COMPARE_QUESTION, COMPARE_CHOICES, "comparisons")
CEILING = card_spec("preferences/ceiling", CEILING_QUESTION, ceiling_choices(), "ceiling", kind="Check yourself")
CARDS = (SCORES_OR_COMPARISONS, CEILING)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class PreferencesPage(pn.viewable.Viewer):
    """tau_label, the gap distribution and a sampled labelled set; P(a > b) and Acc* curves."""

    tau = RATER.number("tau", "Label temperature τ_label", bounds=(0.05, 5.0), step=0.05)
    gaps = RATER.selector("gaps", "Quality gaps", GAP_CHOICES)
    s = RATER.number("s", "Spread s of the gaps (gold-score units)", bounds=(0.1, 4.0), step=0.1)
    n = RATER.integer("n", "Labelled pairs n", bounds=(10, 5000), step=10)
    seed = RATER.integer("seed", "Seed", bounds=(0, 999_999))

    POPULATION = {"gaps", "s"}
    """The controls that choose the gaps Acc* averages over: a change redraws the Acc* curve."""
    CURVES = POPULATION | {"tau"}
    """The controls that move the curve of P(a > b) and the mark of the current tau_label on the Acc* curve."""

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.prob = ColumnDataSource(name="probability")
        self.freq = ColumnDataSource(name="label_frequency")
        self.ceiling = ColumnDataSource(name="ceiling")
        self.marker = ColumnDataSource(name="current_tau")
        self.tau_rule = Span(location=self.tau, dimension="height", line_color=OKABE_ITO["grey"], line_dash=[4, 3])
        self.prob_figure = probability_figure(self.prob, self.freq)
        self.ceiling_figure = ceiling_figure(self.ceiling, self.marker, self.tau_rule)
        self.summary = Summary()
        self.metrics = MetricRow(METRICS)
        self.guide = session_guide()
        self.compare_card = PredictionCard.of(SCORES_OR_COMPARISONS, COMPARE_EXPLANATION, self.guide)
        self.ceiling_card = PredictionCard.of(CEILING, check_yourself_text(), self.guide)
        self.param.watch(self._changed, RATER.names)
        self.notice = sync_url(self, query=query)
        self._update_ceiling_curve()
        self._update_tau()
        self._update_sample()

    def _changed(self, *events):
        # One batch per slider step; the plots' data first, the text after it.
        names = {e.name for e in events}
        with one_update():
            if names & self.POPULATION:
                self._update_ceiling_curve()
            if names & self.CURVES:
                self._update_tau()
            self._update_sample()

    def _ceiling_now(self) -> float:
        """Acc* of the gaps at the current tau_label (equation 13)."""
        return float(oracle_accuracy(gap_population(self.gaps, self.s), 0.0, self.tau))

    def _update_ceiling_curve(self):
        self.ceiling.data = ceiling_columns(gap_population(self.gaps, self.s))

    def _update_tau(self):
        self.tau_rule.location = self.tau
        self.marker.data = {"tau": [self.tau], "acc": [self._ceiling_now()]}
        self.prob.data = probability_columns(self.tau)

    def _update_sample(self):
        self.sample = labelled_set(RATER.settings(self))
        self.freq.data = frequency_columns(self.sample)
        ceiling = self._ceiling_now()
        self.summary.show(summary_text(self.tau, ceiling, self.sample))
        self.metrics.update(ceiling=ceiling, accuracy=self.sample["accuracy"], se=self.sample["se"], expected=self.sample["expected"])

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.compare_card, self.ceiling_card), notices=(self.notice,),
            controls=(
                pn.widgets.RadioButtonGroup.from_param(self.param.gaps, description=None),
                slider(self.param.tau, width=300),
                slider(self.param.s, width=300, visible=self.param.gaps.rx() == "normal"),
            ),
            figures=(self.ceiling_card.guard(
                pn.Row(
                    plot_with_downloads(self.prob_figure, {"probability": self.prob, "label_frequency": self.freq}, PROBABILITY_TITLE),
                    plot_with_downloads(self.ceiling_figure, {"ceiling": self.ceiling}, CEILING_TITLE),
                    sizing_mode="stretch_width",
                ),
                note=GUARDED_NOTE,
            ),),
            more=(slider(self.param.n, width=300), seed_control(self.param.seed),
                  self.ceiling_card.guard(self.summary, self.metrics, placeholder=False)),
        )

def page(query: dict[str, str] | None = None) -> PreferencesPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return PreferencesPage(query=query)
