"""The KL page's figures and their columns: pi_ref and pi* reply by reply, the reward-KL frontier, two replies,
the live runs' frontier.

Each figure function draws from ColumnDataSources (and rules and ranges) the page makes and fills; the
page replaces their data and never rebuilds a figure. The column functions turn the engine's results
(engines/kl_optimal.py) into that data, numpy in and dicts out; `run_columns` writes the live runs'
held-out evaluations as the last figure's paths and points.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, CustomJSTickFormatter, DataRange1d, FactorRange, HoverTool, Range1d, Span
from bokeh.transform import dodge

from app.pages.kl.text import BEST_WORD, PAIR
from engines.kl_optimal import (
    OptimalPolicy,
    ReplySpace,
    ReplySpaceSettings,
    SampledFrontier,
    enumerate_replies,
    frontier_reward_at,
    optimal_logp,
    optimal_policy,
    without_word,
)
from widgets.style import OKABE_ITO, plot

FRONTIER_BETAS = np.geomspace(1e-3, 1e2, 801)
"""The dense beta sweep of the frontier, wider than the slider so both ends are reached."""
PAIR_REFERENCE = (0.5, 0.5)
"""pi_ref of the two replies of the exchange-rate panel: equally likely."""
RUN_COLOURS = [c for name, c in OKABE_ITO.items() if name != "blue"]
"""One colour per run drawn on the sampled frontier (blue is the frontier's)."""


def moving_rules() -> tuple[Span, Span]:
    """The two rules the page moves, made before their figures: the highest reward the reference reaches (the
    frontier's), and log m, the sampled frontier's reach (the live figure's, hidden until a frontier is sampled)."""
    best = Span(location=1.0, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3])
    ceiling = Span(location=0.0, dimension="height", line_color=OKABE_ITO["blue"], line_dash=[6, 4], visible=False)
    return best, ceiling


def distribution_figures(dist: ColumnDataSource):
    """Reward, π_ref and π* of every reply, sorted by reward: three panels sharing one x axis.

    The rewards do not depend on the "superb" toggle: their panel draws a source of its own, filled once.
    """
    rewards = ColumnDataSource(reward_columns(*reply_space(False)[:2]), name="rewards")
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


def pair_figure(pair: ColumnDataSource):
    """π_ref and π* of the two replies (named as text.PAIR) side by side."""
    fig = plot("", "probability", x_range=FactorRange(*PAIR), y_range=(0, 1.05), height=220)
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


def beta_of(log_beta: float) -> float:
    """beta = 10^log_beta to two significant figures.

    The slider's steps of 0.05 in log10 beta are about 12% apart; rounding them keeps them
    distinct and makes the ones near the seed's values exactly 0.2, 0.05, 0.01 and 1.
    """
    return float(f"{10.0**log_beta:.2g}")


def beta_format() -> CustomJSTickFormatter:
    """The slider's title: it moves log10 beta and shows beta itself, rounded as `beta_of` does.

    A new formatter per call: a Bokeh model belongs to one document, so each session makes its own."""
    return CustomJSTickFormatter(code="return Number((10 ** tick).toPrecision(2)).toString();")


@lru_cache(maxsize=2)
def reply_space(zero_best: bool) -> tuple[ReplySpace, np.ndarray, OptimalPolicy]:
    """The reply space (with or without "superb" in the reference), the replies sorted by reward, the frontier sweep.

    Computed once per reply space and shared by every session (read only).
    """
    settings = without_word(ReplySpaceSettings(), BEST_WORD) if zero_best else ReplySpaceSettings()
    space = enumerate_replies(settings)
    order = np.argsort(space.r, kind="stable")  # the rewards do not depend on the toggle: bars keep their place
    return space, order, optimal_policy(space, FRONTIER_BETAS)


def reward_columns(space: ReplySpace, order: np.ndarray) -> dict:
    """Each reply's rank and reward r(y), in the reward order `order` (Y,)."""
    return {"rank": np.arange(len(order)), "r": space.r[order]}


def distribution_columns(space: ReplySpace, order: np.ndarray, policy: OptimalPolicy) -> dict:
    """Each reply, in the order `order` (Y,): its rank, text, reward, pi_ref and pi* at the policy's (one) beta."""
    return {
        "rank": np.arange(len(order)),
        "reply": [space.replies[y] for y in order],
        "r": space.r[order],
        "ref": np.exp(space.ref_logp[order]),
        "pi": np.exp(policy.logp[0, order]),
    }


def best_reachable(space: ReplySpace) -> float:
    """The highest reward of a reply the reference writes (pi_ref > 0): where the frontier's E[r] ends as beta -> 0."""
    return float(space.r[np.isfinite(space.ref_logp)].max())


def frontier_columns(frontier: OptimalPolicy | SampledFrontier | None) -> dict:
    """The frontier's points (beta, KL, E[r]), one per beta; empty columns for no frontier."""
    if frontier is None:
        return {"beta": [], "kl": [], "reward": []}
    return {"beta": frontier.beta, "kl": frontier.kl, "reward": frontier.reward}


def two_replies_logp(gap: float, beta: float) -> np.ndarray:
    """log pi* of two replies the reference finds equally likely, the first `gap` better: (2,)."""
    return optimal_logp(np.log(PAIR_REFERENCE), np.array([gap, 0.0]), beta)


def pair_columns(logp: np.ndarray) -> dict:
    """pi_ref and pi* = exp(`logp`) (2,) of the two replies, by the names the figure's axis shows."""
    return {"reply": list(PAIR), "ref": list(PAIR_REFERENCE), "pi": np.exp(logp)}


def lm_view_end(kl: np.ndarray, samples: int) -> float:
    """The right end of the live figure's KL axis: past log m (the sampled frontier's reach), and past the runs'
    evaluations `kl` (N,) up to 3 log m, so that one run far out does not squeeze the frontier to the left edge."""
    ceiling = math.log(samples)
    far = float(kl.max()) if len(kl) else 0.0
    return 1.1 * max(ceiling, min(far, 3 * ceiling))
