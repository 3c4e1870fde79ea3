"""What beta means: the best policy under reward minus beta KL, exactly (seed 000 section 6.12).

Maximising E[r] - beta KL(pi || pi_ref) has the closed form
pi*(y) = pi_ref(y) exp(r(y) / beta) / Z. On the 216 three-word replies of
engines/kl_optimal.py the page draws pi_ref and pi* side by side, the reward-KL
frontier that pi* traces as beta sweeps, the seed's two-reply exchange rate
exp(gap / beta), and a reply the reference never writes, which pi* never writes either.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, CustomJSTickFormatter, DataRange1d, FactorRange, HoverTool, Range1d, Span
from bokeh.transform import dodge

import app.runs
from app.cluster import Cluster, Queued, current as current_cluster, told_waiting
from app.model_jobs import frontier_progress
from engines.kl_optimal import (
    REFERENCE,
    WORDS,
    OptimalPolicy,
    ReplySpace,
    ReplySpaceSettings,
    SampledFrontier,
    boost_factor,
    enumerate_replies,
    frontier_reward_at,
    optimal_logp,
    optimal_policy,
    sampled_frontier,
)
from engines.lm.settings import LMFrontierSettings
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, session_guide
from widgets.run_controls import RunControls
from widgets.sections import LazySections
from widgets.sliders import slider
from widgets.streaming import StreamingRun
from widgets.style import OKABE_ITO, plot
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "What β means: the KL penalty"
SUMMARY = "The exact optimum of reward minus β·KL on 216 small replies: β is an exchange rate between reward and nats."

BEST_WORD = "superb"
"""The highest-valence word; the toggle gives it zero reference probability."""
FRONTIER_BETAS = np.geomspace(1e-3, 1e2, 801)
"""The dense beta sweep of the frontier, wider than the slider so both ends are reached."""
SEED_BETAS = (0.2, 0.05)
"""The seed's worked exchange rates: a log-odds gap of 1 at beta = 0.2 and at beta = 0.05."""
TOP_N = 8
"""Rows of the table of the most likely replies under pi*."""
PAIR = ("better reply (reward + gap)", "worse reply")
"""The two equally likely replies of the exchange-rate panel."""

WHY = (
    "Trained against a reward alone, a language model finds whatever pleases the reward and drifts into "
    "text nobody would write; the KL penalty keeps it near the model it started from, and β says how near. "
    "On a reply space small enough to enumerate, the best policy for every β is known exactly, so you can "
    "see what β buys: how much reward, at how much distance from the reference."
)
INTRO = (
    "Training on the reward minus β times the KL from the reference can at best reach one "
    "distribution, and it has a closed form: the reference, with every reply's probability "
    "multiplied by exp(r/β) and renormalised. Here the replies are all 216 three-word sequences over "
    "six words (superb, good, fine, plot, dull, awful), the reference draws each word independently "
    "(superb is rare: 0.04), and the reward is the mean valence of the words, from +1 (superb) to −1 "
    "(awful). Move β and the best policy moves along the reward-KL frontier."
)
EQUATION = (
    r"\pi^*(y \mid x) = \frac{1}{Z(x)}\,\pi_{\text{ref}}(y \mid x)\,\exp\!\big(r(x, y)/\beta\big)"
    r"\quad\text{maximises}\quad \mathbb{E}_{\pi}[r] - \beta\,\mathrm{KL}(\pi \,\Vert\, \pi_{\text{ref}})"
)
NOTICE = (
    "β is the exchange rate between reward and nats of KL: at β = 0.05 one unit of reward is worth "
    "moving 20 nats from the reference. A large β keeps π* on the reference; as β → 0 the factor "
    "exp(r/β) swamps it and all the probability goes to the single highest-reward reply, "
    "“superb superb superb”, the collapse of the seed's Run 1 (no penalty: reward at its maximum, "
    "the entropy gone). Only replies the reference already writes can be boosted: give “superb” zero "
    "reference probability and every reply containing it stays at exactly 0, for every β."
)


COLLAPSE_QUESTION = "As β → 0 the penalty vanishes. What does the best policy π* do?"
COLLAPSE_CHOICES = {
    "stays": "it stays close to the reference",
    "spreads": "it spreads its probability evenly over the high-reward replies",
    "collapses": "it puts all its probability on the single highest-reward reply",
}
NEVER_QUESTION = (
    f"Suppose the reference never writes “{BEST_WORD}”: every reply containing it has π_ref = 0. What "
    f"probability does π* give “{' '.join([BEST_WORD] * 3)}”, the reply with the highest reward, when β is very small?"
)
NEVER_CHOICES = {
    "zero": "exactly 0, for every β",
    "tiny": "a tiny amount that grows as β shrinks",
    "most": "most of the probability as β → 0, since its reward is the highest",
}


def collapse_text() -> str:
    """The answer to the β → 0 question, with the seed's exchange rates and this reply space's numbers."""
    space, _, _ = reply_space(False)
    best = int(np.argmax(space.r))
    rates = " and ".join(
        f"e<sup>{1 / b:.0f}</sup> {factor_html(1 / b, float(boost_factor(1.0, b)))} at β = {b}" for b in SEED_BETAS
    )
    return (
        "All of it goes to the single highest-reward reply. π* multiplies each reference probability by exp(r/β), "
        f"so two replies one unit of reward apart differ by a factor e<sup>1/β</sup>: {rates}. As β shrinks the "
        f"factor grows without bound, and π* ends on “{space.replies[best]}”: the reward reaches its maximum, "
        f"{space.r[best]:+.0f}, the entropy falls to 0, and the KL climbs to −log π_ref of that reply, "
        f"{-space.ref_logp[best]:.2f} nats. That is the collapse of a run without a penalty: one reply, over and over."
    )


def never_written_text() -> str:
    """The answer to the zero-reference-probability question: 0 for every beta, and where pi* goes instead."""
    space, _, _ = reply_space(True)
    top = int(np.argmax(np.where(np.isfinite(space.ref_logp), space.r, -np.inf)))
    return (
        "Exactly 0, for every β. π* is the reference times a finite factor exp(r/β), renormalised, so a reply the "
        "reference never writes stays at probability 0 however high its reward: log π* = log π_ref + r/β − log Z "
        "= −∞. The penalty can only reweight what the reference already writes; as β → 0 the probability goes to "
        f"the best reply that is left, “{space.replies[top]}” (reward {space.r[top]:+.2f}). Tick the box above "
        "to see it."
    )


def reference_without(word: str) -> tuple[float, ...]:
    """The word probabilities with `word` at 0 and the others renormalised to sum to 1."""
    kept = [0.0 if w == word else p for w, p in zip(WORDS, REFERENCE)]
    return tuple(p / sum(kept) for p in kept)


@lru_cache(maxsize=2)
def reply_space(zero_best: bool) -> tuple[ReplySpace, np.ndarray, OptimalPolicy]:
    """The reply space (with or without "superb"), the replies sorted by reward, the frontier sweep.

    Computed once per reply space and shared by every session (read only).
    """
    settings = ReplySpaceSettings(reference=reference_without(BEST_WORD)) if zero_best else ReplySpaceSettings()
    space = enumerate_replies(settings)
    order = np.argsort(space.r, kind="stable")  # the rewards do not depend on the toggle: bars keep their place
    return space, order, optimal_policy(space, FRONTIER_BETAS)


def contains_best(space: ReplySpace) -> np.ndarray:
    """Which replies contain the word "superb", (Y,) booleans."""
    return np.array([BEST_WORD in reply.split() for reply in space.replies])


def probability_text(logp: float) -> str:
    """The probability e^logp as shown: "0" only when it is exactly 0 (logp = -inf).

    Small ones in scientific notation, and those below the float range (e^-1000) as a
    power of ten, so that a tiny probability is never shown as 0.
    """
    logp = float(logp)
    if logp == -math.inf:
        return "0"
    p = math.exp(logp)
    if p == 0.0:
        return f"~10<sup>{logp / math.log(10):.0f}</sup>"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def factor_html(exponent: float, factor: float) -> str:
    """e^exponent written for a reader: 148, 4.9 × 10^8, or its power of ten beyond the float range."""
    if not math.isfinite(factor):
        return f"≈ 10<sup>{exponent / math.log(10):.0f}</sup>"
    if factor < 1e4:
        return f"= {factor:.3g}" if factor < 100 else f"= {factor:.0f}"
    mantissa, power = f"{factor:.1e}".split("e")
    return f"≈ {mantissa} × 10<sup>{int(power)}</sup>"


def summary_text(beta: float, space: ReplySpace, policy: OptimalPolicy) -> str:
    """The sentence under the controls: pi*'s most likely reply, its probability, the exchange rate."""
    logp = policy.logp[0]
    top = int(np.argmax(logp))
    return (
        f"At β = {beta:g} the best policy's most likely reply is <strong>“{space.replies[top]}”</strong> "
        f"(reward {space.r[top]:+.3f}) with probability <strong>{probability_text(logp[top])}</strong>; the reference "
        f"gives it {probability_text(space.ref_logp[top])}. Gaining one unit of reward is worth "
        f"moving {1 / beta:.3g} nats from the reference."
    )


def two_replies_logp(gap: float, beta: float) -> np.ndarray:
    """log pi* of two replies the reference finds equally likely, the first `gap` better: (2,)."""
    return optimal_logp(np.log([0.5, 0.5]), np.array([gap, 0.0]), beta)


def two_replies_html(gap: float, beta: float, logp: np.ndarray) -> str:
    """Two equally likely replies, rewards gap apart: pi* prefers the better by exp(gap / beta)."""
    factor = float(boost_factor(gap, beta))
    rows = "".join(
        f"<tr><td>β = {b}</td><td>e<sup>1/{b}</sup> = e<sup>{1 / b:.0f}</sup> "
        f"{factor_html(1 / b, float(boost_factor(1.0, b)))}</td></tr>"
        for b in SEED_BETAS
    )
    return (
        '<div class="fl-two">'
        "<p>Two replies the reference finds equally likely, the better one's reward (log-odds) higher by the gap: "
        "π* prefers it by the factor exp(gap / β).</p>"
        f'<p class="fl-two-now">gap {gap:.1f}, β = {beta:g}: e<sup>{gap:.1f}/{beta:g}</sup> = '
        f"e<sup>{gap / beta:.4g}</sup> <strong>{factor_html(gap / beta, factor)}</strong>; "
        f"π*(better) = {probability_text(logp[0])}, π*(worse) = {probability_text(logp[1])}.</p>"
        f"<p>The seed's worked example (gap 1):</p><table>{rows}</table></div>"
    )


def zero_html(zero_best: bool, beta: float, space: ReplySpace, policy: OptimalPolicy, frontier: OptimalPolicy) -> str:
    """What pi* gives the replies containing "superb", with or without the word in the reference."""
    mask = contains_best(space)
    best = space.replies.index(" ".join([BEST_WORD] * 3))
    log_best = policy.logp[0, best]
    log_mass = np.logaddexp.reduce(policy.logp[0, mask])  # log of pi*'s total on those replies
    if not zero_best:
        return (
            f"<p>The reference writes “{BEST_WORD}” with probability {REFERENCE[0]} per word, so "
            f"“{space.replies[best]}” has π_ref = {probability_text(space.ref_logp[best])} and, at "
            f"β = {beta:g}, π* = <strong>{probability_text(log_best)}</strong>. The {mask.sum()} replies containing "
            f"“{BEST_WORD}” hold {probability_text(log_mass)} of π*. Tick the box to make the word impossible under the "
            "reference.</p>"
        )
    log_sweep = np.logaddexp.reduce(frontier.logp[:, mask], axis=-1).max()
    reachable = np.where(np.isfinite(space.ref_logp), space.r, -np.inf)
    top = int(np.argmax(reachable))
    return (
        f"<p>“{BEST_WORD}” has reference probability 0 (the other words renormalised), so the {mask.sum()} "
        f"replies containing it have π_ref = 0. Under π* at β = {beta:g}: "
        f"π*(“{space.replies[best]}”) = <strong class=\"fl-zero\">{probability_text(log_best)}</strong> and all "
        f"{mask.sum()} together hold <strong>{probability_text(log_mass)}</strong>; the most they hold at any of the "
        f"{len(frontier.beta)} β of the frontier sweep is {probability_text(log_sweep)}. log π* = log π_ref + r/β − log Z "
        f"= −∞ for every finite β. The best π* can now reach is “{space.replies[top]}” (reward {space.r[top]:+.2f}).</p>"
    )


def top_table_html(space: ReplySpace, policy: OptimalPolicy) -> str:
    """The TOP_N most likely replies under pi*, with their reward, pi_ref, pi* and boost pi*/pi_ref."""
    logp = policy.logp[0]
    rows = []
    for y in np.argsort(-logp, kind="stable")[:TOP_N]:
        ratio = float(np.exp(logp[y] - space.ref_logp[y]))
        rows.append(
            f"<tr><td>{html.escape(space.replies[y])}</td><td>{space.r[y]:+.3f}</td>"
            f"<td>{probability_text(space.ref_logp[y])}</td><td>{probability_text(logp[y])}</td>"
            f"<td>{ratio:.3g}</td></tr>"
        )
    head = "<tr><th>reply</th><th>reward r</th><th>π_ref</th><th>π*</th><th>π* / π_ref</th></tr>"
    return f'<table class="fl-top">{head}{"".join(rows)}</table>'


# ----------------------------------------------------------------------------- where the live runs sit

FRONTIER_DEFAULTS = LMFrontierSettings()
"""The sampled frontier's defaults: the live run's model, reward and replies, M prompts, m replies, the seed."""
SOURCE_KEYS = ("model", "reward", "T", "prompt_tokens", "prompt_set")
"""The run settings a frontier depends on: runs that share them are drawn over the same frontier."""
LM_SOURCE = {key: getattr(FRONTIER_DEFAULTS, key) for key in SOURCE_KEYS}
"""The default source: the live run's default model, reward and replies."""
LM_BETAS = np.geomspace(1e-3, 1e3, 301)
"""The beta sweep of the sampled frontier: from pi* on the best sample (KL near log m) to the reference (KL near 0)."""
RUN_COLOURS = [c for name, c in OKABE_ITO.items() if name != "blue"]
"""One colour per run drawn (blue is the frontier's)."""


def source_label(source: dict) -> str:
    """How a reference model, reward and reply length read in the chooser (and in the link)."""
    prompts = (f"review prompts of {source['prompt_tokens']} tokens" if source["prompt_set"] == "reviews"
               else f"{source['prompt_set']} prompts")
    return f"{source['model']} · {source['reward']} · T = {source['T']} · {prompts}"


def run_source(run) -> dict:
    """What a run's frontier depends on, from its config.json (defaults for settings an older run lacks)."""
    settings = run.config.get("settings", {})
    return {key: settings.get(key, LM_SOURCE[key]) for key in SOURCE_KEYS}


def live_runs(root: Path | str | None = None):
    """The run folders under `root` (default: the live-run page's) that have held-out evaluations, oldest first."""
    return [run for run in app.runs.list_runs(app.runs.RUNS_DIR if root is None else root)
            if any("kl_exact" in e for e in run.evals)]


@dataclass(frozen=True)
class FrontierView:
    """What the sampled-frontier worker reports: progress, the frontier so far, or a failure."""

    done: int = 0
    """Prompts sampled and scored."""
    total: int = 0
    """Prompts asked for."""
    samples: int = 0
    """Replies m per prompt."""
    seconds: float = 0.0
    """Seconds spent sampling and scoring."""
    frontier: SampledFrontier | None = None
    """The frontier of the prompts done, or None while loading."""
    best_reply: str = ""
    """The best sample for the first prompt (pi* as beta -> 0), with its prompt."""
    message: str = ""
    """One sentence when the work failed."""


def frontier_views(source: dict, prompts: int, samples: int, seed: int, cluster: Cluster | None = None) -> Iterator:
    """Wait for the device on the cluster (Queued snapshots), then sample and score there (the worker loads the
    model and the reward once): a FrontierView per batch. Torch is never imported in this process."""
    yield FrontierView(total=prompts, samples=samples)
    try:
        settings = LMFrontierSettings(prompts=prompts, samples=samples, seed=seed, **source)
        for progress in frontier_progress(settings, cluster):
            if isinstance(progress, Queued):
                yield progress
                continue
            yield FrontierView(
                done=len(progress.prompts), total=prompts, samples=samples, seconds=progress.seconds,
                frontier=sampled_frontier(progress.rewards, LM_BETAS),
                best_reply=f"{html.escape(progress.prompts[0])}<b>{html.escape(progress.best_replies[0])}</b>",
            )
    except (ValueError, OSError, RuntimeError) as error:  # a model that cannot be loaded (ModelNotAvailable), a dead worker
        yield FrontierView(total=prompts, samples=samples, message=str(error))


def approximation_html(samples: int, prompts: int) -> str:
    """What the sampled frontier is and is not, with this m and M."""
    ceiling = math.log(samples)
    return (
        '<p class="fl-approx">How this frontier is made: the starting model π<sub>ref</sub>(·|x) is replaced by '
        f"<b>m = {samples}</b> replies sampled from it for each of M = {prompts} held-out prompts, each of weight 1/m, "
        "and π* reweights those replies only, in proportion to exp(R/β). So (1) its KL never exceeds "
        f"<b>log m = {ceiling:.2f} nats</b> per reply (the dashed line): an evaluation further right has nothing to "
        "compare against, and each doubling of m moves the line only log 2 = 0.69 nats. (2) It is a lower bound on the "
        "true frontier, not an estimate of it: each point is what the starting model really reaches by drawing m replies "
        "and keeping one with probability ∝ exp(R/β) (at β → 0, the best of m), at that reward and at most that KL, "
        "whereas the true best policy can also move probability onto replies m samples never showed. (3) It carries "
        "sampling noise from the M prompts and m replies. A run below the curve is beaten by that resampling of the "
        "starting model at no more KL; a run well above it shows where the true frontier is higher than this curve. "
        "KL is per reply, in nats, as the runs' exact held-out KL.</p>"
    )


def points_summary(points: dict, frontier: SampledFrontier) -> str:
    """How many run evaluations lie within the frontier's reach, and how many of those lie below it."""
    gaps = np.asarray(points["reward"], dtype=float) - np.asarray(points["frontier_reward"], dtype=float)
    reach = np.isfinite(gaps)
    if len(gaps) == 0:
        return "No run's evaluations to draw: start runs on the live-run page with this model and reward."
    text = (f"{len(gaps)} evaluations drawn; {int(reach.sum())} lie within the frontier's reach, a KL of "
            f"{frontier.kl.max():.2f} nats (log m = {frontier.ceiling:.2f}, less where the best samples tie)")
    if reach.any():
        below = int((gaps[reach] < 0).sum())
        text += f", {below} of them below the sampled frontier and {int(reach.sum()) - below} on or above it"
    return text + "."


CSS = """
.fl-top, .fl-two table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.fl-top th, .fl-top td, .fl-two td { padding: 0.15em 0.7em; text-align: right; border-bottom: 1px solid rgba(128,128,128,0.3); }
.fl-top td:first-child, .fl-top th:first-child, .fl-two td:first-child { text-align: left; }
.fl-two-now { font-size: 1.1em; }
"""

def beta_of(log_beta: float) -> float:
    """beta = 10^log_beta to two significant figures.

    The slider's steps of 0.05 in log10 beta are about 12% apart; rounding them keeps them
    distinct and makes the ones near the seed's values exactly 0.2, 0.05, 0.01 and 1.
    """
    return float(f"{10.0**log_beta:.2g}")


class KLPage(pn.viewable.Viewer):
    """log10 beta, the "superb" toggle and the two-reply gap; pi_ref and pi*, the frontier, the numbers."""

    log_beta = param.Number(default=-0.7, bounds=(-2.5, 1.0), step=0.05, label="KL coefficient β (log scale)")
    zero_best = param.Boolean(default=False, label="Give “superb” zero reference probability")
    gap = param.Number(default=1.0, bounds=(0.0, 5.0), step=0.1, label="Log-odds gap between the two replies")
    lm_source = param.Selector(default=source_label(LM_SOURCE), objects=[source_label(LM_SOURCE)],
                               label="Reference model, reward and replies (the live runs' own)")
    lm_prompts = param.Integer(default=FRONTIER_DEFAULTS.prompts, bounds=(1, 64), label="Held-out prompts M")
    lm_samples = param.Integer(default=FRONTIER_DEFAULTS.samples, bounds=(2, 1024), label="Replies m sampled per prompt")
    lm_seed = param.Integer(default=FRONTIER_DEFAULTS.seed, bounds=(0, 999_999), label="Seed of the samples")
    section = param.Selector(default="distributions", objects=["distributions", "frontier", "replies", "two", "live"], label="Section shown")

    CONTROLS = ("log_beta", "zero_best", "gap", "lm_source", "lm_prompts", "lm_samples", "lm_seed", "section")

    def __init__(self, query: dict[str, str] | None = None, runs_dir: Path | str | None = None,
                 cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.cluster = cluster or current_cluster()  # the frontier's sampling is a model job, as a run is
        self.runs = live_runs(runs_dir)
        self.sources = {source_label(LM_SOURCE): LM_SOURCE} | {source_label(run_source(r)): run_source(r) for r in self.runs}
        self.param.lm_source.objects = list(self.sources)
        self.rewards = ColumnDataSource(name="rewards")
        self.dist = ColumnDataSource(name="distributions")
        self.frontier = ColumnDataSource(name="frontier")
        self.current = ColumnDataSource(name="current_beta")
        self.pair = ColumnDataSource(name="two_replies")
        # The figures are built with their sections, on first view; what the updates move is made here.
        self.best_rule = Span(location=1.0, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3])
        self.ceiling_rule = Span(location=0.0, dimension="height", line_color=OKABE_ITO["blue"], line_dash=[6, 4], visible=False)
        self.lm_x_range = Range1d(0, 1)
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.1em"})
        self.metrics = MetricRow(
            {
                "beta": ("β (reward per nat)", "{value:g}"),
                "reward": ("E[r] under π*", "{value:.3f}"),
                "kl": ("KL(π* ‖ π_ref), nats", "{value:.3f}"),
                "entropy": ("entropy of π*, nats", "{value:.3f}"),
                "objective": ("E[r] − β·KL", "{value:.3f}"),
                "top": ("probability of the most likely reply", "{value:.3f}"),
            }
        )
        self.top_table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.two = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.zero = pn.pane.HTML(sizing_mode="stretch_width")
        self.guide = session_guide()
        self.collapse_card = PredictionCard("kl/beta-to-zero", COLLAPSE_QUESTION, COLLAPSE_CHOICES, "collapses", collapse_text(), guide=self.guide)
        self.never_card = PredictionCard("kl/never-written", NEVER_QUESTION, NEVER_CHOICES, "zero", never_written_text(), guide=self.guide)
        self.lm_curve = ColumnDataSource({"beta": [], "kl": [], "reward": []}, name="sampled_frontier")
        self.lm_paths = ColumnDataSource({"xs": [], "ys": [], "colour": [], "label": []}, name="run_paths")
        self.lm_points = ColumnDataSource({k: [] for k in ("run", "step", "kl", "reward", "frontier_reward", "colour", "label")},
                                          name="run_evaluations")
        self.lm_status = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["fl-lm-status"])
        self.lm_approx = pn.pane.HTML(sizing_mode="stretch_width")
        self.lm_summary = pn.pane.HTML(sizing_mode="stretch_width")
        self.lm_frontier: SampledFrontier | None = None
        self.lm_run = StreamingRun(self._show_frontier, self._frontier_done)
        self.lm_controls = RunControls(self.start_frontier, self.stop_frontier, seed=self.param.lm_seed)
        self.sections = LazySections(self.param.section, {
            "distributions": ("π_ref and π*, reply by reply", self._distributions_section),
            "frontier": ("The reward-KL frontier", self._frontier_section),
            "replies": ("The likeliest replies; one never written", self._replies_section),
            "two": ("Two replies: the exchange rate", self._two_section),
            "live": ("Where the live runs sit", self._live_section),
        })
        self._update_space()  # the link's values, applied next, update what depends on them
        self.param.watch(self._changed, ["log_beta", "zero_best", "gap"])
        self.param.watch(self._lm_changed, ["lm_source", "lm_prompts", "lm_samples", "lm_seed"])
        self.notice = sync_url(self, list(self.CONTROLS), query)
        self._update_beta()
        self._update_two()
        self._draw_runs()
        self.lm_status.object = "<p>Press Start to sample the frontier of this model and reward.</p>"

    @property
    def beta(self) -> float:
        return beta_of(self.log_beta)

    def _distribution_figures(self):
        """Reward, π_ref and π* of every reply, sorted by reward: three panels sharing one x axis."""
        space, order, _ = reply_space(False)
        ranks = Range1d(-1, len(order))
        self.rewards.data = {"rank": np.arange(len(order)), "r": space.r[order]}
        rewards = plot("", "reward r(y)", x_range=ranks, y_range=(-1.1, 1.1), height=130)
        rewards.step("rank", "r", source=self.rewards, mode="center", color=OKABE_ITO["green"], line_width=2)
        rewards.xaxis.visible = False
        hover = [("reply", "@reply"), ("reward", "@r{0.000}"), ("π_ref", "@ref{0.00000}"), ("π*", "@pi{0.00000}")]
        axis = "the 216 replies, sorted by reward (low to high)"
        ref = plot("", "π_ref(y)", x_range=ranks, y_range=DataRange1d(start=0), height=180)
        ref.vbar("rank", top="ref", width=0.8, source=self.dist, color=OKABE_ITO["blue"])
        ref.xaxis.visible = False
        pi = plot(axis, "π*(y) at this β", x_range=ranks, y_range=DataRange1d(start=0), height=220)
        pi.vbar("rank", top="pi", width=0.8, source=self.dist, color=OKABE_ITO["vermillion"])
        for fig in (ref, pi):
            fig.add_tools(HoverTool(tooltips=hover))
        return column(rewards, ref, pi, sizing_mode="stretch_width")

    def _frontier_figure(self):
        frontier = plot("KL(π* ‖ π_ref) (nats)", "E[r] under π* (reward units)", x_range=(-0.2, 10.2), y_range=(-0.12, 1.08), height=420)
        frontier.add_layout(self.best_rule)
        frontier.line("kl", "reward", source=self.frontier, color=OKABE_ITO["blue"], line_width=2, legend_label="frontier: π* as β sweeps")
        frontier.scatter("kl", "reward", source=self.current, color=OKABE_ITO["vermillion"], size=12, legend_label="π* at the current β")
        frontier.legend.location = "bottom_right"
        frontier.add_tools(HoverTool(tooltips=[("β", "@beta{0.0000}"), ("KL", "@kl{0.000} nats"), ("E[r]", "@reward{0.000}")]))
        return frontier

    def _pair_figure(self):
        pair = plot("", "probability", x_range=FactorRange(*PAIR), y_range=(0, 1.05), height=220)
        pair.vbar(dodge("reply", -0.17, range=pair.x_range), top="ref", width=0.3, source=self.pair, color=OKABE_ITO["blue"], legend_label="π_ref")
        pair.vbar(dodge("reply", 0.17, range=pair.x_range), top="pi", width=0.3, source=self.pair, color=OKABE_ITO["vermillion"], legend_label="π* at this β")
        pair.legend.location = "top_right"
        pair.legend.orientation = "horizontal"
        return pair

    def _lm_figure(self):
        fig = plot("KL(π ‖ π_ref) per reply (nats)", "reward R (log-odds)", x_range=self.lm_x_range, y_range=DataRange1d(), height=420)
        fig.add_layout(self.ceiling_rule)
        curve = fig.line("kl", "reward", source=self.lm_curve, color=OKABE_ITO["blue"], line_width=2.5,
                         legend_label="sampled frontier: π* on m replies per prompt")
        fig.multi_line("xs", "ys", source=self.lm_paths, line_color="colour", line_width=1.6, line_alpha=0.8)
        points = fig.scatter("kl", "reward", source=self.lm_points, color="colour", size=8, line_color="white", legend_field="label")
        fig.legend.location = "bottom_right"
        fig.add_tools(HoverTool(renderers=[curve], tooltips=[("β", "@beta{0.0000}"), ("KL", "@kl{0.000} nats"), ("E[R]", "@reward{0.000}")]))
        fig.add_tools(HoverTool(renderers=[points], tooltips=[("run", "@run"), ("step", "@step"), ("KL", "@kl{0.00} nats"),
                                                               ("reward", "@reward{+0.000}"), ("frontier there", "@frontier_reward{+0.000}")]))
        return fig

    def _lm_changed(self, *events):
        # A frontier belongs to one model, reward and sample: a new setting drops the old one.
        self.stop_frontier()
        self.lm_frontier = None
        self.lm_curve.data = {"beta": [], "kl": [], "reward": []}
        self.ceiling_rule.visible = False
        self.lm_status.object = "<p>Press Start to sample the frontier with these settings.</p>"
        self._draw_runs()

    def start_frontier(self) -> None:
        """Sample and score on a worker thread; the plot fills in prompt batch by prompt batch."""
        self.lm_controls.param.update(running=True, progress=0.0)
        self.lm_status.object = "<p>Loading the model and the reward…</p>"
        source, M, m, seed = self.sources[self.lm_source], self.lm_prompts, self.lm_samples, self.lm_seed
        self.lm_run.start(lambda: frontier_views(source, M, m, seed, self.cluster))

    def stop_frontier(self) -> None:
        self.lm_run.stop()
        self.lm_controls.running = False

    def _show_frontier(self, view: FrontierView) -> None:
        if told_waiting(self.lm_run, view, "The sampling"):
            return
        if view.message:
            self.lm_status.object = f'<p class="fl-lm-error">{html.escape(view.message)}</p>'
            return
        if view.frontier is None:
            self.lm_status.object = "<p>Loading the model and the reward…</p>"
            return
        f = self.lm_frontier = view.frontier
        with pn.io.hold():
            self.lm_curve.data = {"beta": f.beta, "kl": f.kl, "reward": f.reward}
            self.ceiling_rule.update(location=f.ceiling, visible=True)
            self.lm_controls.progress = view.done / view.total
            self.lm_status.object = (
                f"<p>{view.done} of {view.total} prompts × {view.samples} replies sampled and scored in {view.seconds:.1f} s. "
                f"Mean reward of the samples (π_ref, KL 0): <b>{f.reference_reward:+.3f}</b>; best of {view.samples} "
                f"(β → 0, KL {f.kl[0]:.2f} nats): <b>{f.best_reward:+.3f}</b>. The best sample for the first prompt: "
                f"“{view.best_reply}”.</p>"
            )
            self._draw_runs()

    def _frontier_done(self, finished: bool) -> None:
        self.lm_controls.running = False
        if finished and self.lm_frontier is not None:
            self.lm_controls.progress = 1.0

    def _draw_runs(self) -> None:
        """Each run of the chosen model and reward: its (exact KL, reward) evaluations in order of step."""
        source = self.sources[self.lm_source]
        runs = [r for r in self.runs if run_source(r) == source]
        colours = [RUN_COLOURS[k % len(RUN_COLOURS)] for k in range(len(runs))]
        labels = [f"{r.id} (β {r.config.get('settings', {}).get('beta', '?')})" for r in runs]
        evals = [[e for e in r.evals if "kl_exact" in e] for r in runs]
        self.lm_paths.data = {"xs": [[e["kl_exact"] for e in ev] for ev in evals], "ys": [[e["reward"] for e in ev] for ev in evals],
                              "colour": colours, "label": labels}
        flat = [(r.id, e, c, label) for r, ev, c, label in zip(runs, evals, colours, labels) for e in ev]
        kl = np.array([e["kl_exact"] for _, e, _, _ in flat], dtype=float)
        f = self.lm_frontier
        self.lm_points.data = {
            "run": [i for i, *_ in flat], "step": [e["step"] for _, e, _, _ in flat], "kl": kl,
            "reward": [e["reward"] for _, e, _, _ in flat],
            "frontier_reward": frontier_reward_at(f, kl) if f is not None and len(kl) else np.full(len(kl), np.nan),
            "colour": [c for *_, c, _ in flat], "label": [label for *_, label in flat],
        }
        ceiling = math.log(self.lm_samples)
        far = float(kl.max()) if len(kl) else 0.0
        self.lm_x_range.update(start=0.0, end=1.1 * max(ceiling, min(far, 3 * ceiling)))
        self.lm_approx.object = approximation_html(self.lm_samples, self.lm_prompts)
        summary = f"{len(kl)} evaluations drawn." if f is None and len(kl) else points_summary(self.lm_points.data, f)
        beyond = int((kl > self.lm_x_range.end).sum())
        if beyond:
            summary += f" {beyond} lie right of the view (up to {far:.1f} nats): zoom out to see them."
        self.lm_summary.object = f'<p class="fl-lm-summary">{summary}</p>'

    def close(self) -> None:
        """The tab closed: stop sampling."""
        self.lm_run.stop()

    def _changed(self, *events):
        # One batch per slider step; the plots' data first, the text after it.
        names = {e.name for e in events}
        with one_update():
            if "zero_best" in names:
                self._update_space()
            if names & {"log_beta", "zero_best"}:
                self._update_beta()
            if names & {"log_beta", "gap"}:
                self._update_two()

    def _update_space(self):
        self.space, self.order, self.sweep = reply_space(self.zero_best)
        self.frontier.data = {"beta": self.sweep.beta, "kl": self.sweep.kl, "reward": self.sweep.reward}
        self.best_rule.location = float(self.space.r[np.isfinite(self.space.ref_logp)].max())

    def _update_beta(self):
        beta, space, order = self.beta, self.space, self.order
        self.policy = policy = optimal_policy(space, beta)
        pi = np.exp(policy.logp[0])
        self.dist.data = {
            "rank": np.arange(len(order)),
            "reply": [space.replies[y] for y in order],
            "r": space.r[order],
            "ref": np.exp(space.ref_logp[order]),
            "pi": pi[order],
        }
        self.current.data = {"beta": [beta], "kl": [float(policy.kl[0])], "reward": [float(policy.reward[0])]}
        self.metrics.update(
            beta=beta, reward=policy.reward[0], kl=policy.kl[0], entropy=policy.entropy[0], objective=policy.objective[0], top=pi.max()
        )
        self.summary.object = f'<p class="fl-summary">{summary_text(beta, space, policy)}</p>'
        self.top_table.object = top_table_html(space, policy)
        self.zero.object = zero_html(self.zero_best, beta, space, policy, self.sweep)

    def _update_two(self):
        logp = two_replies_logp(self.gap, self.beta)
        self.pair.data = {"reply": list(PAIR), "ref": [0.5, 0.5], "pi": np.exp(logp)}
        self.two.object = two_replies_html(self.gap, self.beta, logp)

    def _distributions_section(self):
        return self.collapse_card.guard(
            plot_with_downloads(self._distribution_figures(), {"distributions": self.dist}, "The reference and the best policy, reply by reply"),
            note="the distributions",
        )

    def _frontier_section(self):
        return self.collapse_card.guard(
            plot_with_downloads(self._frontier_figure(), {"frontier": self.frontier, "current_beta": self.current}, "The reward-KL frontier"),
            note="the frontier",
        )

    def _replies_section(self):
        return pn.Column(
            pn.pane.Markdown("#### The most likely replies under π*", margin=(0, 10)),
            self.top_table,
            pn.pane.Markdown("#### A reply the reference never writes", margin=(0, 10)),
            self.never_card,
            self.never_card.guard(self.zero, note="what π* gives those replies"),
            sizing_mode="stretch_width",
        )

    def _two_section(self):
        return pn.Column(
            pn.pane.Markdown("#### Two equally likely replies: the exchange rate e^(gap/β)", margin=(0, 10)),
            slider(self.param.gap, width=320),
            self.two,
            plot_with_downloads(self._pair_figure(), {"two_replies": self.pair}),
            sizing_mode="stretch_width",
        )

    def _live_section(self):
        return pn.Column(
            pn.pane.HTML(
                "<p>The same frontier for the language model of the live-run page, whose replies cannot be enumerated: "
                "it is sampled, and each run's held-out evaluations (exact KL, reward) are drawn over it, step by step.</p>",
                sizing_mode="stretch_width",
            ),
            pn.Row(
                pn.widgets.Select.from_param(self.param.lm_source, width=520),
                pn.widgets.IntInput.from_param(self.param.lm_prompts, width=150),
                pn.widgets.IntInput.from_param(self.param.lm_samples, width=200),
            ),
            self.lm_controls,
            self.lm_status,
            plot_with_downloads(self._lm_figure(), {"sampled_frontier": self.lm_curve, "run_evaluations": self.lm_points}),
            self.lm_summary,
            self.lm_approx,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        # The slider moves log10 beta; its title shows beta itself, rounded as `beta_of` does
        # (a formatter of this session's own: a Bokeh model belongs to one document).
        beta_format = CustomJSTickFormatter(code="return Number((10 ** tick).toPrecision(2)).toString();")
        beta_slider = slider(self.param.log_beta, width=420, format=beta_format)
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=self.collapse_card),
            pn.Row(beta_slider, pn.widgets.Checkbox.from_param(self.param.zero_best, align="center")),
            self.summary,
            self.metrics,
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None) -> KLPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return KLPage(query=query)
