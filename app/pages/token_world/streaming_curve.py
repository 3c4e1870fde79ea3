"""A line plot fed by a job: the common case of a JobView, for a training curve that grows as it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property

import panel as pn
import param
from bokeh.models import ColumnDataSource

from widgets.downloads import plot_with_downloads
from widgets.job_view import JobView
from widgets.style import OKABE_ITO, plot


class StreamingCurve(pn.viewable.Viewer):
    """A line plot fed by a streaming run, with Start/Stop, progress and an optional seed.

    `to_data(snapshot)` returns the plot's columns (`x` and every key of `lines`);
    `lines` maps a column to its legend label; `steps()` makes a fresh generator;
    `progress(snapshot)` gives the fraction done, 0 to 1; `time_limit` is the run's (StreamingRun).
    """

    data = param.Dict(default={}, doc="The columns last drawn, by name.")

    def __init__(
        self,
        steps: Callable[[], Iterator],
        to_data: Callable[[object], dict],
        x: str,
        lines: dict[str, str],
        x_label: str,
        y_label: str,
        progress: Callable[[object], float] | None = None,
        seed: param.Integer | None = None,
        y_range: tuple[float, float] | None = None,
        name: str = "curve",
        time_limit: float | None = None,
        **params,
    ):
        super().__init__(**params)
        self.steps, self.to_data, self.progress_of = steps, to_data, progress
        self.source = ColumnDataSource({x: [], **{col: [] for col in lines}}, name=name)
        self._plot = (x, lines, x_label, y_label, y_range, name)
        self.job = JobView(self._apply, self.start, seed=seed, time_limit=time_limit)
        self.run, self.controls = self.job.run, self.job.controls

    @cached_property
    def figure(self):
        """The plot, built when the curve is first shown (a page section not opened yet costs no figure)."""
        x, lines, x_label, y_label, y_range, _ = self._plot
        fig = plot(x_label, y_label, y_range=y_range)
        for col, colour in zip(lines, OKABE_ITO.values()):
            fig.line(x, col, source=self.source, color=colour, line_width=2, legend_label=lines[col])
        fig.legend.location = "bottom_right"
        return fig

    @cached_property
    def _layout(self) -> pn.Column:
        name = self._plot[-1]
        return pn.Column(self.job.view(), plot_with_downloads(self.figure, {name: self.source}), sizing_mode="stretch_width")

    def start(self) -> None:
        """Start a fresh run, replacing any run under way (a newer setting cancels stale work)."""
        self.job.start(self.steps)

    def stop(self) -> None:
        self.job.stop()

    def _apply(self, snapshot) -> None:
        data = self.to_data(snapshot)
        self.source.data = data
        self.data = data
        if self.progress_of is not None:
            self.controls.progress = min(max(float(self.progress_of(snapshot)), 0.0), 1.0)

    def __panel__(self):
        return self._layout
