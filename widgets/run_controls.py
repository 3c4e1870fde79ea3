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


PROGRESS_CSS = """
.fl-run-progress { display: flex; align-items: center; gap: 0.4em; font-size: 0.9em; white-space: nowrap; }
.fl-run-progress progress { flex: 1; min-width: 0; height: 1em; }
"""
"""The bar fills the row's width beside its percentage."""


def show_enabled(button: pn.widgets.Button, enabled: bool, color: str) -> None:
    """Enable `button` in its action's `color`, or disable it in the plain one: a disabled button never looks like
    the main action (a solid blue Resume before any run)."""
    button.param.update(disabled=not enabled, color=color if enabled else "default")


def progress_html(fraction: float) -> str:
    """The run's progress bar with its name for screen readers and its percentage beside it, shown and as a title."""
    percent = round(100 * fraction)
    label = f"Run progress: {percent} %"
    return (f'<div class="fl-run-progress" title="{label}"><progress aria-label="Run progress" max="1000" '
            f'value="{int(round(1000 * fraction))}"></progress> <span aria-hidden="true">{percent} %</span></div>')


class RunControls(pn.viewable.Viewer):
    """Start and Stop buttons and a progress bar; the page supplies what starting and stopping do."""

    running = param.Boolean(default=False, doc="Whether a run is under way.")
    progress = param.Number(default=0.0, bounds=(0.0, 1.0), doc="Fraction of the run done, 0 to 1.")

    def __init__(self, on_start: Callable[[], None], on_stop: Callable[[], None], seed: param.Integer | None = None, **params):
        super().__init__(**params)
        self.start_button = pn.widgets.Button(label="Start", color="success", width=90)
        self.stop_button = pn.widgets.Button(label="Stop", color="default", width=90, disabled=True)
        self.start_button.on_click(lambda _event: on_start())
        self.stop_button.on_click(lambda _event: on_stop())
        self.bar = pn.pane.HTML(progress_html(0.0), width=220, align="center", margin=(5, 10), stylesheets=[PROGRESS_CSS])
        parts = [self.start_button, self.stop_button, self.bar]
        self._layout = pn.Row(*parts, *([seed_control(seed)] if seed is not None else []))

    @param.depends("running", watch=True)
    def _show_running(self):
        show_enabled(self.start_button, not self.running, "success")
        show_enabled(self.stop_button, self.running, "danger")

    @param.depends("progress", watch=True)
    def _show_progress(self):
        self.bar.object = progress_html(self.progress)

    def __panel__(self):
        return self._layout
