"""The bandit page's training: many seeds trained side by side with the three baselines of section 6.7.

A run walks `engines.bandit.training_views` on a worker thread through a JobView; its curves, the seeds per
most likely arm and the seed's table fill in as it goes. It serves the bandit page alone, so it lives in that
page's package: the page keeps the controls (they are in its link) and says what to train (`settings()`).
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d

from app.pages.bandit.figures import EMPTY_ARMS, EMPTY_CURVES, training_plots
from app.pages.bandit.text import TABLE_CSS, TRAINING_NOTE, training_table
from app.serving import limits
from engines.bandit import BanditTrainingSettings, TrainingView, training_views
from widgets.job_view import JobView
from widgets.predict import PredictionCard
from widgets.updates import one_update

SNAPSHOTS = 200
"""About how many snapshots a run sends, whatever its steps: the curves grow in small steps, few messages."""


class BanditTraining:
    """The run of `settings()`, its JobView, its two plots' data and axes, and the table of where the seeds are."""

    def __init__(self, settings: Callable[[], BanditTrainingSettings], seed: param.Integer):
        self.settings = settings
        self.curves = ColumnDataSource(EMPTY_CURVES, name="training")
        self.arms = ColumnDataSource(EMPTY_ARMS, name="final_arms")
        # The axes of a whole run: set by `frame`, which the page calls once the link has set its controls.
        self.steps_range, self.J_range, self.seeds_range = Range1d(0, 1), Range1d(0, 1), Range1d(0, 1)
        self.table = pn.pane.HTML(training_table(None), sizing_mode="stretch_width", stylesheets=[TABLE_CSS])
        self.view: TrainingView | None = None
        self.job = JobView(self.show, self.start, seed=seed, time_limit=limits.current().compute_seconds)

    def frame(self) -> None:
        """Axes that hold the whole run of the settings now, so the curves fill in without the plot jumping."""
        settings = self.settings()
        self.steps_range.end = settings.steps
        self.J_range.update(start=min(settings.means) - 0.1, end=max(settings.means) + 0.1)
        self.seeds_range.end = settings.seeds

    def clear(self) -> None:
        """No curves and no bars: a run of other settings is coming."""
        self.curves.data = dict(EMPTY_CURVES)
        self.arms.data = dict(EMPTY_ARMS)

    def start(self) -> None:
        """Start a fresh run of the three baselines, replacing any run under way."""
        settings = self.settings()
        self.clear()
        every = max(1, settings.steps // SNAPSHOTS)
        self.job.start(lambda: training_views(settings, every))

    def show(self, view: TrainingView) -> None:
        if view.settings != self.settings():
            return  # delivered by a run stopped since; its settings are no longer the controls'
        with one_update():
            self.view = view
            self.curves.data = view.curves
            self.arms.data = view.arms
            self.table.object = training_table(view)
            self.job.controls.progress = view.step / view.settings.steps

    def plots(self) -> pn.Row:
        """The mean J per baseline and the seeds per most likely arm (built when first shown)."""
        arms = len(self.settings().means)
        return training_plots(self.curves, self.arms, arms, self.steps_range, self.J_range, self.seeds_range)

    def section(self, sliders: pn.Row, card: PredictionCard) -> pn.Column:
        """The page's training section: what it trains, the page's `sliders`, the job, the question `card` and,
        once it is answered, the plots and the table."""
        return pn.Column(
            pn.pane.Markdown(TRAINING_NOTE, sizing_mode="stretch_width", margin=(0, 10)),
            sliders,
            self.job,
            card,
            card.guard(self.plots, self.table, note="where the seeds end up"),
            sizing_mode="stretch_width",
        )
