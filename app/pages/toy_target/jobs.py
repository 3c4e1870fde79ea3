"""The toy target page's two long jobs, each one `JobView` with what it draws: the Monte Carlo batches of one-batch
REINFORCE estimates beside the exact gradient (seed 001 section 4, Exercise 2) and the training runs to J >= 0.9
with and without a baseline (section 5).

Both run on a worker thread of the web process under the server's compute seconds. The page owns the controls
and hands each job a function that reads its settings from them; a job fixes its settings as it starts.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.toy_target.figures import (
    identity_columns,
    mean_columns,
    scatter_figure,
    training_columns,
    training_figure,
    variance_columns,
)
from app.pages.toy_target.text import MEANS_TITLE, TABLE_CSS, training_html, variance_table_html
from engines.toy_target import ESTIMATORS, Batches, ToyTargetSettings, TrainingSnapshot, draw_batches, train
from widgets.downloads import csv_download, plot_with_downloads
from widgets.job_view import JobView
from widgets.updates import one_update


class EstimateBatches:
    """Many one-batch estimates of the gradient at the uniform start, drawn in batches: their means against the exact
    gradient (`means`), the variance table, and `on_drawn(batches)` for what the page draws of one coordinate.

    `settings()` gives the experiment's settings (batch size, batches, target and seed)."""

    def __init__(self, settings: Callable[[], ToyTargetSettings], on_drawn: Callable[[Batches], None], seed: param.Integer,
                 time_limit: float):
        self.settings, self.on_drawn = settings, on_drawn
        self.drawn: Batches | None = None
        self.means = ColumnDataSource({"t": [], "c": [], "k": [], "exact": [], **{n: [] for n in ESTIMATORS}}, name="mean_estimates")
        self.identity = ColumnDataSource({"x": [-0.01, 0.025], "y": [-0.01, 0.025]}, name="identity")
        self.focus = ColumnDataSource({"exact": [], "mean": []}, name="coordinate")
        self.variance_source = ColumnDataSource(name="variance_table")
        self.variance_table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[TABLE_CSS])
        self.job = JobView(self._apply, self.start, seed=seed, time_limit=time_limit)

    def start(self) -> None:
        """Draw the batches afresh; a run under way is cancelled."""
        s = self.settings()
        self.job.start(lambda: draw_batches(s.samples, s.batches, s.target_seed, s.seed))

    def _apply(self, batches: Batches) -> None:
        self.drawn = batches
        self.job.controls.progress = batches.drawn / batches.total
        with one_update():
            means = mean_columns(batches)
            self.means.data, self.identity.data = means, identity_columns(means["exact"])
            self.variance_source.data = variance_columns(batches.variance_rows)
            self.variance_table.object = variance_table_html(batches.variance_rows, batches)
            self.on_drawn(batches)

    def means_view(self) -> pn.viewable.Viewable:
        """Every coordinate's mean estimate against its exact gradient."""
        return plot_with_downloads(scatter_figure(self.means, self.identity, self.focus), {"mean_estimates": self.means}, MEANS_TITLE)

    def table_download(self) -> pn.viewable.Viewable:
        return csv_download(self.variance_source, "variance_table.csv", "CSV: variance_table")


class TrainingRuns:
    """Every training seed with and without the compared baseline, trained to the seed's steps; the mean J of each as
    a curve, the step each reached J >= 0.9, and the table. `settings()` and `estimators()` give what to train."""

    def __init__(self, settings: Callable[[], ToyTargetSettings], estimators: Callable[[], tuple[str, ...]], time_limit: float):
        self.settings, self.estimators = settings, estimators
        self.snapshot: TrainingSnapshot | None = None
        self.curves = ColumnDataSource({"xs": [], "ys": [], "colour": [], "label": []}, name="training_curves")
        self.reached = ColumnDataSource({"step": [], "J": [], "colour": []}, name="steps_to_threshold")
        self.table = ColumnDataSource(name="training")
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[TABLE_CSS])
        self.job = JobView(self._apply, self.start, time_limit=time_limit)

    def start(self) -> None:
        """Train afresh; a run under way is cancelled."""
        settings, estimators = self.settings(), self.estimators()
        self.job.start(lambda: train(settings, estimators, every=5))

    def _apply(self, snapshot: TrainingSnapshot) -> None:
        self.snapshot = snapshot
        steps = self.settings().steps
        self.job.controls.progress = snapshot.step / steps
        with one_update():
            self.curves.data, self.reached.data, self.table.data = training_columns(snapshot)
            self.summary.object = training_html(snapshot, steps)

    def view(self, controls: pn.viewable.Viewable) -> pn.Column:
        """The section: `controls` (the page's inputs of the training), the job, the curves, the table."""
        return pn.Column(
            controls,
            self.job.controls,
            self.job.notice,
            plot_with_downloads(training_figure(self.curves, self.reached), {"training": self.table}),
            self.summary,
            sizing_mode="stretch_width",
        )
