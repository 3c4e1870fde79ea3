"""The class's live runs side by side: reward and KL against the training step, one line per run, coloured by β.

A β = 0 run that one learner watches collapse and the β = 0.05 run beside it become one picture
for the room. Each line's colour says its β: the runs without a KL penalty in vermillion, the
others along a blue-to-yellow scale of log10 β (Cividis, readable with the common colour-vision
deficiencies). Its dash says its advantage estimator (leave-one-out solid, the group mean dashed,
GRPO dotted, none dash-dotted), so two runs at one β with different estimators are told apart.
Under the plots, each run is listed with its swatch, β and advantage, and a link that opens it as
the learners see it (the live-run page's `?run=NAME`).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.palettes import Cividis256

from engines.lm.settings import LMSettings
from widgets.glyphs import lean_figure
from widgets.style import OKABE_ITO, plot

NO_PENALTY = OKABE_ITO["vermillion"]
"""The colour of a run with β = 0."""
BETA_RANGE = (1e-3, 10.0)
"""The β of the colour scale's two ends (the live-run page's β goes from 0 to 10)."""
ADVANTAGE_DASH = {"loo": "solid", "mean": "dashed", "grpo": "dotted", "none": "dotdash"}
"""The dash of a run's line, by its advantage estimator (engines.lm.settings.ADVANTAGES)."""
CSS = """
.fl-class-runs { list-style: none; padding: 0; margin: 0.2em 0.6em; display: flex; flex-wrap: wrap; gap: 0.2em 1.4em; }
.fl-swatch { display: inline-block; width: 1.6em; height: 0.3em; vertical-align: middle; margin-right: 0.4em; }
"""


@dataclass(frozen=True)
class RunLine:
    """One run as the plots draw it."""

    name: str
    """The run folder's name (what the live-run page's link opens)."""
    beta: float
    """Its KL coefficient β (NaN if its config is unreadable)."""
    status: str
    """running, finished or interrupted."""
    steps: list
    """Its training steps, in order."""
    reward: list
    """The batch's mean reward at each step."""
    kl: list
    """The batch's KL to the reference at each step (nats per reply)."""
    advantage: str = LMSettings.advantage
    """Its advantage over the K replies to a prompt (a run whose config predates the choice used leave-one-out)."""


def beta_colour(beta: float) -> str:
    """The colour of β: vermillion for 0, else Cividis along log10 β over BETA_RANGE (grey when unknown)."""
    if not math.isfinite(beta):
        return OKABE_ITO["grey"]
    if beta <= 0:
        return NO_PENALTY
    low, high = (math.log10(b) for b in BETA_RANGE)
    share = min(max((math.log10(beta) - low) / (high - low), 0.0), 1.0)
    return Cividis256[round(share * 255)]


def runs_list_html(runs: list[RunLine], link: str = "/live-run?run={name}") -> str:
    """Each run: its swatch, name, β and status, and a link that opens it on the live-run page in a new tab."""
    if not runs:
        return "<p><em>No live run yet: the runs the learners start on the live-run page appear here.</em></p>"
    items = "".join(
        f'<li><span class="fl-swatch" style="background:{beta_colour(r.beta)}"></span>β {r.beta:g}, {html.escape(r.advantage)}, {html.escape(r.status)}: '
        f'<a href="{html.escape(link.format(name=r.name))}" target="_blank" rel="noreferrer">open {html.escape(r.name)}</a></li>'
        for r in runs
    )
    return f'<ul class="fl-class-runs">{items}</ul>'


class ClassRunsPlot(pn.viewable.Viewer):
    """Two figures (reward, KL) over the steps, fed one multi-line source, and the list of runs with their links."""

    def __init__(self, **params):
        super().__init__(**params)
        self.source = ColumnDataSource({k: [] for k in ("xs", "reward", "kl", "colour", "dash", "label")}, name="class_runs")
        self.figures = []
        for column, label in (("reward", "mean reward R (log-odds)"), ("kl", "KL to the reference (nats/reply)")):
            fig = plot("training step", label, height=260)
            lines = fig.multi_line("xs", column, source=self.source, line_color="colour", line_dash="dash", line_width=2)
            fig.add_tools(HoverTool(renderers=[lines], tooltips=[("run", "@label")]))
            self.figures.append(lean_figure(fig))
        self.listing = pn.pane.HTML(runs_list_html([]), sizing_mode="stretch_width", stylesheets=[CSS])
        self.shown: list[RunLine] = []

    def show(self, runs: list[RunLine]) -> None:
        """Draw `runs`; the same runs as last drawn send nothing (the room view reads the folder every few seconds, and
        every run's every step would otherwise travel to the teacher's browser each time)."""
        if runs == self.shown:
            return
        self.shown = runs
        self.source.data = {
            "xs": [r.steps for r in runs], "reward": [r.reward for r in runs], "kl": [r.kl for r in runs],
            "colour": [beta_colour(r.beta) for r in runs], "dash": [ADVANTAGE_DASH.get(r.advantage, "solid") for r in runs],
            "label": [f"{r.name} (β {r.beta:g}, {r.advantage})" for r in runs],
        }
        self.listing.object = runs_list_html(runs)

    def __panel__(self):
        return pn.Column(pn.Row(*(pn.pane.Bokeh(f, sizing_mode="stretch_width") for f in self.figures), sizing_mode="stretch_width"),
                         self.listing, sizing_mode="stretch_width")
