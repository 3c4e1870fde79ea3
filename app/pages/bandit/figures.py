"""The bandit page's figures: the gradient, the variance against b, one coordinate's estimates, the training;
and the columns and numbers they show, made from the engine's results.

Each figure draws from ColumnDataSources the page fills and from the rules (Spans) and ranges the
page moves; the page replaces their data with the columns made here and never rebuilds a figure.
The column functions are pure (numbers in, `dict` out), so they are tested without a session.
"""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, FactorRange, Legend, LegendItem, Range1d, Span
from bokeh.transform import dodge

from app.pages.bandit.text import PLOT_TITLES, TRAIN_NAMES, variance_ratio
from engines.bandit import BASELINES, MonteCarlo, exact_gradient, exact_total_variance, expected_return, optimal_baseline
from widgets.downloads import plot_with_downloads
from widgets.style import OKABE_ITO, plot

COLOURS = {"exact": OKABE_ITO["grey"], "none": OKABE_ITO["orange"], "b": OKABE_ITO["blue"], "b_star": OKABE_ITO["green"]}
"""The exact answer, no baseline, the current b and the best b*: the same colour on every panel."""
TRAIN_COLOURS = dict(zip(BASELINES, (OKABE_ITO["orange"], OKABE_ITO["blue"], OKABE_ITO["green"])))
"""One colour per baseline of the training run."""
RULES = {
    "b": {"line_color": COLOURS["b"], "line_dash": [4, 3]},
    "b_star": {"line_color": COLOURS["b_star"], "line_dash": [2, 2]},
    "exact": {"line_color": COLOURS["exact"], "line_width": 2},
}
"""The vertical rules the page moves: at the current b and at b* (variance panel), at the exact gradient (histogram)."""
B_AXIS = np.linspace(0.0, 12.0, 241)
"""Baselines of the exact variance curve, 0 to 12 in steps of 0.05."""
SIDE_BY_SIDE = (("none", -0.15), ("b", 0.15))
"""The gradient panel's Monte Carlo runs, no baseline and the current b, each drawn this far from its arm."""
EMPTY_CURVES = {"step": []} | {f"{b}_{c}": [] for b in BASELINES for c in ("mean", "p10", "p90")}
EMPTY_ARMS = {"arm": [], **{b: [] for b in BASELINES}}
"""The training plots' columns before a run has delivered its first steps."""


def rule(kind: str) -> Span:
    """A vertical rule of RULES (`kind` "b", "b_star" or "exact"), at 0 until the page moves it."""
    return Span(location=0, dimension="height", **({"line_width": 1.5} | RULES[kind]))


def gradient_columns(means, theta, mc: MonteCarlo) -> dict[str, np.ndarray]:
    """The gradient panel: per arm k (from 1) the exact dJ/dtheta_k, and the Monte Carlo mean ± 2 SE of
    `mc`'s first two rows (b = 0, the current b), set beside the arm as SIDE_BY_SIDE says. Each column (K,)."""
    exact = exact_gradient(means, theta)  # (K,)
    arm = np.arange(1, len(exact) + 1)
    data = {"arm": arm, "exact": exact}
    for row, (key, shift) in enumerate(SIDE_BY_SIDE):
        mean, se = mc.mean_estimate[row], mc.mean_estimate_se[row]  # (K,)
        data |= {f"x_{key}": arm + shift, f"mean_{key}": mean, f"se_{key}": se, f"low_{key}": mean - 2 * se, f"high_{key}": mean + 2 * se}
    return data


def sweep_columns(means, sd: float, theta, swept: MonteCarlo) -> dict[str, np.ndarray]:
    """The variance panel's points: the Monte Carlo total variance ± 2 SE at each b of the sweep, and the exact one."""
    variance, se = swept.total_variance, swept.total_variance_se  # (B,)
    return {"b": swept.b, "mc": variance, "low": variance - 2 * se, "high": variance + 2 * se, "se": se,
            "exact": exact_total_variance(means, sd, theta, swept.b)}


def curve_columns(means, sd: float, theta) -> dict[str, np.ndarray]:
    """The variance panel's exact curve: the total variance at every b of B_AXIS."""
    return {"b": B_AXIS, "exact": exact_total_variance(means, sd, theta, B_AXIS)}


def marks_columns(means, sd: float, theta, b: float) -> dict[str, list]:
    """The variance panel's two diamonds: the exact total variance at b* and at the current b."""
    b_star = float(optimal_baseline(means, theta))
    at_star, at_b = exact_total_variance(means, sd, theta, np.array([b_star, b]))
    return {"b": [b_star, b], "variance": [at_star, at_b], "colour": [COLOURS["b_star"], COLOURS["b"]]}


def estimate_numbers(means, sd: float, theta, b: float, mc: MonteCarlo) -> dict[str, float]:
    """The metric row (text.METRICS): J, b*, the exact and the Monte Carlo (`mc`'s rows b = 0 and b) total
    variance without and with b, and how many times smaller b makes each."""
    exact_none, exact_b = exact_total_variance(means, sd, theta, np.array([0.0, b]))
    mc_none, mc_b = mc.total_variance[:2]
    return {
        "J": float(expected_return(means, theta)),
        "b_star": float(optimal_baseline(means, theta)),
        "exact_none": exact_none,
        "exact_b": exact_b,
        "ratio": variance_ratio(exact_none, exact_b),
        "mc_none": mc_none,
        "mc_b": mc_b,
        "mc_ratio": variance_ratio(mc_none, mc_b),
    }


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
        LegendItem(label="Monte Carlo ± 2 SE (Chapter 6's b)", renderers=[dots]),
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
        # The title says what the line and the band are: a longer label made the legend wider than the plot, and it
        # spilled over the controls beside it.
        items.append(LegendItem(label=TRAIN_NAMES[baseline], renderers=[line, band]))
    fig.add_layout(Legend(items=items, orientation="vertical"), "below")
    factors = [str(k) for k in range(1, arms + 1)]
    bars = plot("most likely arm at the current step", "seeds", x_range=FactorRange(*factors), y_range=seeds_range, height=340)
    bar_items = []
    for offset, baseline in zip((-0.27, 0.0, 0.27), BASELINES):
        glyph = bars.vbar(x=dodge("arm", offset, range=bars.x_range), top=baseline, width=0.25, source=arm_counts, color=TRAIN_COLOURS[baseline])
        bar_items.append(LegendItem(label=TRAIN_NAMES[baseline], renderers=[glyph]))
    bars.add_layout(Legend(items=bar_items, orientation="vertical"), "below")
    return fig, bars


def estimate_plots(gradient: ColumnDataSource, curve: ColumnDataSource, points: ColumnDataSource, marks: ColumnDataSource,
                   b_rule: Span, b_star_rule: Span, arms: int) -> pn.Row:
    """The estimates section: the gradient and the variance against b side by side, each with its downloads."""
    return pn.Row(
        plot_with_downloads(gradient_figure(gradient, arms), {"gradient": gradient}, PLOT_TITLES["gradient"]),
        plot_with_downloads(variance_figure(curve, points, marks, b_rule, b_star_rule),
                            {"variance_curve": curve, "variance_points": points}, PLOT_TITLES["variance"]),
        sizing_mode="stretch_width",
    )


def histogram_plot(histogram: ColumnDataSource, exact_rule: Span) -> pn.Column:
    """The histogram section's plot, with its download."""
    return plot_with_downloads(histogram_figure(histogram, exact_rule), {"histogram": histogram}, PLOT_TITLES["histogram"])


def training_plots(curves: ColumnDataSource, arm_counts: ColumnDataSource, arms: int,
                   steps_range: Range1d, J_range: Range1d, seeds_range: Range1d) -> pn.Row:
    """The training section's two plots (training_figures) side by side, each with its download."""
    training_figure, arms_figure = training_figures(curves, arm_counts, arms, steps_range, J_range, seeds_range)
    return pn.Row(
        plot_with_downloads(training_figure, {"training": curves}, PLOT_TITLES["training"]),
        plot_with_downloads(arms_figure, {"final_arms": arm_counts}, PLOT_TITLES["final_arms"]),
        sizing_mode="stretch_width",
    )
