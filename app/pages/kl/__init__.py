"""What beta means: the best policy under reward minus beta KL, exactly (seed 000 section 6.12).

Maximising E[r] - beta KL(pi || pi_ref) has the closed form
pi*(y) = pi_ref(y) exp(r(y) / beta) / Z. On the 216 three-word replies of
engines/kl_optimal.py the page draws pi_ref and pi* side by side, the reward-KL
frontier that pi* traces as beta sweeps, the seed's two-reply exchange rate
exp(gap / beta), and a reply the reference never writes, which pi* never writes either.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, CustomJSTickFormatter, Range1d, Span

from app.jobs.cluster import Cluster, told_waiting
from app.jobs.cluster import current as current_cluster
from app.jobs.model_jobs import (
    LM_SOURCE,
    FrontierView,
    frontier_views,
    live_runs,
    run_source,
)
from app.pages.kl.figures import distribution_figures, frontier_figure, lm_figure, pair_figure, run_columns
from app.pages.kl.text import (
    BEST_WORD,
    COLLAPSE_CHOICES,
    COLLAPSE_QUESTION,
    CSS,
    EQUATION,
    INTRO,
    NEVER_CHOICES,
    NEVER_QUESTION,
    NOTICE,
    PAIR,
    WHY,
    approximation_html,
    collapse_text,
    never_written_text,
    points_summary,
    sampled_html,
    source_label,
    summary_text,
    top_table_html,
    two_replies_html,
    zero_html,
)
from engines.kl_optimal import (
    REFERENCE,
    WORDS,
    OptimalPolicy,
    ReplySpace,
    ReplySpaceSettings,
    SampledFrontier,
    enumerate_replies,
    optimal_logp,
    optimal_policy,
)
from engines.lm.settings import LMFrontierSettings
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.headings import section_heading
from widgets.job_view import JobView
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.style import OKABE_ITO
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "What β means: the KL penalty"
SUMMARY = "The exact optimum of reward minus β·KL on 216 small replies: β is an exchange rate between reward and nats."

FRONTIER = SettingsControls(LMFrontierSettings)
"""The live section's controls: the sampled frontier's M prompts, m replies and seed (engines/lm/settings.py)."""
FRONTIER_BETAS = np.geomspace(1e-3, 1e2, 801)
"""The dense beta sweep of the frontier, wider than the slider so both ends are reached."""


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


def two_replies_logp(gap: float, beta: float) -> np.ndarray:
    """log pi* of two replies the reference finds equally likely, the first `gap` better: (2,)."""
    return optimal_logp(np.log([0.5, 0.5]), np.array([gap, 0.0]), beta)


def beta_of(log_beta: float) -> float:
    """beta = 10^log_beta to two significant figures.

    The slider's steps of 0.05 in log10 beta are about 12% apart; rounding them keeps them
    distinct and makes the ones near the seed's values exactly 0.2, 0.05, 0.01 and 1.
    """
    return float(f"{10.0**log_beta:.2g}")


BETA_TO_ZERO = card_spec("kl/beta-to-zero", COLLAPSE_QUESTION, COLLAPSE_CHOICES, "collapses")
NEVER_WRITTEN = card_spec("kl/never-written", NEVER_QUESTION, NEVER_CHOICES, "zero")
CARDS = (BETA_TO_ZERO, NEVER_WRITTEN)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class KLPage(pn.viewable.Viewer):
    """log10 beta, the "superb" toggle and the two-reply gap; pi_ref and pi*, the frontier, the numbers."""

    log_beta = param.Number(default=-0.7, bounds=(-2.5, 1.0), step=0.05, label="KL coefficient β (log scale)")
    zero_best = param.Boolean(default=False, label="Give “superb” zero reference probability")
    gap = param.Number(default=1.0, bounds=(0.0, 5.0), step=0.1, label="Log-odds gap between the two replies")
    lm_source = param.Selector(default=source_label(LM_SOURCE), objects=[source_label(LM_SOURCE)],
                               label="Reference model, reward and replies (the live runs' own)")
    lm_prompts = FRONTIER.integer("prompts", "Held-out prompts M", bounds=(1, 64))
    lm_samples = FRONTIER.integer("samples", "Replies m sampled per prompt", bounds=(2, 1024))
    lm_seed = FRONTIER.integer("seed", "Seed of the samples", bounds=(0, 999_999))
    section = param.Selector(default="distributions", objects=["distributions", "frontier", "replies", "two", "live"], label="Section shown")

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
        self.collapse_card = PredictionCard.of(BETA_TO_ZERO, collapse_text(reply_space(False)[0]), self.guide)
        self.never_card = PredictionCard.of(NEVER_WRITTEN, never_written_text(reply_space(True)[0]), self.guide)
        self.lm_curve = ColumnDataSource({"beta": [], "kl": [], "reward": []}, name="sampled_frontier")
        self.lm_paths = ColumnDataSource({"xs": [], "ys": [], "colour": [], "label": []}, name="run_paths")
        self.lm_points = ColumnDataSource({k: [] for k in ("run", "step", "kl", "reward", "frontier_reward", "colour", "label")},
                                          name="run_evaluations")
        self.lm_status = pn.pane.HTML(sizing_mode="stretch_width", css_classes=["fl-lm-status"])
        self.lm_approx = pn.pane.HTML(sizing_mode="stretch_width")
        self.lm_summary = pn.pane.HTML(sizing_mode="stretch_width")
        self.lm_frontier: SampledFrontier | None = None
        # A job that ends on a message (no model, no reward) leaves its progress where it was.
        self.lm_job = JobView(self._show_frontier, self.start_frontier, seed=self.param.lm_seed,
                              completed=lambda: self.lm_frontier is not None)
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
        self.notice = sync_url(self, ["log_beta", "zero_best", "gap", "lm_source", *FRONTIER.names, "section"], query)
        self._update_beta()
        self._update_two()
        self._draw_runs()
        self.lm_status.object = "<p>Press Start to sample the frontier of this model and reward.</p>"

    @property
    def beta(self) -> float:
        return beta_of(self.log_beta)

    def _lm_changed(self, *events):
        # A frontier belongs to one model, reward and sample: a new setting drops the old one.
        self.lm_job.stop()
        self.lm_frontier = None
        self.lm_curve.data = {"beta": [], "kl": [], "reward": []}
        self.ceiling_rule.visible = False
        self.lm_job.fail("")
        self.lm_status.object = "<p>Press Start to sample the frontier with these settings.</p>"
        self._draw_runs()

    def start_frontier(self) -> None:
        """Sample and score on a worker thread; the plot fills in prompt batch by prompt batch."""
        self.lm_status.object = "<p>Loading the model and the reward…</p>"
        source = self.sources[self.lm_source]
        settings = FRONTIER.settings(self, **source)  # the source's model, reward and replies; M, m and the seed here
        self.lm_job.start(lambda: frontier_views(source, settings.prompts, settings.samples, settings.seed, self.cluster))

    def _show_frontier(self, view: FrontierView) -> None:
        if told_waiting(self.lm_job, view, "The sampling"):
            return
        if view.message:
            self.lm_job.fail(view.message)
            self.lm_status.object = "<p>Change the model or the reward above, then press Start again.</p>"
            return
        if view.frontier is None:
            self.lm_status.object = "<p>Loading the model and the reward…</p>"
            return
        f = self.lm_frontier = view.frontier
        with pn.io.hold():
            self.lm_curve.data = {"beta": f.beta, "kl": f.kl, "reward": f.reward}
            self.ceiling_rule.update(location=f.ceiling, visible=True)
            self.lm_job.controls.progress = view.done / view.total
            self.lm_status.object = sampled_html(view)
            self._draw_runs()

    def _draw_runs(self) -> None:
        """Each run of the chosen model and reward: its (exact KL, reward) evaluations in order of step."""
        source = self.sources[self.lm_source]
        paths, points = run_columns([r for r in self.runs if run_source(r) == source], self.lm_frontier)
        self.lm_paths.data, self.lm_points.data = paths, points
        kl, f = points["kl"], self.lm_frontier
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
        self.lm_job.run.stop()

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
        space, order, _ = reply_space(False)  # the rewards do not depend on the toggle: set once, with the figures
        self.rewards.data = {"rank": np.arange(len(order)), "r": space.r[order]}
        # Figures behind the question are made once it is answered (a builder, not the figures themselves).
        return self.collapse_card.guard(
            lambda: plot_with_downloads(distribution_figures(self.rewards, self.dist), {"distributions": self.dist},
                                        "The reference and the best policy, reply by reply"),
            note="the distributions",
        )

    def _frontier_section(self):
        return self.collapse_card.guard(
            lambda: plot_with_downloads(frontier_figure(self.frontier, self.current, self.best_rule), {"frontier": self.frontier, "current_beta": self.current},
                                        "The reward-KL frontier"),
            note="the frontier",
        )

    def _replies_section(self):
        return pn.Column(
            section_heading("The most likely replies under π*"),
            self.top_table,
            section_heading("A reply the reference never writes"),
            self.never_card,
            self.never_card.guard(self.zero, note="what π* gives those replies"),
            sizing_mode="stretch_width",
        )

    def _two_section(self):
        return pn.Column(
            section_heading("Two equally likely replies: the exchange rate e^(gap/β)"),
            slider(self.param.gap, width=320),
            self.two,
            plot_with_downloads(pair_figure(self.pair, PAIR), {"two_replies": self.pair}),
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
                pn.widgets.IntInput.from_param(self.param.lm_prompts, width=150, description=None),
                pn.widgets.IntInput.from_param(self.param.lm_samples, width=200, description=None),
            ),
            self.lm_job,
            self.lm_status,
            plot_with_downloads(lm_figure(self.lm_curve, self.lm_paths, self.lm_points, self.lm_x_range, self.ceiling_rule), {"sampled_frontier": self.lm_curve, "run_evaluations": self.lm_points}),
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
