"""Sliders bound to a page's parameters, tuned for drag latency."""

from __future__ import annotations

import panel as pn
import param

DEBOUNCE_MS = 5
"""Panel waits 50 ms after a browser change before handling it (to coalesce bursts); a page's
update takes under 10 ms, so a short wait keeps a drag's redraw well under the 150 ms goal."""


def slider(parameter: param.Number, **kwargs) -> pn.widgets.Widget:
    """A FloatSlider (IntSlider for an Integer) bound to `parameter`, its bounds and step."""
    cls = pn.widgets.IntSlider if isinstance(parameter, param.Integer) else pn.widgets.FloatSlider
    widget = cls.from_param(parameter, **kwargs)
    widget._debounce = DEBOUNCE_MS  # Panel's per-widget delay (a class attribute, default 50 ms)
    return widget
