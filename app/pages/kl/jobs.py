"""The KL page's long job, one `JobView` with what it draws: the language model's reward-KL frontier, sampled and
scored on the cluster (seed 000 section 6.12: pi* on m sampled replies per prompt), with the live runs' held-out
(KL, reward) paths over it.

The sampling is a model job (app.jobs.model_jobs.frontier_views). The page owns the controls (they are in its
link) and hands the job functions that read the source, M, m and the seed from them.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d, Span

from app.jobs.cluster import Cluster
from app.jobs.model_jobs import FrontierView, frontier_views, run_source
from app.pages.kl import text
from app.pages.kl.figures import frontier_columns, lm_figure, lm_view_end, run_columns
from app.serving.offered import current as current_offer
from app.serving.offered import source_problem
from engines.kl_optimal import SampledFrontier
from engines.lm.settings import LMFrontierSettings
from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView


class SampledFrontierJob:
    """The sampled frontier of `source()` (a run's model, reward and replies) with `settings()`'s M prompts, m replies
    and seed; the runs of that source (`runs`, app.jobs.runs.Run) drawn over it, and a sentence on how far to trust it.

    `ceiling_rule` is the page's Span at log m, made with the page's other moving rules."""

    def __init__(self, source: Callable[[], dict], settings: Callable[[], LMFrontierSettings], runs: list, cluster: Cluster,
                 ceiling_rule: Span, seed: param.Integer):
        self.source, self.settings, self.runs, self.cluster, self.ceiling_rule = source, settings, runs, cluster, ceiling_rule
        self.frontier: SampledFrontier | None = None
        self.x_range = Range1d(0, 1)
        self.curve = ColumnDataSource(frontier_columns(None), name="sampled_frontier")
        self.paths = ColumnDataSource(name="run_paths")
        self.points = ColumnDataSource(name="run_evaluations")
        self.status = pn.pane.HTML(text.FIRST_START, sizing_mode="stretch_width", css_classes=["fl-lm-status"])
        self.approx = pn.pane.HTML(sizing_mode="stretch_width")
        self.summary = pn.pane.HTML(sizing_mode="stretch_width")
        # A job that ends on a failure (no model, no reward) leaves its progress where it was.
        self.job = JobView(self._show, self.start, seed=seed, completed=lambda: self.frontier is not None, on_done=self._done)

    def changed(self) -> None:
        """A frontier belongs to one model, reward and sample: a new setting drops the old one."""
        self.job.stop()
        self.frontier = None
        self.curve.data = frontier_columns(None)
        self.ceiling_rule.visible = False
        self.job.fail("")
        self.status.object = text.NEW_START
        self.draw_runs()

    def start(self) -> None:
        """Sample and score on the cluster; the plot fills in prompt batch by prompt batch."""
        source = self.source()
        problem = source_problem(source["model"], source["reward"], current_offer())  # a link names only a run's source
        if problem:
            self.job.fail(problem)
            self.status.object = text.START_AGAIN
            return
        self.status.object = text.LOADING
        settings = self.settings()
        self.job.start(lambda: frontier_views(source, settings.prompts, settings.samples, settings.seed, self.cluster))

    def _done(self, finished: bool) -> None:
        if self.job.failed:
            self.status.object = text.START_AGAIN

    def _show(self, view: FrontierView) -> None:
        if view.frontier is None:
            self.status.object = text.LOADING
            return
        f = self.frontier = view.frontier
        with pn.io.hold():
            self.curve.data = frontier_columns(f)
            self.ceiling_rule.update(location=f.ceiling, visible=True)
            self.job.controls.progress = view.done / view.total
            self.status.object = text.sampled_html(view)
            self.draw_runs()

    def draw_runs(self) -> None:
        """Each run of the chosen source: its (exact KL, reward) evaluations in order of step."""
        source, settings = self.source(), self.settings()
        paths, points = run_columns([r for r in self.runs if run_source(r) == source], self.frontier)
        self.paths.data, self.points.data = paths, points
        self.x_range.update(start=0.0, end=lm_view_end(points["kl"], settings.samples))
        self.approx.object = text.approximation_html(settings.samples, settings.prompts)
        self.summary.object = text.runs_summary_html(points, self.frontier, self.x_range.end)

    def view(self, controls: pn.viewable.Viewable) -> pn.Column:
        """The section: what it samples, `controls` (the page's inputs of the sampling), the job, the figure, the sentences."""
        return pn.Column(
            pn.pane.HTML(text.LIVE_INTRO, sizing_mode="stretch_width"),
            controls,
            self.job,
            self.status,
            plot_with_downloads(lm_figure(self.curve, self.paths, self.points, self.x_range, self.ceiling_rule),
                                {"sampled_frontier": self.curve, "run_evaluations": self.points}),
            self.summary,
            self.approx,
            sizing_mode="stretch_width",
        )
