"""The toy target page's figures: the mean estimates against the exact gradient, Figure 2, the training runs.

Each function draws from ColumnDataSources the page fills; the page replaces their data and
never rebuilds a figure.
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, Span

from engines.toy_target import ESTIMATORS
from widgets.style import OKABE_ITO, plot

COLOURS = dict(zip(ESTIMATORS, (OKABE_ITO["grey"], OKABE_ITO["blue"], OKABE_ITO["green"], OKABE_ITO["orange"], OKABE_ITO["purple"])))
"""One colour per estimator, the same on every panel."""


def scatter_figure(means: ColumnDataSource, identity: ColumnDataSource, focus: ColumnDataSource):
    """Every coordinate's mean estimate against its exact gradient, per estimator, the chosen coordinate circled."""
    fig = plot("exact gradient ∂J/∂θ (reward per unit logit)", "mean of the one-batch estimates", height=320)
    fig.line("x", "y", source=identity, color=OKABE_ITO["grey"], line_dash=[4, 3], legend_label="mean = exact")
    for name, label in ESTIMATORS.items():
        renderer = fig.scatter("exact", name, source=means, color=COLOURS[name], size=6, alpha=0.7, legend_label=label)
        renderer.visible = name in ("none", "loo", "token")
    fig.scatter("exact", "mean", source=focus, marker="circle", size=14, fill_alpha=0, line_color=OKABE_ITO["vermillion"],
                line_width=2, legend_label="the chosen coordinate")
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    return fig


def hist_figure(hist_none: ColumnDataSource, hist_other: ColumnDataSource, exact_rule: Span):
    """Figure 2: one coordinate's one-batch estimates without a baseline and with the compared estimator."""
    fig = plot("one-batch estimate of ∂J/∂θ at the coordinate", "batches", height=320)
    fig.quad(left="left", right="right", top="count", bottom=0, source=hist_none, color=COLOURS["none"], fill_alpha=0.55,
             line_color=None, legend_label=ESTIMATORS["none"])
    # The compared estimator's colour and name are columns of its source, so a new choice is a data update.
    fig.quad(left="left", right="right", top="count", bottom=0, source=hist_other, color="colour",
             fill_alpha=0.55, line_color=None, legend_field="label")
    fig.add_layout(exact_rule)
    fig.legend.location = "top_right"
    return fig


def training_figure(curves: ColumnDataSource, reached: ColumnDataSource):
    """J of every training run, one line per seed and estimator, a diamond where a run first reaches J >= 0.9."""
    fig = plot("training step", "exact expected reward J", y_range=(0, 1.02), height=320)
    fig.add_layout(Span(location=0.9, dimension="width", line_color=OKABE_ITO["vermillion"], line_dash=[4, 3], line_width=1.5))
    fig.multi_line("xs", "ys", source=curves, line_color="colour", line_width=1.5, line_alpha=0.8, legend_field="label")
    fig.scatter("step", "J", source=reached, color="colour", size=8, marker="diamond")
    fig.legend.location = "bottom_right"
    return fig
