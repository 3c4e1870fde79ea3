"""The group-baselines page's long job, one `JobView` with what it draws: the two prompts' logits trained with each
estimator over seeds (engines/group_baselines.py), J against steps, on a worker thread of the web process under the
server's compute seconds. The page owns the controls and hands the job a function that reads its settings."""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.group_baselines.figures import TRAINING_COLUMNS, training_columns, training_figure
from app.pages.group_baselines.text import TRAINING_TITLE, training_text
from engines.group_baselines import GroupBaselinesSettings, GroupTraining, train
from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView
from widgets.updates import one_update


class GroupTrainingRuns:
    """Every estimator trained on the same seeds with `settings()`; the mean J of each as a curve and a line of each
    one's J at the end."""

    def __init__(self, settings: Callable[[], GroupBaselinesSettings], seed: param.Integer, time_limit: float):
        self.settings = settings
        self.curves = ColumnDataSource({k: [] for k in TRAINING_COLUMNS}, name="training")
        self.line = pn.pane.HTML(sizing_mode="stretch_width")
        self.job = JobView(self._apply, self.start, seed=seed, time_limit=time_limit)

    def start(self) -> None:
        """Train every estimator over the seeds afresh; a run under way is cancelled."""
        settings = self.settings()
        self.job.start(lambda: train(settings, chunk=10))

    def _apply(self, run: GroupTraining) -> None:
        steps = self.settings().steps
        self.job.controls.progress = (len(run.steps) - 1) / steps
        with one_update():
            self.curves.data = training_columns(run)
            self.line.object = training_text(run, steps)

    def view(self, *controls: pn.viewable.Viewable) -> pn.Column:
        """The section: the job with `controls` (the page's inputs of the training) beside it, the curves, the line."""
        return pn.Column(
            self.job.view(*controls),
            plot_with_downloads(training_figure(self.curves), {"training": self.curves}, TRAINING_TITLE),
            self.line,
            sizing_mode="stretch_width",
        )
