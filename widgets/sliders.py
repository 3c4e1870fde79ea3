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


class CappedSlider:
    """The slider of an integer parameter kept at most another's value (a threshold at most T).

    The slider ends at the cap, and a value above it, from code or a link, is clamped with a
    notice (an Alert the page places) that says so in `sentence` (formatted with `value` and
    `cap`). The page calls `apply` when either parameter changes and, while `clamping`, ignores
    the clamp's own event: the update under way draws it.
    """

    def __init__(self, value: param.Integer, cap: param.Integer, sentence: str, **kwargs):
        self.owner, self.name, self.cap, self.sentence = value.owner, value.name, cap.name, sentence
        self.slider = slider(value, **kwargs)
        self.notice = pn.pane.Alert(alert_type="info", sizing_mode="stretch_width", visible=False)
        self.clamping = False

    def apply(self) -> bool:
        """Clamp the value to the cap, show the notice if it moved (hide it if not), end the slider at the cap. True if it moved."""
        value, cap = getattr(self.owner, self.name), getattr(self.owner, self.cap)
        moved = value > cap
        if moved:
            self.notice.object = self.sentence.format(value=value, cap=cap)
            self.clamping = True
            try:
                setattr(self.owner, self.name, cap)
            finally:
                self.clamping = False
        self.notice.visible = moved
        self.slider.end = cap
        return moved
