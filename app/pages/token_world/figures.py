"""The token-world page's figures: the heat map of the exact values V(t, k), the three panels of GAE's error against lambda
and the live training curves; and the pure functions that turn the engines' results into their columns.

Each figure draws from ColumnDataSources the page fills with those columns; the page replaces their data and moves
the axes, titles and rules (`show_heat_axes`, `show_lambda_axes`), and never rebuilds a figure.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import row
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

from app.pages.token_world.text import EPISODE_TAB
from engines.token_world_training import training_methods
from widgets.style import OKABE_ITO, plot

CRITICS = ("exact", "slight", "chosen")
"""The three panels' critics: the exact V, V + 0.05 z, V + (the slider's noise) z."""
SLIGHT_NOISE = 0.05
"""The seed's middle critic: exact V plus noise of sd 0.05."""
LABELLED_T = 10
"""Up to this T the heat map writes each value in its cell."""


def critic_columns(noises: np.ndarray, noise: float) -> tuple[int, int, int]:
    """Columns of a decomposition for the three panels: exact V, V + 0.05 z, V + noise z.

    The engine lists the exact V first and drops zero noises, so a chosen noise of 0 is the exact V.
    """
    chosen = np.flatnonzero(noises == noise)
    return 0, int(np.flatnonzero(noises == SLIGHT_NOISE)[0]), int(chosen[-1]) if len(chosen) else 0


def decomposition_columns(d, noise: float = 0.0) -> dict:
    """A decomposition as plot columns: lam, then bias2_/variance_/total_ for each of CRITICS.

    The three panels' critics are the decomposition's columns `critic_columns(d.critic_noises, noise)`,
    `noise` being the slider's; `d` None gives the empty columns.
    """
    columns = (None,) * len(CRITICS) if d is None else critic_columns(d.critic_noises, noise)
    data = {"lam": [] if d is None else d.lambdas}
    for critic, j in zip(CRITICS, columns):
        for name in ("bias2", "variance", "total"):
            data[f"{name}_{critic}"] = [] if d is None else getattr(d, name)[:, j]
    return data


def monte_carlo_gap(sampled, exact, noise: float) -> float:
    """The largest gap between the Monte Carlo and the exact total error over the three panels' critics and every λ."""
    columns = list(critic_columns(exact.critic_noises, noise))
    return float(np.abs(sampled.total[:, columns] - exact.total[:, columns]).max())


def start_readings(values) -> dict:
    """The readings under the sliders from the exact tables (engines.token_world.token_values): V, Q and A at the start."""
    return {"V": values.V[0, 0], "QA": values.Q[0, 0, 1], "QB": values.Q[0, 0, 0], "AA": values.A[0, 0, 1], "AB": values.A[0, 0, 0]}


def episode_path(e) -> dict:
    """The episode's path over the heat map: the state (t, k) at each of its tokens."""
    return {"t": np.arange(len(e.k)), "k": e.k}


def episode_columns(e) -> dict:
    """One episode (engines.token_world.one_episode) as table columns, a row per token: the CSV download of the episode."""
    return {
        "t": np.arange(len(e.tokens)), "k": e.k, "token": ["A" if a else "B" for a in e.tokens], "r": e.r, "V": e.V,
        "V_next": e.V_next, "delta": e.delta, "gae": e.gae, "exact_A": e.exact_A, "monte_carlo": e.monte_carlo,
    }


def value_cells(V: np.ndarray) -> dict:
    """The heat map's columns from the (T, T + 1) table V(t, k): t, k, V and the label, of the reachable states k <= t only.

    Up to LABELLED_T every cell's label is its value to two places, else blank (too many cells to read).
    """
    t, k = np.nonzero(np.tri(*V.shape, dtype=bool))
    values = V[t, k]
    labelled = len(V) <= LABELLED_T
    return {"t": t, "k": k, "V": values, "label": [f"{x:.2f}" for x in values] if labelled else [""] * len(values)}


def heat_map(cells: ColumnDataSource, path: ColumnDataSource):
    """V(t, k) of every reachable state as a coloured cell (its value written in it while `cells` has labels), the episode's path over it."""
    fig = plot("position t (tokens written)", "A's so far k", x_range=(-0.5, 0.5), y_range=(-0.5, 0.5), height=380)
    mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0)
    rects = fig.rect("t", "k", width=1, height=1, source=cells, fill_color={"field": "V", "transform": mapper}, line_color=None)
    fig.line("t", "k", source=path, line_color=OKABE_ITO["vermillion"], line_width=3, line_alpha=0.8, legend_label=f"the episode (tab “{EPISODE_TAB}”)")
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


LAMBDA_PANEL_MIN_WIDTH = 260
"""The narrowest a λ panel is drawn, its legend inside it: where three do not fit side by side they wrap onto rows
(every Bokeh row wraps: assets/page.html)."""


def lambda_panels(curves: ColumnDataSource, mc: ColumnDataSource, at_lam: ColumnDataSource):
    """The seed's three panels side by side where they fit (else wrapped onto rows, the slider's critic widest), one
    y range shared.

    Each panel draws one critic's bias², variance and total error against λ (exact lines, Monte
    Carlo circles, diamonds at the chosen λ, whose dashed rule `show_lambda_axes` moves).
    Returns the grid, the three figures and their rules.
    """
    y_range = DataRange1d(start=0.0)
    colours = {"bias2": OKABE_ITO["vermillion"], "variance": OKABE_ITO["blue"], "total": OKABE_ITO["green"]}
    names = {"bias2": "bias²", "variance": "variance", "total": "total error"}
    figs, rules = [], []
    for i, critic in enumerate(CRITICS):
        fig = plot("GAE λ", "squared error (value units²)" if i == 0 else "", x_range=(-0.02, 1.02), y_range=y_range, height=300,
                   min_width=LAMBDA_PANEL_MIN_WIDTH)
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
    figs[0].title.text, figs[1].title.text = "exact V", f"V + noise {SLIGHT_NOISE:.2f}"
    # A row, not a gridplot: a gridplot added to a tab after the page was drawn stays blank (bokeh/bokeh#13384),
    # and this section is built when its tab is first opened (widgets/sections.py).
    return row(figs, sizing_mode="stretch_width"), figs, rules


def show_lambda_axes(panels: list, rules: list, noise: float, lam: float) -> None:
    """The third panel's title names the slider's noise; the dashed rule marks the chosen λ."""
    panels[2].title.text = f"V + noise {noise:.2f} (the slider)"
    for rule in rules:
        rule.location = lam


def training_columns(lambdas) -> tuple[str, ...]:
    """Column names of the training curves' data, one per row of `training_methods(lambdas)`."""
    return ("none", "loo") + tuple(f"gae_{lam:g}" for lam in lambdas)


def training_curve_data(success: np.ndarray, lambdas) -> dict:
    """The curves' columns from a run's success probabilities (method, update, seed): each method's mean over the seeds."""
    return {"update": np.arange(success.shape[1])} | dict(zip(training_columns(lambdas), success.mean(-1)))


def training_progress(success: np.ndarray, steps: int) -> float:
    """The fraction of a run's `steps` updates done, from its success probabilities (method, update 0 to done, seed)."""
    return (success.shape[1] - 1) / steps


def training_figure(curves: ColumnDataSource, lambdas):
    """The live training curves: each method of `training_methods(lambdas)`, its success probability (mean over
    seeds) against the policy update, drawn from `curves` (`training_curve_data`'s columns) as a run streams them."""
    fig = plot("policy update", "success probability, mean over seeds", y_range=(0.0, 1.02))
    for column, label, colour in zip(training_columns(lambdas), training_methods(lambdas), OKABE_ITO.values()):
        fig.line("update", column, source=curves, color=colour, line_width=2, legend_label=label)
    fig.legend.location = "bottom_right"
    return fig
