"""The reward-models page's figures and tables: equation 12 in the pairs, the training curves, the probe, the sweep.

Each function draws from ColumnDataSources the page fills; the page replaces their data and
never rebuilds a figure. The training figures take their x ranges from the page, which sets
them to the number of training steps before each training starts.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, DataTable, NumberFormatter, Range1d, Span, StringEditor, StringFormatter, TableColumn

from widgets.style import OKABE_ITO, plot


def label_frequencies(pairs) -> dict:
    """Share of pairs (engines.lm.preferences.PreferencePairs) labelled 'a preferred' at each gold gap g_a - g_b, with
    the count: equation 12 in the data."""
    gap = pairs.g_a - pairs.g_b
    values, which, counts = np.unique(gap, return_inverse=True, return_counts=True)
    preferred = np.bincount(which, weights=pairs.label.astype(float), minlength=len(values))
    return {"gap": values, "frequency": preferred / counts, "pairs": counts}


def pairs_rows(pairs, rows: np.ndarray, p_a: np.ndarray) -> dict:
    """The table's columns for `rows` of `pairs` (engines.lm.preferences.PreferencePairs): the prompt, both
    continuations with their gold scores, the label, and `p_a`, each pair's P(a ≻ b) by equation 12."""
    return {
        "index": rows, "prompt": pairs.prompt[rows], "text_a": pairs.text_a[rows], "g_a": pairs.g_a[rows],
        "text_b": pairs.text_b[rows], "g_b": pairs.g_b[rows], "preferred": np.where(pairs.label[rows], "a", "b"), "p_a": p_a,
    }


def chance_line(fig, location: float) -> None:
    """A grey dashed rule across the figure at `location` (chance accuracy, or the loss log 2 of a coin)."""
    fig.add_layout(Span(location=location, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3]))


def pairs_figure(probability: ColumnDataSource, frequency: ColumnDataSource):
    """Equation 12's curve at the page's tau_label, and the share labelled a at each gold gap of the pairs."""
    fig = plot("gold-score gap g(y_a) − g(y_b)", "P(y_a preferred)", x_range=(-6, 6), y_range=(0, 1.02), height=300)
    fig.line("gap", "p", source=probability, color=OKABE_ITO["blue"], line_width=2, legend_label="σ(gap / τ_label), equation 12")
    fig.scatter("gap", "frequency", source=frequency, color=OKABE_ITO["orange"], size=9, legend_label="share labelled a in the pairs")
    fig.legend.location = "top_left"
    return fig


def loss_figure(curve: ColumnDataSource, x_range: Range1d):
    """The training loss over the optimiser steps, log 2 (a coin's loss) dashed."""
    fig = plot("optimiser step", "training loss (nats per pair)", x_range=x_range, height=300)
    chance_line(fig, float(np.log(2)))
    fig.line("step", "loss", source=curve, color=OKABE_ITO["blue"], line_width=2, legend_label="−log σ(r_w − r_l), log 2 dashed")
    fig.legend.location = "top_right"
    return fig


def accuracy_figure(curve: ColumnDataSource, ceiling: ColumnDataSource, x_range: Range1d):
    """The held-out accuracy over the optimiser steps, under the ceiling Acc*."""
    fig = plot("optimiser step", "held-out pairwise accuracy", x_range=x_range, y_range=(0, 1.02), height=300)
    chance_line(fig, 0.5)
    fig.line("step", "acc_star", source=ceiling, color=OKABE_ITO["vermillion"], line_dash=[6, 3], line_width=2, legend_label="Acc*, the ceiling")
    fig.line("step", "accuracy", source=curve, color=OKABE_ITO["green"], line_width=2, legend_label="reward model")
    fig.scatter("step", "accuracy", source=curve, color=OKABE_ITO["green"], size=5)
    fig.legend.location = "bottom_right"
    return fig


def sweep_figure(sweep: ColumnDataSource):
    """The stretch: held-out accuracy ± 1 SE and Acc* at each label temperature."""
    fig = plot("label temperature τ_label (log scale)", "held-out accuracy", x_axis_type="log", x_range=(0.2, 5), y_range=(0, 1.02), height=300)
    chance_line(fig, 0.5)
    fig.line("tau_label", "acc_star", source=sweep, color=OKABE_ITO["vermillion"], line_dash=[6, 3], line_width=2, legend_label="Acc*")
    fig.segment("tau_label", "low", "tau_label", "high", source=sweep, color=OKABE_ITO["green"], line_width=2)
    fig.scatter("tau_label", "accuracy", source=sweep, color=OKABE_ITO["green"], size=9, legend_label="reward model ± 1 SE")
    fig.legend.location = "top_right"
    return fig


def table(source: ColumnDataSource, columns: list[tuple], height: int) -> DataTable:
    """A table of `source`: per column (field, title, width) or (field, title, width, formatter).

    The columns share one text formatter and one editor, the defaults each column would otherwise
    make its own of: two Bokeh models per column fewer for the browser, the same table.
    """
    text, editor = StringFormatter(), StringEditor()
    made = [TableColumn(field=c[0], title=c[1], width=c[2], formatter=c[3] if len(c) > 3 else text, editor=editor) for c in columns]
    return DataTable(source=source, columns=made, height=height, sizing_mode="stretch_width", index_position=None)


def pairs_table(pairs: ColumnDataSource) -> DataTable:
    """A page of pairs: prompt, both continuations with their gold scores, the label and P(a ≻ b)."""
    return table(pairs, [
        ("index", "#", 40), ("prompt", "prompt x", 220), ("text_a", "continuation a", 300), ("g_a", "g(a)", 50),
        ("text_b", "continuation b", 300), ("g_b", "g(b)", 50), ("preferred", "preferred", 70), ("p_a", "P(a ≻ b)", 70),
    ], height=250)


def probe_table(probe: ColumnDataSource) -> DataTable:
    """The probe: each hand-written reply with its gold score, its normalised r_phi and its unknown tokens."""
    return table(probe, [
        ("reply", "hand-written reply", 180), ("text", "text", 420), ("g", "gold g", 60, NumberFormatter(format="+0")),
        ("r_phi", "r_φ (normalised)", 110, NumberFormatter(format="+0.00")), ("unknown_tokens", "unknown tokens", 100),
    ], height=260)
