"""The preferences page's figures, and the columns they draw from a rater's labels.

The figures draw from ColumnDataSources the page fills and from the rule (a Span) it moves; the page
replaces their data and never rebuilds a figure. The functions after them compute those columns from the
engine (engines.bradley_terry), numpy in and dicts out, and draw the labelled set the page samples.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from bokeh.models import ColumnDataSource, Span

from engines.bradley_terry import (
    BradleyTerrySettings,
    LabelledSetSettings,
    accuracy_vs_tau,
    bt_prob,
    oracle_accuracy,
    sample_labels,
)
from widgets.style import OKABE_ITO, plot

SEED_GAPS = np.array(BradleyTerrySettings.gaps)
"""The check-yourself set of section 7: three pairs with quality gaps 0, 1 and 2."""
HALF_NORMAL = np.array([NormalDist().inv_cdf(0.5 + 0.5 * (i + 0.5) / 400) for i in range(400)])
"""400 equally likely quantiles of |N(0, 1)|: Acc* of the |N(0, s)| gaps is their average, exactly
enough (no sampling noise) for a smooth curve."""
GAP_AXIS = np.linspace(-4.0, 4.0, 161)
"""Quality gaps u_a - u_b drawn on the P(a > b) plot."""
TAU_AXIS = np.geomspace(0.05, 5.0, 121)
"""Label temperatures of the Acc* curve, evenly spaced on a log axis."""
BINS = np.linspace(0.0, 4.0, 9)
"""Gap bins for the label frequencies of a sampled |N(0, s)| set."""


def legend_below(fig, height: int = 300):
    """Move the figure's legend out of its plot area, under it, one entry a row (a legend inside covered a data
    point wherever it stood); the figure grows by the legend's rows so that its plot area keeps `height`'s size."""
    legend = fig.legend[0]
    fig.center.remove(legend)
    legend.orientation = "vertical"
    fig.add_layout(legend, "below")
    fig.height = height + 24 * len(legend.items) + 10
    return fig


def probability_figure(prob: ColumnDataSource, freq: ColumnDataSource):
    """Equation 12's P(a > b) against the gap, and the labels' frequency per gap in the sampled set."""
    fig = plot("quality gap u_a − u_b (gold-score units)", "P(a preferred to b)", x_range=(-4, 4), y_range=(0, 1.02), height=300)
    fig.add_layout(Span(location=0.5, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3]))
    fig.line("gap", "p", source=prob, color=OKABE_ITO["blue"], line_width=2, legend_label="σ(gap / τ_label)")
    fig.scatter("gap", "frequency", source=freq, color=OKABE_ITO["orange"], size=9, legend_label="label frequency in the sample")
    return legend_below(fig)


def ceiling_figure(ceiling: ColumnDataSource, marker: ColumnDataSource, tau_rule: Span):
    """Equation 13's Acc* of the gaps against tau_label (log axis), the current tau_label marked."""
    fig = plot("label temperature τ_label (log scale)", "Acc*, best possible accuracy", x_axis_type="log", x_range=(0.05, 5),
               y_range=(0.45, 1.02), height=300)
    fig.line("tau", "acc", source=ceiling, color=OKABE_ITO["green"], line_width=2, legend_label="Acc* for these gaps")
    fig.scatter("tau", "acc", source=marker, color=OKABE_ITO["vermillion"], size=11, legend_label="current τ_label")
    fig.add_layout(tau_rule)
    return legend_below(fig)


def gap_population(gaps: str, s: float) -> np.ndarray:
    """The gaps Acc* averages over: the seed's 0, 1, 2, or the quantiles of |N(0, s)|."""
    return SEED_GAPS if gaps == "seed" else s * HALF_NORMAL


def probability_columns(tau: float) -> dict:
    """P(a > b) = sigma(gap / tau_label) along GAP_AXIS (equation 12)."""
    return {"gap": GAP_AXIS, "p": bt_prob(GAP_AXIS, 0.0, tau)}


def ceiling_columns(population: np.ndarray) -> dict:
    """Acc* of the gaps `population` at every label temperature of TAU_AXIS (equation 13)."""
    return {"tau": TAU_AXIS, "acc": accuracy_vs_tau(population, TAU_AXIS)}


def frequency_columns(sample: dict) -> dict:
    """The sampled set's share of labels preferring a, per gap (the seed's gaps) or per gap bin, with its pairs."""
    return {"gap": sample["bin_gap"], "frequency": sample["bin_frequency"], "pairs": sample["bin_pairs"]}


def labelled_set(settings: LabelledSetSettings) -> dict:
    """n rater labels (equation 12) and how well the true quality u predicts them.

    The pairs' gaps u_a - u_b >= 0 are the seed's 0, 1, 2 drawn uniformly, or |N(0, s)|
    draws; u predicts "a preferred" for every pair (a is never the worse one), so its
    accuracy is the fraction of labels that prefer a. Its binomial standard error is
    sqrt(acc (1 - acc) / n); its expectation is Acc* of the sampled gaps.
    """
    gaps, s, tau, n, seed = settings.gaps, settings.s, settings.tau, settings.n, settings.seed
    rng = np.random.default_rng(seed)
    g = SEED_GAPS[rng.integers(0, 3, size=n)] if gaps == "seed" else s * np.abs(rng.standard_normal(n))
    prefers_a = sample_labels(g, 0.0, tau, rng)
    accuracy = float(prefers_a.mean())
    if gaps == "seed":
        centres, members = SEED_GAPS, [g == v for v in SEED_GAPS]
    else:
        which = np.clip(np.digitize(g, BINS) - 1, 0, len(BINS) - 2)
        centres, members = (BINS[:-1] + BINS[1:]) / 2, [which == k for k in range(len(BINS) - 1)]
    counts = np.array([m.sum() for m in members])
    keep = counts > 0
    freq = np.array([prefers_a[m].mean() if m.any() else np.nan for m in members])
    return {
        "gap": g,
        "prefers_a": prefers_a,
        "accuracy": accuracy,
        "correct": int(prefers_a.sum()),
        "n": n,
        "seed": seed,
        "se": float(np.sqrt(accuracy * (1 - accuracy) / n)),
        "expected": float(oracle_accuracy(g, 0.0, tau)),
        "bin_gap": centres[keep],
        "bin_frequency": freq[keep],
        "bin_pairs": counts[keep],
    }
