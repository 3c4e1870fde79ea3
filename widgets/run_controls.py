"""Controls of a random experiment: the seed with a "New seed" button; start, stop and progress."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import panel as pn
import param


def seed_control(seed: param.Integer) -> pn.Row:
    """An input bound to the page's `seed` parameter and a button that draws a fresh one.

    The seed stays a parameter of the page, so it is in the URL like every other control. Its label says what
    it seeds; the parameter's doc (a settings field's docstring, widgets/settings_controls.py) makes no tooltip.
    """
    owner, name = seed.owner, seed.name
    high = (seed.bounds or (0, 999_999))[1] or 999_999
    button = pn.widgets.Button(label="New seed", color="primary", width=100, align="end")
    button.on_click(lambda _event: setattr(owner, name, secrets.randbelow(min(high, 999_999) + 1)))
    return pn.Row(pn.widgets.IntInput.from_param(seed, width=140, description=None), button)


class RunControls(pn.viewable.Viewer):
    """Start and Stop buttons and a progress bar; the page supplies what starting and stopping do."""

    running = param.Boolean(default=False, doc="Whether a run is under way.")
    progress = param.Number(default=0.0, bounds=(0.0, 1.0), doc="Fraction of the run done, 0 to 1.")

    def __init__(self, on_start: Callable[[], None], on_stop: Callable[[], None], seed: param.Integer | None = None, **params):
        super().__init__(**params)
        self.start_button = pn.widgets.Button(label="Start", color="success", width=90)
        self.stop_button = pn.widgets.Button(label="Stop", color="danger", width=90, disabled=True)
        self.start_button.on_click(lambda _event: on_start())
        self.stop_button.on_click(lambda _event: on_stop())
        self.bar = pn.indicators.Progress(value=0, max=1000, width=220, align="center")
        parts = [self.start_button, self.stop_button, self.bar]
        self._layout = pn.Row(*parts, *([seed_control(seed)] if seed is not None else []))

    @param.depends("running", watch=True)
    def _show_running(self):
        self.start_button.disabled = self.running
        self.stop_button.disabled = not self.running

    @param.depends("progress", watch=True)
    def _show_progress(self):
        self.bar.value = int(round(1000 * self.progress))

    def __panel__(self):
        return self._layout
