"""The bandit page's figures: the gradient, the variance against b, one coordinate's estimates, the training.

Each function draws from ColumnDataSources the page fills and from the rules (Spans) and ranges the
page moves; the page replaces their data and never rebuilds a figure.
"""

from __future__ import annotations

from bokeh.models import (
    ColumnDataSource,
    FactorRange,
    Legend,
    LegendItem,
    Range1d,
    Span,
)
from bokeh.transform import dodge

from engines.bandit import BASELINES
from widgets.style import OKABE_ITO, plot

COLOURS = {"exact": OKABE_ITO["grey"], "none": OKABE_ITO["orange"], "b": OKABE_ITO["blue"], "b_star": OKABE_ITO["green"]}
"""The exact answer, no baseline, the current b and the best b*: the same colour on every panel."""
TRAIN_NAMES = {"none": "no baseline", "running": "running average of ratings", "value": "exact value V"}
"""The three baselines of section 6.7's training, as the plots and the training table name them."""
TRAIN_COLOURS = dict(zip(BASELINES, (OKABE_ITO["orange"], OKABE_ITO["blue"], OKABE_ITO["green"])))
"""One colour per baseline of the training run."""


def gradient_figure(gradient: ColumnDataSource, arms: int):
    """The exact gradient per arm beside the Monte Carlo means ± 2 SE without a baseline and at b."""
    fig = plot("arm (reply) k", "∂J/∂θ_k (reward units)", x_range=(0.5, arms + 0.5), height=320)
    fig.xaxis.ticker = list(range(1, arms + 1))
    fig.add_layout(Span(location=0, dimension="width", line_color=OKABE_ITO["grey"], line_width=1))
    exact = fig.scatter("arm", "exact", source=gradient, marker="dash", size=36, line_width=3, color=COLOURS["exact"])
    items = [LegendItem(label="exact gradient", renderers=[exact])]
    for key, label in (("none", "Monte Carlo mean, no baseline"), ("b", "Monte Carlo mean, baseline b")):
        fig.segment(f"x_{key}", f"low_{key}", f"x_{key}", f"high_{key}", source=gradient, color=COLOURS[key], line_width=2)
        dots = fig.scatter(f"x_{key}", f"mean_{key}", source=gradient, size=9, color=COLOURS[key])
        items.append(LegendItem(label=label, renderers=[dots]))
    fig.add_layout(Legend(items=items, orientation="vertical"), "below")
    return fig


def variance_figure(curve: ColumnDataSource, points: ColumnDataSource, marks: ColumnDataSource, b_rule: Span, b_star_rule: Span):
    """The exact total variance against b, the seed's Monte Carlo sweep ± 2 SE, and the marks at b* and b."""
    fig = plot("constant baseline b (reward units)", "variance of ĝ (reward²)", x_range=(0, 12), height=320)
    line = fig.line("b", "exact", source=curve, color=COLOURS["exact"], line_width=2)
    fig.segment("b", "low", "b", "high", source=points, color=COLOURS["none"], line_width=2)
    dots = fig.scatter("b", "mc", source=points, size=8, color=COLOURS["none"])
    marks_glyph = fig.scatter("b", "variance", source=marks, marker="diamond", size=15, color="colour")
    fig.add_layout(b_rule)
    fig.add_layout(b_star_rule)
    items = [
        LegendItem(label="exact", renderers=[line]),
        LegendItem(label="Monte Carlo ± 2 SE (the seed's sweep)", renderers=[dots]),
        LegendItem(label="b* (green) and the current b (blue)", renderers=[marks_glyph]),
    ]
    fig.add_layout(Legend(items=items, orientation="vertical"), "below")
    return fig


def histogram_figure(histogram: ColumnDataSource, exact_rule: Span):
    """One coordinate's one-sample estimates with and without b (the same samples), the exact gradient a rule."""
    fig = plot("one-sample estimate ĝ_k (reward units)", "samples per bin", height=300)
    none = fig.quad(left="left", right="right", bottom=0, top="none", source=histogram, color=COLOURS["none"], alpha=0.55, line_width=0)
    base = fig.quad(left="left", right="right", bottom=0, top="baseline", source=histogram, color=COLOURS["b"], alpha=0.55, line_width=0)
    fig.add_layout(exact_rule)
    items = [
        LegendItem(label="r · score_k (no baseline)", renderers=[none]),
        LegendItem(label="(r − b) · score_k (same samples)", renderers=[base]),
    ]
    fig.add_layout(Legend(items=items, orientation="horizontal"), "below")
    return fig


def training_figures(curves: ColumnDataSource, arm_counts: ColumnDataSource, arms: int,
                     steps_range: Range1d, J_range: Range1d, seeds_range: Range1d):
    """Mean J over seeds with its 10th to 90th percentile band per baseline, and the seeds per most likely arm.

    The ranges are the page's, set to hold the whole run before it starts.
    """
    fig = plot("REINFORCE step", "J (reward units)", x_range=steps_range, y_range=J_range, height=340)
    items = []
    for baseline in BASELINES:
        colour = TRAIN_COLOURS[baseline]
        band = fig.varea("step", f"{baseline}_p10", f"{baseline}_p90", source=curves, fill_color=colour, fill_alpha=0.2)
        line = fig.line("step", f"{baseline}_mean", source=curves, color=colour, line_width=2)
        items.append(LegendItem(label=f"{TRAIN_NAMES[baseline]}: mean, 10th to 90th percentile", renderers=[line, band]))
    fig.add_layout(Legend(items=items, orientation="vertical"), "below")
    factors = [str(k) for k in range(1, arms + 1)]
    bars = plot("most likely arm at the current step", "seeds", x_range=FactorRange(*factors), y_range=seeds_range, height=340)
    bar_items = []
    for offset, baseline in zip((-0.27, 0.0, 0.27), BASELINES):
        glyph = bars.vbar(x=dodge("arm", offset, range=bars.x_range), top=baseline, width=0.25, source=arm_counts, color=TRAIN_COLOURS[baseline])
        bar_items.append(LegendItem(label=TRAIN_NAMES[baseline], renderers=[glyph]))
    bars.add_layout(Legend(items=bar_items, orientation="vertical"), "below")
    return fig, bars
