"""The reward-models page's long job of its own, the stretch: the same responses relabelled at several label temperatures, a reward model trained on each.

Its accuracy and the ceiling Acc* are drawn as the raters get noisier, one tau_label at a time,
from the sweep's worker (app.jobs.model_jobs.sweep_tau) through a JobView. It serves the reward-models
page alone, and drives a model job, so it lives in that page's package rather than among the widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import panel as pn
from bokeh.models import ColumnDataSource

from app.jobs.cluster import Cluster
from app.jobs.model_jobs import SweepView, sweep_tau
from app.pages.reward_model.text import sweep_intro
from engines.lm.reward_model import RewardModelSettings, TauSweepRow
from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView
from app.pages.reward_model.figures import sweep_figure


class TauSweep(pn.viewable.Viewer):
    """The sweep over `taus`, its Start/Stop and its figure; `rows` holds the finished tau_labels.

    `on_start` is the page's Start (it calls `start` with its pairs); `current()` gives the pairs the
    page shows now, so that a view of others (from a run stopped as they changed, still queued) is
    dropped; a failure's sentence is the job's alert.
    """

    def __init__(self, taus: tuple[float, ...], on_start: Callable[[], None], current: Callable[[], object],
                 cluster: Cluster, **params):
        super().__init__(**params)
        self.taus, self.current, self.cluster = taus, current, cluster
        self.rows: tuple[TauSweepRow, ...] = ()
        self.source = ColumnDataSource({k: [] for k in ("tau_label", "accuracy", "low", "high", "acc_star", "gold_order_accuracy", "spearman")},
                                       name="sweep")
        self.job = JobView(self._show, on_start)

    def start(self, pairs, settings: RewardModelSettings, label_seed: int) -> None:
        """Relabel `pairs` at each of the taus with `label_seed` and retrain with `settings`, replacing any sweep under way."""
        self.source.data = {k: [] for k in self.source.data}
        self.job.start(lambda: sweep_tau(pairs, self.taus, settings, label_seed, self.cluster))

    def _show(self, view: SweepView) -> None:
        if view.pairs is not self.current():
            return
        self.job.controls.progress = view.progress
        if len(view.rows) == len(self.rows) and view.rows == self.rows:
            return
        self.rows = view.rows
        self.source.data = view.columns()

    @cached_property
    def _layout(self) -> pn.Column:
        return pn.Column(
            pn.pane.Markdown(sweep_intro(self.taus), sizing_mode="stretch_width", margin=(0, 10)),
            self.job,
            plot_with_downloads(sweep_figure(self.source), {"sweep": self.source}, "Accuracy and Acc* as the raters get noisier"),
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return self._layout
