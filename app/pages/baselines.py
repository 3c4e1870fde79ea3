"""Baselines and variance: the two-action demo of seed 001 section 4.

A policy picks action 1 (reward 11) with probability p and action 2 (reward 10)
otherwise. The one-sample REINFORCE estimate with baseline b is one of two numbers,
g1 = (11 - b)(1 - p) or g2 = (10 - b)(-p); the page draws both as lines over b, their
probability-weighted mean p(1 - p), and where they cross, (1 - p) 11 + p 10.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Legend, LegendItem, Span

from engines.two_action import two_action_estimates
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.numbers import to_fixed
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sliders import slider
from widgets.style import OKABE_ITO, plot
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Baselines and variance"
SUMMARY = "Two actions, both rewarded: a baseline b slides the noise of REINFORCE, never its mean."
READY_AHEAD = True

R1, R2 = 11.0, 10.0
"""The seed's rewards of action 1 and action 2."""
B_GRID = np.arange(151) / 10
"""The demo's b axis: 0 to 15 in steps of 0.1, 151 points."""
NAMES = (
    "estimate if action 1 is sampled",
    "estimate if action 2 is sampled",
    "mean of the estimate (the true gradient)",
)

WHY = (
    "REINFORCE points the right way only on average; any single estimate can be far off, and that noise "
    "decides whether training gets anywhere. Here, on the smallest problem there is, you can see where the "
    "noise comes from and what subtracting a baseline does to it, the fact every later page builds on."
)
INTRO = (
    "A policy picks action 1 with probability p = σ(θ) and action 2 otherwise; the rewards are 11 "
    "and 10. One sample gives the REINFORCE estimate: (R − b) times the score function, so it takes "
    "one of two values. The baseline b is a number subtracted from the reward that does not depend on "
    "which action was sampled."
)
EQUATION = (
    r"\hat g = (R - b)\,\frac{d}{d\theta} \log \pi_\theta(y), \qquad "
    r"\mathbb{E}[\hat g] = p\,g_1 + (1-p)\,g_2"
)
NOTICE = (
    "The flat line never moves with b; the gap between the sloped lines (the standard deviation) "
    "shrinks to zero where they cross, at b = (1 − p)·11 + p·10 (10.5 when p = 0.5)."
)
PREDICT = (
    "Before you move the baseline b: of the two possible estimates, their mean and their "
    "standard deviation, which will not move?"
)
PREDICT_CHOICES = {
    "estimates": "the two possible estimates",
    "mean": "their mean",
    "sd": "their standard deviation",
    "none": "none of them: all three move with b",
}
PREDICT_EXPLANATION = (
    "Only the mean stays put. Each estimate is (R − b) times its score, so both slide as b moves. But the "
    "score averages to zero under the policy (equation 7), so whatever b adds to one estimate it takes away, "
    "weighted by probability, from the other: the mean is p(1 − p) for every b (equation 8). The standard "
    "deviation is the gap between the two estimates; it closes where the lines cross and opens again beyond."
)
SHIFT = 100.0
"""The check-yourself of seed 001 section 3: the same amount added to both rewards."""


def shift_card_text() -> tuple[str, dict[str, str], str]:
    """Section 3's check-yourself on this page's rewards: question, choices, explanation, from the engine."""
    before = two_action_estimates(0.5, 0.0, R1, R2)
    after = two_action_estimates(0.5, 0.0, R1 + SHIFT, R2 + SHIFT)
    question = (
        f"At p = 0.5 with no baseline, add {SHIFT:g} to both rewards, so the actions pay {R1 + SHIFT:g} and "
        f"{R2 + SHIFT:g}. Does the true gradient change, and what are the two possible one-sample estimates?"
    )
    choices = {
        "grows": "The true gradient grows with the rewards, and the estimates with it.",
        "noise": f"The true gradient stays {_g(after.mean)}; the estimates become {_g(after.g1)} and {_g(after.g2)}.",
        "nothing": "Nothing changes: the same amount added to every reward cancels out.",
    }
    explanation = (
        f"Adding the same amount to every reward does not change which action is better, so the true gradient "
        f"is p(1 − p) = {_g(after.mean)} with the shift as it was without ({_g(before.mean)}). Each one-sample estimate, though, is the "
        f"whole reward times a score of ±0.5: {_g(after.g1)} or {_g(after.g2)}, about "
        f"{abs(float(after.g2)) / float(after.mean):.0f} times the size of what it estimates, its sign set by "
        "which action happened to be drawn. Without a baseline the level of the reward is pure noise; a baseline "
        "near the mean reward takes it away, as the demo above shows."
    )
    return question, choices, explanation



def _g(x: float) -> str:
    """A table entry written as the seed writes it: 5.5, -5, 0.25, 0."""
    text = f"{float(x):.4g}"
    return "0" if text == "-0" else text


def summary_text(p: float, b: float) -> str:
    """The demo's sentence, formatted exactly as its JavaScript does (toFixed 1, 2, 2, 4, 2, 2)."""
    s = two_action_estimates(p, b, R1, R2)
    return (
        f"At b = {to_fixed(b, 1)}: the estimate is <strong>{to_fixed(s.g1, 2)}</strong> if action 1 is sampled "
        f"and <strong>{to_fixed(s.g2, 2)}</strong> if action 2 is. Mean <strong>{to_fixed(s.mean, 4)}</strong>, "
        f"standard deviation <strong>{to_fixed(s.sd, 2)}</strong>. The two lines cross at b = {to_fixed(s.cross, 2)}."
    )


def table_markdown(p: float) -> str:
    """The seed's table (b = 0 and b = 10.5), for the current p."""
    s = two_action_estimates(p, np.array([0.0, 10.5]), R1, R2)
    rows = [
        f"| Sampled action (action 1 with probability {_g(p)}) | ĝ with b = 0 | ĝ with b = 10.5 |",
        "|---|---|---|",
        f"| 1 (reward 11) | {_g(s.g1[0])} | {_g(s.g1[1])} |",
        f"| 2 (reward 10) | {_g(s.g2[0])} | {_g(s.g2[1])} |",
        f"| mean | {_g(s.mean[0])} | {_g(s.mean[1])} |",
        f"| standard deviation | {_g(s.sd[0])} | {_g(s.sd[1])} |",
    ]
    return "\n".join(rows)


WHAT_MOVES = card_spec("baselines/what-moves", PREDICT, PREDICT_CHOICES, "mean")
REWARD_LEVEL = card_spec("baselines/reward-level", *shift_card_text()[:2], "noise", kind="Check yourself")
CARDS = (WHAT_MOVES, REWARD_LEVEL)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class BaselinesPage(pn.viewable.Viewer):
    """Sliders p and b; the estimate lines, the dots at b, the crossing point, the sentence."""

    p = param.Number(default=0.5, bounds=(0.05, 0.95), step=0.05, label="Probability of action 1, p = σ(θ)")
    b = param.Number(default=0.0, bounds=(0.0, 15.0), step=0.1, label="Baseline b")

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.lines = ColumnDataSource(name="lines")
        self.dots = ColumnDataSource(name="dots")
        self.cross = ColumnDataSource(name="cross")
        self.figure = self._figure()
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.1em"})
        self.metrics = MetricRow(
            {
                "g1": ("estimate if action 1", "{value:.2f}"),
                "g2": ("estimate if action 2", "{value:.2f}"),
                "mean": ("mean (true gradient)", "{value:.4f}"),
                "sd": ("standard deviation", "{value:.2f}"),
                "cross": ("lines cross at b", "{value:.2f}"),
            }
        )
        self.table = pn.pane.Markdown(sizing_mode="stretch_width")
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(WHAT_MOVES, PREDICT_EXPLANATION, self.guide)
        self.shift_card = PredictionCard.of(REWARD_LEVEL, shift_card_text()[2], self.guide)
        self.param.watch(self._changed, ["p", "b"])
        self.notice = sync_url(self, ["p", "b"], query)
        self._update_lines()
        self._update_point()

    def _figure(self):
        fig = plot("baseline b (reward units)", "estimate ĝ (reward per unit θ)", x_range=(0, 15), y_range=(-10, 11), height=380)
        fig.add_layout(Span(location=0, dimension="width", line_color=OKABE_ITO["grey"], line_width=1))
        self.rule = Span(location=self.b, dimension="height", line_color=OKABE_ITO["grey"], line_dash=[4, 3], line_width=1.5)
        fig.add_layout(self.rule)
        colours = (OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["green"])
        items = []
        for column, label, colour in zip(("g1", "g2", "mean"), NAMES, colours):
            line = fig.line("b", column, source=self.lines, line_color=colour, line_width=2)
            items.append(LegendItem(label=label, renderers=[line]))
        fig.scatter("b", "g", source=self.dots, color="colour", size=10)
        crossing = fig.scatter("b", "g", source=self.cross, marker="diamond", size=14, color=OKABE_ITO["vermillion"])
        items.append(LegendItem(label="where the lines cross", renderers=[crossing]))
        fig.add_layout(Legend(items=items, orientation="vertical"), "below")  # one column: two ran past a phone's width
        return fig

    def _changed(self, *events):
        # One batch per slider step; the plot's data first, the text after it.
        with one_update():
            if any(e.name == "p" for e in events):
                self._update_lines()
            self._update_point()

    def _update_lines(self):
        s = two_action_estimates(self.p, B_GRID, R1, R2)
        self.lines.data = {"b": B_GRID, "g1": s.g1, "g2": s.g2, "mean": s.mean}
        self.table.object = table_markdown(self.p)

    def _update_point(self):
        s = two_action_estimates(self.p, self.b, R1, R2)
        self.rule.location = self.b
        self.dots.data = {"b": [self.b, self.b], "g": [float(s.g1), float(s.g2)], "colour": [OKABE_ITO["blue"], OKABE_ITO["orange"]]}
        self.cross.data = {"b": [float(s.cross)], "g": [float(s.mean)]}
        self.summary.object = f'<p class="fl-summary">{summary_text(self.p, self.b)}</p>'
        self.metrics.update(g1=s.g1, g2=s.g2, mean=s.mean, sd=s.sd, cross=s.cross)

    def __panel__(self):
        controls = pn.Row(
            slider(self.param.p, width=320),
            slider(self.param.b, width=320),
        )
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=self.predict_card),
            self.predict_card.guard(
                controls,
                self.summary,
                self.metrics,
                plot_with_downloads(self.figure, {"lines": self.lines, "dots": self.dots}),
                section_heading("The seed's table, for the current p"),
                self.table,
                note="the demo",
            ),
            self.shift_card,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None) -> BaselinesPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return BaselinesPage(query=query)
