"""The toy target page's figures: the mean estimates against the exact gradient, Figure 2, the training runs.

Each figure draws from ColumnDataSources the page fills; the page replaces their data and never
rebuilds a figure. The functions after them turn the engine's results (engines.toy_target: Batches,
TrainingSnapshot) into those sources' columns, numpy in and dicts out.
"""

from __future__ import annotations

import math

import numpy as np
from bokeh.models import ColumnDataSource, Span

from engines.toy_target import ACTIVE, ESTIMATORS, Batches, TrainingSnapshot, histogram, sd_and_se
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


# --- the plots' columns, from the engine's results --------------------------------------

HISTOGRAM_BINS = 40
"""Figure 2's bins, shared by both estimators' histograms."""


def mean_columns(batches: Batches) -> dict:
    """Every coordinate that can move (ACTIVE): its step t (counted from 1), context c, symbol k, exact gradient
    and each estimator's mean estimate so far."""
    t, c, k = np.nonzero(ACTIVE)
    return {"t": t + 1, "c": c, "k": k, "exact": batches.exact[ACTIVE],
            **{name: mean[ACTIVE] for name, mean in batches.means.items()}}


def identity_columns(exact: np.ndarray) -> dict:
    """The line mean = exact across the exact gradients' range, widened by 15 % of it at both ends."""
    low, high = float(exact.min()), float(exact.max())
    pad = 0.15 * (high - low)
    return {"x": [low - pad, high + pad], "y": [low - pad, high + pad]}


def variance_columns(rows: list[dict]) -> dict:
    """Exercise 2's table (Batches.variance_rows) as columns, for its CSV download."""
    return {key: [row[key] for row in rows] for key in ("estimator", "label", "measured", "se", "exact")}


def coordinate_numbers(batches: Batches, coord: tuple, estimator: str) -> dict:
    """Figure 2's numbers at `coord`: the one-batch estimates without a baseline and with `estimator` ((drawn,) each),
    the exact gradient, the mean of the compared estimates, and each one's sd, its standard error and its exact sd."""
    x_none = batches.estimates["none"][(slice(None), *coord)]  # (drawn,)
    x_other = batches.estimates[estimator][(slice(None), *coord)]  # (drawn,)
    (sd_none, se_none), (sd_other, se_other) = sd_and_se(x_none), sd_and_se(x_other)
    return {
        "x_none": x_none, "x_other": x_other,
        "exact": float(batches.exact[coord]), "mean": float(batches.means[estimator][coord]),
        "sd_none": sd_none, "se_none": se_none, "sd_none_exact": math.sqrt(float(batches.exact_variances["none"][coord])),
        "sd_other": sd_other, "se_other": se_other,
        "sd_other_exact": math.sqrt(float(batches.exact_variances[estimator][coord])),
    }


def histogram_columns(x_none: np.ndarray, x_other: np.ndarray, estimator: str) -> tuple[dict, dict]:
    """Figure 2's two histograms on the same HISTOGRAM_BINS bins spanning both sets of estimates (one bin 0.001
    wide where every estimate is equal); the compared one carries its estimator's colour and name as columns."""
    both = np.concatenate([x_none, x_other])
    low, high = float(both.min()), float(both.max())
    edges = np.linspace(low, high, HISTOGRAM_BINS + 1) if high > low else np.array([low - 0.5e-3, low + 0.5e-3])
    compared = histogram(x_other, edges)
    bins = len(compared["count"])
    return histogram(x_none, edges), {**compared, "colour": [COLOURS[estimator]] * bins, "label": [ESTIMATORS[estimator]] * bins}


def training_columns(snapshot: TrainingSnapshot) -> tuple[dict, dict, dict]:
    """The training plot's columns: one curve of J per estimator and seed, a point where a run first reaches the
    threshold, and every J in long form (estimator, seed, step, J) for the download."""
    E, S, n = snapshot.J.shape
    x = np.arange(n)
    colours = [COLOURS[name] for name in snapshot.estimators]
    curves = {
        "xs": [x] * (E * S),
        "ys": list(snapshot.J.reshape(E * S, n)),
        "colour": [colours[e] for e in range(E) for _ in range(S)],
        "label": [ESTIMATORS[name] for name in snapshot.estimators for _ in range(S)],
    }
    e, s = np.nonzero(snapshot.steps_to_threshold >= 0)
    steps = snapshot.steps_to_threshold[e, s]
    reached = {"step": steps, "J": snapshot.J[e, s, steps], "colour": [colours[i] for i in e]}
    table = {
        "estimator": np.repeat(snapshot.estimators, S * n),
        "seed": np.tile(np.repeat(np.arange(S), n), E),
        "step": np.tile(x, E * S),
        "J": snapshot.J.ravel(),
    }
    return curves, reached, table
