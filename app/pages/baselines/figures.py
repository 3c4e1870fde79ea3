"""The baselines page's figure, and the columns it draws: the two possible estimates against b, their mean, the point at b.

The figure draws from ColumnDataSources the page fills and from a rule (a Span) the page moves; the page
replaces their data with the columns made here and never rebuilds the figure.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, Legend, LegendItem, Span

from engines.two_action import R1, R2, two_action_estimates
from widgets.style import OKABE_ITO, plot

B_GRID = np.arange(151) / 10
"""The demo's b axis: 0 to 15 in steps of 0.1, 151 points."""
LINES = {
    "g1": ("estimate if action 1 is sampled", OKABE_ITO["blue"]),
    "g2": ("estimate if action 2 is sampled", OKABE_ITO["orange"]),
    "mean": ("mean of the estimate (the true gradient)", OKABE_ITO["green"]),
}
"""The three lines, as the seed's demo names and colours them: column, legend label, colour."""


def line_columns(p: float) -> dict[str, np.ndarray]:
    """The lines over B_GRID at policy p: the estimate if action 1 or 2 is sampled, and their mean, (151,) each."""
    s = two_action_estimates(p, B_GRID, R1, R2)
    return {"b": B_GRID, "g1": s.g1, "g2": s.g2, "mean": s.mean}


def point_columns(p: float, b: float) -> tuple[dict[str, list], dict[str, list]]:
    """The two dots at the current b (one per action, in its line's colour) and the point where the lines cross."""
    s = two_action_estimates(p, b, R1, R2)
    dots = {"b": [b, b], "g": [float(s.g1), float(s.g2)], "colour": [LINES["g1"][1], LINES["g2"][1]]}
    return dots, {"b": [float(s.cross)], "g": [float(s.mean)]}


def estimates_figure(lines: ColumnDataSource, dots: ColumnDataSource, cross: ColumnDataSource, b: float):
    """The figure of the lines, the dots and the crossing, and the dashed rule at b that the page moves."""
    fig = plot("baseline b (reward units)", "estimate ĝ (reward per unit θ)", x_range=(0, 15), y_range=(-10, 11), height=380)
    fig.add_layout(Span(location=0, dimension="width", line_color=OKABE_ITO["grey"], line_width=1))
    rule = Span(location=b, dimension="height", line_color=OKABE_ITO["grey"], line_dash=[4, 3], line_width=1.5)
    fig.add_layout(rule)
    items = []
    for column, (label, colour) in LINES.items():
        line = fig.line("b", column, source=lines, line_color=colour, line_width=2)
        items.append(LegendItem(label=label, renderers=[line]))
    fig.scatter("b", "g", source=dots, color="colour", size=10)
    crossing = fig.scatter("b", "g", source=cross, marker="diamond", size=14, color=OKABE_ITO["vermillion"])
    items.append(LegendItem(label="where the lines cross", renderers=[crossing]))
    fig.add_layout(Legend(items=items, orientation="vertical"), "below")  # one column: two ran past a phone's width
    return fig, rule
