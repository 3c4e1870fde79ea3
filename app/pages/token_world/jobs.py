"""The token-world page's two long jobs, each one `JobView` with what it draws: the Monte Carlo check of the exact
bias² / variance split (seed 000 section 6.9) and the training against GAE critics (section 6.10).

Both run on a worker thread of the web process under the server's compute seconds. The page owns the controls
and hands each job a function that reads its settings from them; a job fixes its settings as it starts.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.token_world.figures import (
    decomposition_columns,
    monte_carlo_gap,
    training_columns,
    training_curve_data,
    training_figure,
    training_progress,
)
from app.pages.token_world.text import MC_STALE, TRAINING_INTRO, mc_checked_text, mc_sampling_text, training_note, training_table
from app.serving.results_cache import RESULTS
from engines.token_world import TokenWorldSettings, gae_decomposition_exact, mc_steps
from engines.token_world_training import TokenWorldTrainingSettings, summarise_training, training_stream
from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView


def _sentence() -> pn.pane.Markdown:
    """A pane for one of the job's sentences, under its controls."""
    return pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))


class MonteCarloCheck:
    """The Monte Carlo estimate of bias², variance and total error at the seed's eight λ, streamed as circles onto
    the exact curves, with a sentence (`status`, which the page places under the job) on its size and its
    largest gap from the exact values.

    `settings()` gives the world's settings at those λ, `noise()` the critic noise of the third panel.
    """

    def __init__(self, settings: Callable[[], TokenWorldSettings], noise: Callable[[], float], time_limit: float):
        self.settings, self.noise = settings, noise
        self.points = ColumnDataSource(decomposition_columns(None), name="monte_carlo")
        self.status = _sentence()
        self.job = JobView(self._apply, self.start, time_limit=time_limit)

    def start(self) -> None:
        """Sample afresh; a check under way is cancelled."""
        self.points.data = decomposition_columns(None)
        settings = self.settings()
        self.status.object = mc_sampling_text(settings.episodes, settings.seed)
        self.job.start(lambda: mc_steps(settings))

    def outdated(self) -> None:
        """The world or the critics changed: a check under way starts afresh once the controls are still, a
        finished one's points go and the sentence says so."""
        active = self.job.active  # a drag's later steps push a pending restart back
        if active or len(self.points.data["lam"]):
            self.points.data = decomposition_columns(None)
            if active:
                self.job.restart_soon()
            else:
                self.status.object = MC_STALE

    def _apply(self, snapshot) -> None:
        n, target, sampled = snapshot
        settings = self.settings()
        exact = RESULTS.get(gae_decomposition_exact, settings)
        self.points.data = decomposition_columns(sampled, self.noise())
        self.job.controls.progress = n / target
        self.status.object = mc_checked_text(n, settings.seed, monte_carlo_gap(sampled, exact, self.noise()))


class TrainingComparison:
    """REINFORCE (no baseline, leave-one-out) and actor-critics with GAE at the seed's λ, trained on the same seeds;
    the mean success probability of each streamed as a curve, the seed's table once a run is complete.

    `settings()` gives the controls' training settings; a note says which settings the curves are of.
    """

    def __init__(self, settings: Callable[[], TokenWorldTrainingSettings], seed: param.Integer, time_limit: float):
        self.settings, self.trained = settings, None  # the last run's settings, fixed as it starts
        self.lambdas = TokenWorldTrainingSettings.lambdas
        self.curves = ColumnDataSource({"update": [], **{c: [] for c in training_columns(self.lambdas)}}, name="training")
        self.note, self.result = _sentence(), pn.pane.Markdown(sizing_mode="stretch_width")
        self.job = JobView(self._apply, self.start, seed=seed, time_limit=time_limit)

    def start(self) -> None:
        """Train afresh with the controls' settings; a run under way is cancelled."""
        settings = self.trained = self.settings()
        self.result.object = ""
        self.show_note()
        self.job.start(lambda: training_stream(settings))

    def changed(self) -> None:
        """A control of the training moved: a run under way starts afresh once they are still."""
        if self.job.active:
            self.job.restart_soon()
        self.show_note()

    def show_note(self) -> None:
        self.note.object = training_note(self.trained, self.settings())

    def _apply(self, snapshot) -> None:
        methods, success, steps = snapshot
        self.curves.data = training_curve_data(success, self.lambdas)
        self.job.controls.progress = done = training_progress(success, steps)
        if done == 1.0:
            self.result.object = training_table(summarise_training(methods, success, self.trained), self.trained)

    def view(self, controls: pn.viewable.Viewable) -> pn.Column:
        """The section: what it trains, `controls` (the page's inputs of the training), the note, the job, the curves, the table."""
        return pn.Column(
            pn.pane.Markdown(TRAINING_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            controls,
            self.note,
            self.job,
            plot_with_downloads(training_figure(self.curves, self.lambdas), {"training": self.curves}),
            self.result,
            sizing_mode="stretch_width",
        )
