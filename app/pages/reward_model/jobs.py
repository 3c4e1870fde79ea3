"""The reward-models page's three long jobs, each one `JobView` with what it draws, each a model job on the cluster:
sampling the preference pairs (seed 001 section 6), training the reward model on them (section 8, equation 14),
and the stretch, the same responses relabelled at several label temperatures with a reward model trained on each.

The page owns the controls (they are in its link) and the pairs it shows; it hands each job functions that read
what the job needs from it. A job fixes its settings as it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.jobs.cluster import Cluster
from app.jobs.model_cache import ModelCache
from app.jobs.model_jobs import SweepView, TrainingView, generate_pairs, sweep_tau, train_reward_model
from app.pages.reward_model.figures import TrainingDisplay, sweep_figure
from app.pages.reward_model.text import sweep_intro
from engines.lm.preferences import PairSettings, PreferencePairs
from engines.lm.reward_model import RewardModelSettings, TauSweepRow, TrainedRewardModel
from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView


class PairsSampling:
    """The pairs of `settings()`: the bundled set, one the server kept, or sampled on the cluster with their progress;
    `on_pairs(pairs)` takes them once they are all there. `on_start` is the page's Start (it stops what the pairs
    feed, then calls `start`)."""

    def __init__(self, settings: Callable[[], PairSettings], on_pairs: Callable[[PreferencePairs], None],
                 on_start: Callable[[], None], cluster: Cluster, models: ModelCache, seed: param.Integer):
        self.settings, self.on_pairs, self.cluster, self.models = settings, on_pairs, cluster, models
        self.job = JobView(self._show, on_start, seed=seed)

    def start(self) -> None:
        """Generate the pairs of the current settings (or take them from the server's cache)."""
        settings = self.settings()
        self.job.start(lambda: generate_pairs(settings, self.cluster, self.models))

    def _show(self, report) -> None:
        pairs = report if isinstance(report, PreferencePairs) else report.pairs  # a kept set, or a sampling's progress
        if pairs is None:
            self.job.controls.progress = report.done / report.total
            return
        self.on_pairs(pairs)


class RewardModelTraining:
    """The reward model trained on the pairs the page shows (`data()`) with `settings()`, its curves and readings in
    `display` (figures.py), `trained` once it has ended. `key()` names what the server may keep of it (None: the
    pairs are a file's, which another session may have changed since). `on_start` is the page's Start (it calls
    `start` while its tab is open)."""

    def __init__(self, data: Callable[[], PreferencePairs | None], settings: Callable[[], RewardModelSettings],
                 key: Callable[[], tuple | None], display: TrainingDisplay, on_start: Callable[[], None], cluster: Cluster,
                 models: ModelCache, seed: param.Integer):
        self.data, self.settings, self.key, self.display = data, settings, key, display
        self.cluster, self.models = cluster, models
        self.trained: TrainedRewardModel | None = None
        self.job = JobView(self._show, on_start, seed=seed)

    def clear(self) -> None:
        """The trained model no longer matches the data or the settings: stop its training and clear what it showed."""
        self.job.stop()  # its progress goes back to 0 as it restarts (JobView.restart_soon, JobView.start)
        self.trained = None
        self.display.clear()

    def start(self) -> None:
        """Train the reward model on the pairs shown, replacing any run under way (or show the one the server kept)."""
        pairs = self.data()
        if pairs is None:
            return
        self.clear()
        settings = self.settings()
        self.display.starting(settings.steps)
        key = self.key()
        key = None if key is None else ("reward model", (key, pairs.tau_label, pairs.seed), settings)
        kept = None if key is None else self.models.result(key)
        if kept is not None:
            self._show(replace(kept, pairs=pairs))
            self.job.done(True)
            return
        self.job.start(lambda: train_reward_model(pairs, settings, key, self.cluster, self.models))

    def _show(self, view: TrainingView) -> None:
        """Draw a TrainingView of the run under way (app.jobs.model_jobs)."""
        if view.pairs is not self.data() or view.settings != self.settings():
            return  # a view of a run replaced since
        with pn.io.hold():
            self.display.show(view)
            self.job.controls.progress = view.progress
            self.trained = view.trained  # last, as the page's data


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
