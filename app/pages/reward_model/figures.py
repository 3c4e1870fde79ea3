"""The reward-models page's figures and tables: equation 12 in the pairs, the training curves, the probe, the sweep.

Each figure draws from ColumnDataSources whose data is replaced in place: no figure is rebuilt.
The functions at the top turn the pairs and the training's views into those sources' columns
(numpy in, dicts out). `PairsDisplay` holds everything the page draws of the pairs it shows, and
`TrainingDisplay` everything it draws of the reward model's training: their sources, panes and
figures; the page hands them its data and they draw it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, DataTable, NumberFormatter, Range1d, Span, StringEditor, StringFormatter, TableColumn

from app.pages.preferences.figures import legend_below
from app.pages.reward_model.preference_html import PAIRS_CSS, pair_html, pairs_page_html, pairs_summary, training_summary
from app.pages.reward_model.text import PROBE_TITLE, READINGS, TRAINING_TEXT, WAITING_TEXT, readings
from engines.bradley_terry import bt_prob, oracle_accuracy
from widgets.downloads import csv_download, plot_with_downloads
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.style import OKABE_ITO, plot

GAP_AXIS = np.linspace(-6.0, 6.0, 121)
"""Gold-score gaps g_a - g_b drawn on the equation-12 plot."""
TABLE_COLUMNS = ("index", "prompt", "text_a", "g_a", "text_b", "g_b", "preferred", "p_a")
"""The pairs table's columns (pairs_page)."""
PROBE_COLUMNS = ("reply", "text", "g", "r_phi", "unknown_tokens")
"""The probe table's columns: the keys of engines.lm.reward_model.probe_rows' rows."""
CURVE_COLUMNS = ("step", "loss", "accuracy")
"""The live training curves' columns (app.jobs.model_jobs.TrainingView.curve)."""
CEILING_COLUMNS = ("step", "acc_star")
"""The ceiling line's columns (ceiling_line)."""


def empty(columns) -> dict:
    """A source's columns with no rows: what a plot or table shows before its data comes (or after it is stale)."""
    return {column: [] for column in columns}


def probability_curve(tau_label: float) -> dict:
    """Equation 12 at `tau_label`: P(y_a preferred) at each gold-score gap of GAP_AXIS."""
    return {"gap": GAP_AXIS, "p": bt_prob(GAP_AXIS, 0.0, tau_label)}


def label_frequencies(pairs) -> dict:
    """Share of pairs (engines.lm.preferences.PreferencePairs) labelled 'a preferred' at each gold gap g_a - g_b, with
    the count: equation 12 in the data."""
    gap = pairs.g_a - pairs.g_b
    values, which, counts = np.unique(gap, return_inverse=True, return_counts=True)
    preferred = np.bincount(which, weights=pairs.label.astype(float), minlength=len(values))
    return {"gap": values, "frequency": preferred / counts, "pairs": counts}


def pairs_page(pairs, start: int, rows: int) -> dict:
    """The table's columns for `rows` pairs of `pairs` (engines.lm.preferences.PreferencePairs) from `start` (at most
    the last pair): the prompt, both continuations with their gold scores, the label, and each pair's P(a ≻ b) by
    equation 12, to three places."""
    start = min(start, len(pairs) - 1)
    shown = np.arange(start, min(start + rows, len(pairs)))  # (rows,) at most
    return {
        "index": shown, "prompt": pairs.prompt[shown], "text_a": pairs.text_a[shown], "g_a": pairs.g_a[shown],
        "text_b": pairs.text_b[shown], "g_b": pairs.g_b[shown], "preferred": np.where(pairs.label[shown], "a", "b"),
        "p_a": np.round(bt_prob(pairs.g_a[shown], pairs.g_b[shown], pairs.tau_label), 3),
    }


def ceiling_line(steps: int, acc_star: float) -> dict:
    """The ceiling Acc* (equation 13) as a flat line over a training of `steps` optimiser steps."""
    return {"step": [0, steps], "acc_star": [acc_star, acc_star]}


def probe_columns(rows) -> dict:
    """The probe table's columns from the probe's rows (dicts by PROBE_COLUMNS, engines.lm.reward_model.probe_rows)."""
    return {column: [row[column] for row in rows] for column in PROBE_COLUMNS}


def chance_line(fig, location: float) -> None:
    """A grey dashed rule across the figure at `location` (chance accuracy, or the loss log 2 of a coin)."""
    fig.add_layout(Span(location=location, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3]))


def pairs_figure(probability: ColumnDataSource, frequency: ColumnDataSource):
    """Equation 12's curve at the page's tau_label, and the share labelled a at each gold gap of the pairs."""
    fig = plot("gold-score gap g(y_a) − g(y_b)", "P(y_a preferred)", x_range=(-6, 6), y_range=(0, 1.02), height=300)
    fig.line("gap", "p", source=probability, color=OKABE_ITO["blue"], line_width=2, legend_label="σ(gap / τ_label), equation 12")
    fig.scatter("gap", "frequency", source=frequency, color=OKABE_ITO["orange"], size=9, legend_label="share labelled a in the pairs")
    return legend_below(fig)


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


def probe_table(probe: ColumnDataSource) -> DataTable:
    """The probe: each hand-written reply with its gold score, its normalised r_phi and its unknown tokens."""
    return table(probe, [
        ("reply", "hand-written reply", 180), ("text", "text", 420), ("g", "gold g", 60, NumberFormatter(format="+0")),
        ("r_phi", "r_φ (normalised)", 110, NumberFormatter(format="+0.00")), ("unknown_tokens", "unknown tokens", 100),
    ], height=260)


class PairsDisplay:
    """The pairs as the page shows them: the sentence about the set, one pair in full, a page of them in the table,
    and equation 12's curve at the page's τ_label with the share labelled a at each gold gap of the set."""

    def __init__(self, tau_label: float, rows: int):
        self.rows = rows
        self.table = ColumnDataSource(empty(TABLE_COLUMNS), name="pairs")
        self.freq = ColumnDataSource(empty(("gap", "frequency", "pairs")), name="label_frequency")
        self.prob = ColumnDataSource(probability_curve(tau_label), name="probability")
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.05em"})
        self.pair = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[PAIRS_CSS])
        self.page = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[PAIRS_CSS])

    def show(self, pairs, source: str, start: int) -> None:
        """Show `pairs` (engines.lm.preferences.PreferencePairs, from `source`), the table from pair `start`."""
        self.freq.data = label_frequencies(pairs)
        self.summarise(pairs, source)
        self.show_page(pairs, start)

    def summarise(self, pairs, source: str, saved: Path | None = None) -> None:
        """The sentence about `pairs`, with the ceiling Acc* on all of them (equation 13), and where they were `saved`."""
        self.summary.object = pairs_summary(pairs, source, float(oracle_accuracy(pairs.g_a, pairs.g_b, pairs.tau_label)), saved)

    def show_page(self, pairs, start: int) -> None:
        """The table's page from pair `start` (at most the last), and that pair in full."""
        start = min(start, len(pairs) - 1)
        self.table.data = pairs_page(pairs, start, self.rows)
        self.page.object = pairs_page_html(self.table.data)
        self.pair.object = pair_html(pairs, start, float(bt_prob(pairs.g_a[start], pairs.g_b[start], pairs.tau_label)))

    def figure_view(self) -> pn.Column:
        return plot_with_downloads(pairs_figure(self.prob, self.freq), {"label_frequency": self.freq, "probability": self.prob},
                                   "Equation 12 in the pairs")

    def table_view(self) -> pn.Column:
        """The page of pairs as whole, wrapped texts after their prompts, and its CSV."""
        return pn.Column(self.page, pn.Row(csv_download(self.table, "pairs.csv", "CSV: pairs")), sizing_mode="stretch_width")


class TrainingDisplay:
    """The reward model's training as the page shows it: the live loss and held-out accuracy under the ceiling Acc*,
    then, once trained, its readings, the sentence about them, the probe and the button that saves it.

    The figures' step axes are set to a training's length as it starts (`starting`), so that its curve
    grows across a fixed axis. `clear` takes away what a model no longer matching the pairs or the
    settings showed, and sends nothing when nothing was shown: a dragged control's later steps cost no message.
    """

    def __init__(self, steps: int, on_save: Callable[[], None]):
        self.curve = ColumnDataSource(empty(CURVE_COLUMNS), name="training")
        self.ceiling = ColumnDataSource(empty(CEILING_COLUMNS), name="ceiling")
        self.probe = ColumnDataSource(empty(PROBE_COLUMNS), name="probe")
        self.loss_steps, self.accuracy_steps = Range1d(0, steps), Range1d(0, steps)
        self.text = pn.pane.HTML(WAITING_TEXT, sizing_mode="stretch_width", styles={"font-size": "1.05em"})
        self.metrics = MetricRow(READINGS)
        self.metrics.pane.visible = False
        self.save_button = pn.widgets.Button(label="Save reward model", color="primary", width=170, disabled=True)
        self.save_button.on_click(lambda _event: on_save())
        self.saved = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))

    def starting(self, steps: int) -> None:
        """A training of `steps` optimiser steps starts."""
        self.text.object = TRAINING_TEXT
        self.loss_steps.end = self.accuracy_steps.end = steps

    def clear(self) -> None:
        """Take away what the training showed (nothing is sent when it showed nothing)."""
        if not (len(self.curve.data["step"]) or len(self.ceiling.data["step"]) or self.metrics.pane.visible):
            return
        self.curve.data, self.ceiling.data, self.probe.data = empty(CURVE_COLUMNS), empty(CEILING_COLUMNS), empty(PROBE_COLUMNS)
        self.metrics.pane.visible = False
        self.save_button.disabled = True

    def show(self, view) -> None:
        """Draw an app.jobs.model_jobs.TrainingView: the curves so far, and the trained model once there is one."""
        self.curve.data = view.curve
        if not len(self.ceiling.data["step"]):  # drawn once a training: its held-out pairs' Acc* does not move
            self.ceiling.data = ceiling_line(view.settings.steps, view.acc_star)
        if view.trained is not None:
            self.metrics.update(**readings(view.trained.evaluation))
            self.metrics.pane.visible, self.save_button.disabled = True, False
            self.text.object = training_summary(view.trained)
            self.probe.data = probe_columns(view.probe)

    def curves_view(self) -> pn.Row:
        return pn.Row(
            plot_with_downloads(loss_figure(self.curve, self.loss_steps), {"training": self.curve}, "Training loss"),
            plot_with_downloads(accuracy_figure(self.curve, self.ceiling, self.accuracy_steps),
                                {"training": self.curve, "ceiling": self.ceiling}, "Held-out accuracy under the ceiling Acc*"),
            sizing_mode="stretch_width",
        )

    def readings_view(self) -> list:
        """What is read of the trained model, in the order shown under the curves."""
        return [self.text, self.metrics, section_heading(PROBE_TITLE), plot_with_downloads(probe_table(self.probe), {"probe": self.probe}),
                pn.Row(self.save_button), self.saved]
