"""The KL page's figures: pi_ref and pi* reply by reply, the reward-KL frontier, two replies, the live runs' frontier.

Each function draws from ColumnDataSources (and rules and ranges) the page makes and fills; the
page replaces their data and never rebuilds a figure. `run_columns` writes the live runs'
held-out evaluations as the last figure's paths and points.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, HoverTool, Range1d, Span
from bokeh.transform import dodge

from engines.kl_optimal import SampledFrontier, frontier_reward_at
from widgets.style import OKABE_ITO, plot

RUN_COLOURS = [c for name, c in OKABE_ITO.items() if name != "blue"]
"""One colour per run drawn on the sampled frontier (blue is the frontier's)."""


def distribution_figures(rewards: ColumnDataSource, dist: ColumnDataSource):
    """Reward, π_ref and π* of every reply, sorted by reward: three panels sharing one x axis.

    `rewards` holds each reply's rank and reward (filled before this is called: its length sets the axis).
    """
    ranks = Range1d(-1, len(rewards.data["rank"]))
    rewards_fig = plot("", "reward r(y)", x_range=ranks, y_range=(-1.1, 1.1), height=130)
    rewards_fig.step("rank", "r", source=rewards, mode="center", color=OKABE_ITO["green"], line_width=2)
    rewards_fig.xaxis.visible = False
    hover = [("reply", "@reply"), ("reward", "@r{0.000}"), ("π_ref", "@ref{0.00000}"), ("π*", "@pi{0.00000}")]
    axis = "the 216 replies, sorted by reward (low to high)"
    ref = plot("", "π_ref(y)", x_range=ranks, y_range=DataRange1d(start=0), height=180)
    ref.vbar("rank", top="ref", width=0.8, source=dist, color=OKABE_ITO["blue"])
    ref.xaxis.visible = False
    pi = plot(axis, "π*(y) at this β", x_range=ranks, y_range=DataRange1d(start=0), height=220)
    pi.vbar("rank", top="pi", width=0.8, source=dist, color=OKABE_ITO["vermillion"])
    for fig in (ref, pi):
        fig.add_tools(HoverTool(tooltips=hover))
    return column(rewards_fig, ref, pi, sizing_mode="stretch_width")


def frontier_figure(frontier: ColumnDataSource, current: ColumnDataSource, best_rule: Span):
    """E[r] over the KL as β sweeps, the current β a dot; `best_rule` marks the highest reward the reference reaches."""
    fig = plot("KL(π* ‖ π_ref) (nats)", "E[r] under π* (reward units)", x_range=(-0.2, 10.2), y_range=(-0.12, 1.08), height=420)
    fig.add_layout(best_rule)
    fig.line("kl", "reward", source=frontier, color=OKABE_ITO["blue"], line_width=2, legend_label="frontier: π* as β sweeps")
    fig.scatter("kl", "reward", source=current, color=OKABE_ITO["vermillion"], size=12, legend_label="π* at the current β")
    fig.legend.location = "bottom_right"
    fig.add_tools(HoverTool(tooltips=[("β", "@beta{0.0000}"), ("KL", "@kl{0.000} nats"), ("E[r]", "@reward{0.000}")]))
    return fig


def pair_figure(pair: ColumnDataSource, replies: tuple[str, str]):
    """π_ref and π* of two replies (named `replies`) side by side."""
    fig = plot("", "probability", x_range=FactorRange(*replies), y_range=(0, 1.05), height=220)
    fig.vbar(dodge("reply", -0.17, range=fig.x_range), top="ref", width=0.3, source=pair, color=OKABE_ITO["blue"], legend_label="π_ref")
    fig.vbar(dodge("reply", 0.17, range=fig.x_range), top="pi", width=0.3, source=pair, color=OKABE_ITO["vermillion"], legend_label="π* at this β")
    fig.legend.location = "top_right"
    fig.legend.orientation = "horizontal"
    return fig


def lm_figure(curve: ColumnDataSource, paths: ColumnDataSource, points: ColumnDataSource, x_range: Range1d, ceiling_rule: Span):
    """The sampled frontier of the language model, each run's evaluations over it; `ceiling_rule` at log m."""
    fig = plot("KL(π ‖ π_ref) per reply (nats)", "reward R (log-odds)", x_range=x_range, y_range=DataRange1d(), height=420)
    fig.add_layout(ceiling_rule)
    line = fig.line("kl", "reward", source=curve, color=OKABE_ITO["blue"], line_width=2.5,
                    legend_label="sampled frontier: π* on m replies per prompt")
    fig.multi_line("xs", "ys", source=paths, line_color="colour", line_width=1.6, line_alpha=0.8)
    dots = fig.scatter("kl", "reward", source=points, color="colour", size=8, line_color="white", legend_field="label")
    fig.legend.location = "bottom_right"
    fig.add_tools(HoverTool(renderers=[line], tooltips=[("β", "@beta{0.0000}"), ("KL", "@kl{0.000} nats"), ("E[R]", "@reward{0.000}")]))
    fig.add_tools(HoverTool(renderers=[dots], tooltips=[("run", "@run"), ("step", "@step"), ("KL", "@kl{0.00} nats"),
                                                         ("reward", "@reward{+0.000}"), ("frontier there", "@frontier_reward{+0.000}")]))
    return fig


def run_columns(runs: list, frontier: SampledFrontier | None) -> tuple[dict, dict]:
    """The paths and points of `runs` (app.jobs.runs.Run): their (exact KL, reward) evaluations in order of step, a colour
    each, and at each point the frontier's reward at its KL (NaN without a frontier)."""
    colours = [RUN_COLOURS[k % len(RUN_COLOURS)] for k in range(len(runs))]
    labels = [r.label for r in runs]
    evals = [[e for e in r.evals if "kl_exact" in e] for r in runs]
    paths = {"xs": [[e["kl_exact"] for e in ev] for ev in evals], "ys": [[e["reward"] for e in ev] for ev in evals],
             "colour": colours, "label": labels}
    flat = [(r.id, e, c, label) for r, ev, c, label in zip(runs, evals, colours, labels) for e in ev]
    kl = np.array([e["kl_exact"] for _, e, _, _ in flat], dtype=float)
    points = {
        "run": [i for i, *_ in flat], "step": [e["step"] for _, e, _, _ in flat], "kl": kl,
        "reward": [e["reward"] for _, e, _, _ in flat],
        "frontier_reward": frontier_reward_at(frontier, kl) if frontier is not None and len(kl) else np.full(len(kl), np.nan),
        "colour": [c for *_, c, _ in flat], "label": [label for *_, label in flat],
    }
    return paths, points
