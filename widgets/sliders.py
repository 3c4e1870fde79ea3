"""Sliders bound to a page's parameters, tuned for drag latency, and labelled button groups."""

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


def labelled_buttons(parameter: param.Selector) -> pn.Column:
    """A RadioButtonGroup bound to `parameter`, under its label (button groups draw no title of their own)."""
    buttons = pn.widgets.RadioButtonGroup.from_param(parameter)
    return pn.Column(pn.pane.Markdown(buttons.name, margin=(0, 10, -10, 10)), buttons, align="end")
