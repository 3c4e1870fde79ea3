"""The group-baselines page's figures: each estimator's mean update and variance per prompt, and J against steps.

Each figure draws from ColumnDataSources the page fills; the page replaces their data and never rebuilds a
figure. The functions after them turn the engine's results (engines.group_baselines: GroupExact, GroupTraining)
into those sources' columns, numpy in and dicts out.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, FactorRange, Legend, LegendItem
from bokeh.transform import factor_cmap

from engines.group_baselines import ESTIMATORS, GroupExact, GroupTraining
from widgets.style import OKABE_ITO, plot

PROMPTS = ("prompt 1", "prompt 2")
"""The two prompts' names on the bars' axis."""
PROMPT_COLOURS = (OKABE_ITO["blue"], OKABE_ITO["orange"])
"""Prompt 1's bars in blue, prompt 2's in orange."""
COLOURS = dict(zip(ESTIMATORS, (OKABE_ITO["grey"], OKABE_ITO["green"], OKABE_ITO["blue"], OKABE_ITO["vermillion"],
                                OKABE_ITO["purple"])))
"""One colour per estimator on the training plot."""
TRAINING_COLUMNS = ("step", *ESTIMATORS)
"""The training plot's columns: the step and each estimator's mean J."""
FACTORS = [(label, prompt) for label in ESTIMATORS.values() for prompt in PROMPTS]
"""The bars' categories: (estimator, prompt), estimators in ESTIMATORS's order."""


def bars_figure(bars: ColumnDataSource, y_label: str, column: str, true_marks: bool):
    """One bar per estimator and prompt of `column`; with `true_marks`, a black dash at each prompt's true gradient."""
    fig = plot("estimator", y_label, x_range=FactorRange(*FACTORS), height=340)
    bars_drawn = fig.vbar(x="x", top=column, source=bars, width=0.8, line_color=None,
                          fill_color=factor_cmap("x", list(PROMPT_COLOURS), list(PROMPTS), start=1, end=2))
    if true_marks:
        fig.scatter("x", "true", source=bars, marker="dash", size=26, line_width=3, color="black")
    # The estimators' names lie flat between the axis's group dividers (slanted, they crossed them); the prompts,
    # told apart by colour, are named in the legend rather than under every bar.
    fig.xaxis.major_label_text_font_size = "0pt"
    fig.xaxis.major_tick_line_color = None
    fig.xaxis.group_label_orientation = "horizontal"
    fig.xaxis.group_text_font_size = "8pt"
    items = [LegendItem(label=prompt, renderers=[bars_drawn], index=m) for m, prompt in enumerate(PROMPTS)]
    fig.add_layout(Legend(items=items, orientation="horizontal"), "below")
    return fig


def training_figure(curves: ColumnDataSource):
    """J against the step, one line per estimator (its mean over the seeds)."""
    fig = plot("training step", "J (share of right replies)", y_range=(0, 1.02), height=320)
    items = []
    for name, label in ESTIMATORS.items():
        line = fig.line("step", name, source=curves, line_color=COLOURS[name], line_width=2,
                        line_dash=[6, 3] if name == "dr_grpo" else "solid")
        items.append(LegendItem(label=label, renderers=[line]))
    fig.add_layout(Legend(items=items, location="bottom_right"))  # inside: below the plot it took half its height
    return fig


# --- the plots' columns, from the engine's results --------------------------------------


def bar_columns(ex: GroupExact) -> dict:
    """One row per (estimator, prompt): E[g_m], Var[g_m], the true gradient, E[g_m] / true, for the first two prompts."""
    E, M = ex.expected.shape
    return {
        "x": [(ESTIMATORS[name], PROMPTS[m]) for name in ex.estimators for m in range(M)],
        "expected": ex.expected.ravel(),
        "variance": ex.variance.ravel(),
        "true": np.tile(ex.true_gradient, E),
        "ratio": ex.ratio.ravel(),
    }


def training_columns(run: GroupTraining) -> dict:
    """The training plot's columns: the step, and each estimator's mean J over the seeds at that step."""
    return {"step": run.steps, **{name: run.J[e] for e, name in enumerate(ESTIMATORS)}}


def exact_metrics(ex: GroupExact) -> dict:
    """The metric row's numbers: each prompt's no-signal share, GRPO's mean over the true gradient, GRPO's angle."""
    grpo = ex.estimators.index("grpo")
    return {"no_signal_easy": ex.no_signal[0], "no_signal_hard": ex.no_signal[1],
            "grpo_easy": ex.ratio[grpo, 0], "grpo_hard": ex.ratio[grpo, 1], "grpo_angle": ex.angle[grpo]}
