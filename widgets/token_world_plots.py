"""The token-world page's figures: the heat map of the exact values V(t, k) and the three panels of GAE's error against lambda.

Each function draws from ColumnDataSources the page fills; the page replaces their data and moves
the axes, titles and rules (`show_heat_axes`, `show_lambda_axes`), and never rebuilds a figure.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import gridplot
from bokeh.models import (
    ColorBar,
    ColumnDataSource,
    DataRange1d,
    HoverTool,
    Legend,
    LegendItem,
    LinearColorMapper,
    Span,
)
from bokeh.palettes import Viridis256

from widgets.style import OKABE_ITO, plot

CRITICS = ("exact", "slight", "chosen")
"""The three panels' critics: the exact V, V + 0.05 z, V + (the slider's noise) z."""


def decomposition_columns(d, columns) -> dict:
    """A decomposition as plot columns: lam, then bias2_/variance_/total_ for each of CRITICS.

    `columns` are the decomposition's critic columns of the three panels (`critic_columns`);
    `d` None gives the empty columns.
    """
    data = {"lam": [] if d is None else d.lambdas}
    for critic, j in zip(CRITICS, columns or (None,) * len(CRITICS)):
        for name in ("bias2", "variance", "total"):
            data[f"{name}_{critic}"] = [] if d is None else getattr(d, name)[:, j]
    return data


def value_cells(V: np.ndarray, labelled: bool) -> dict:
    """The heat map's columns from the (T, T + 1) table V(t, k): t, k, V and the label, of the reachable states k <= t only.

    With `labelled` every cell's label is its value to two places, else blank (too many cells to read).
    """
    t, k = np.nonzero(np.tri(*V.shape, dtype=bool))
    values = V[t, k]
    return {"t": t, "k": k, "V": values, "label": [f"{x:.2f}" for x in values] if labelled else [""] * len(values)}


def heat_map(cells: ColumnDataSource, path: ColumnDataSource):
    """V(t, k) of every reachable state as a coloured cell (its value written in it while `cells` has labels), the episode's path over it."""
    fig = plot("position t (tokens written)", "A's so far k", x_range=(-0.5, 0.5), y_range=(-0.5, 0.5), height=380)
    mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0)
    rects = fig.rect("t", "k", width=1, height=1, source=cells, fill_color={"field": "V", "transform": mapper}, line_color=None)
    fig.line("t", "k", source=path, line_color=OKABE_ITO["vermillion"], line_width=3, line_alpha=0.8, legend_label="the episode below")
    fig.scatter("t", "k", source=path, color=OKABE_ITO["vermillion"], size=7)
    # One text colour on a light box reads on every cell colour (a per-cell colour column breaks
    # BokehJS 3.9's text glyph when the number of cells changes).
    fig.text(
        "t", "k", text="label", source=cells, text_align="center", text_baseline="bottom", y_offset=-4,
        text_font_size="9pt", text_color="#000000", background_fill_color="#ffffff", background_fill_alpha=0.7, padding=1,
    )
    fig.legend.location = "top_left"
    fig.add_tools(HoverTool(renderers=[rects], tooltips=[("state", "(@t, @k)"), ("V", "@V{0.0000}")]))
    fig.add_layout(ColorBar(color_mapper=mapper, title="V(t, k)", width=12), "right")
    fig.xgrid.visible = fig.ygrid.visible = False
    return fig


def show_heat_axes(fig, T: int, p_a: float, threshold: int) -> None:
    """The heat map's axes fit T and its title states the formula with the current P(A) and threshold."""
    for r in (fig.x_range, fig.y_range):
        r.start, r.end = -0.5, T - 0.5
    fig.title.text = f"Exact V(t, k) = γ^(T−1−t) · P[k + Binomial(T − t, {p_a:.2f}) ≥ {threshold}]"


def lambda_panels(curves: ColumnDataSource, mc: ColumnDataSource, at_lam: ColumnDataSource, slight_noise: float):
    """The seed's three panels side by side, one toolbar (its save tool saves all three), one y axis.

    Each panel draws one critic's bias², variance and total error against λ (exact lines, Monte
    Carlo circles, diamonds at the chosen λ, whose dashed rule `show_lambda_axes` moves).
    Returns the grid, the three figures and their rules.
    """
    y_range = DataRange1d(start=0.0)
    colours = {"bias2": OKABE_ITO["vermillion"], "variance": OKABE_ITO["blue"], "total": OKABE_ITO["green"]}
    names = {"bias2": "bias²", "variance": "variance", "total": "total error"}
    figs, rules = [], []
    for i, critic in enumerate(CRITICS):
        fig = plot("GAE λ", "squared error (value units²)" if i == 0 else "", x_range=(-0.02, 1.02), y_range=y_range, height=300)
        items = []
        for column, colour in colours.items():
            line = fig.line("lam", f"{column}_{critic}", source=curves, color=colour, line_width=2)
            dots = fig.scatter("lam", f"{column}_{critic}", source=mc, fill_color=None, line_color=colour, size=9, line_width=2)
            items.append(LegendItem(label=names[column], renderers=[line]))
        items.append(LegendItem(label="Monte Carlo check", renderers=[dots]))
        items.append(LegendItem(label="the chosen λ", renderers=[fig.scatter("lam", f"total_{critic}", source=at_lam, color=colour, size=12, marker="diamond")]))
        rule = Span(dimension="height", line_color=OKABE_ITO["grey"], line_dash=[4, 3], line_width=1.5)
        fig.add_layout(rule)
        rules.append(rule)
        if i == 0:
            fig.add_layout(Legend(items=items, location="top_left"))
        figs.append(fig)
    figs[0].title.text, figs[1].title.text = "exact V", f"V + noise {slight_noise:.2f}"
    return gridplot([figs], sizing_mode="stretch_width", merge_tools=True, toolbar_location="right"), figs, rules


def show_lambda_axes(panels: list, rules: list, noise: float, lam: float) -> None:
    """The third panel's title names the slider's noise; the dashed rule marks the chosen λ."""
    panels[2].title.text = f"V + noise {noise:.2f} (the slider)"
    for rule in rules:
        rule.location = lam
