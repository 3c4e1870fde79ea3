"""Shared look of every plot: the Okabe-Ito palette, axis labels with units, the save tool.

Okabe and Ito's eight colours stay distinguishable under the common colour-vision
deficiencies; every page draws its lines from this palette in this order.
"""

from __future__ import annotations

from bokeh.models import Range1d
from bokeh.plotting import figure

OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "grey": "#999999",
}
"""Okabe-Ito colours by name (grey stands in for their black, so it shows on a dark theme)."""

TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
"""Every plot keeps Bokeh's save tool: the toolbar's disk icon downloads it as a PNG."""


def plot(x_label: str, y_label: str, *, x_range=None, y_range=None, height: int = 340, **kwargs):
    """A Bokeh figure with labelled axes (units in the label), the shared tools, stretching wide.

    `x_range`/`y_range` given as (low, high) become fixed ranges, so the axes do not
    jump while a slider moves.
    """
    if isinstance(x_range, tuple):
        x_range = Range1d(*x_range)
    if isinstance(y_range, tuple):
        y_range = Range1d(*y_range)
    ranges = {k: v for k, v in (("x_range", x_range), ("y_range", y_range)) if v is not None}
    fig = figure(
        height=height,
        sizing_mode="stretch_width",
        tools=TOOLS,
        toolbar_location="right",
        x_axis_label=x_label,
        y_axis_label=y_label,
        **ranges,
        **kwargs,
    )
    fig.toolbar.logo = None
    return fig
