"""What beta means: the best policy under reward minus beta KL, exactly (seed 000 section 6.12).

Maximising E[r] - beta KL(pi || pi_ref) has the closed form
pi*(y) = pi_ref(y) exp(r(y) / beta) / Z. On the 216 three-word replies of
engines/kl_optimal.py the page draws pi_ref and pi* side by side, the reward-KL
frontier that pi* traces as beta sweeps, the seed's two-reply exchange rate
exp(gap / beta), and a reply the reference never writes, which pi* never writes either.
"""

from __future__ import annotations

from pathlib import Path

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.jobs.cluster import Cluster
from app.jobs.cluster import current as current_cluster
from app.jobs.model_jobs import LM_SOURCE, live_runs, run_source
from app.pages.kl import text
from app.pages.kl.figures import (
    best_reachable,
    beta_format,
    beta_of,
    distribution_columns,
    distribution_figures,
    frontier_columns,
    frontier_figure,
    moving_rules,
    pair_columns,
    pair_figure,
    reply_space,
    two_replies_logp,
)
from app.pages.kl.jobs import SampledFrontierJob
from engines.kl_optimal import FrontierSettings, optimal_policy
from engines.lm.settings import LMFrontierSettings
from widgets.downloads import plot_with_downloads
from widgets.explorable import figure_first
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "What β means: the KL penalty"
SUMMARY = "The exact optimum of reward minus β·KL on 216 small replies: β is an exchange rate between reward and nats."

TWO_REPLIES = SettingsControls(FrontierSettings)
"""The two-reply exchange rate's gap (engines/kl_optimal.py)."""
FRONTIER = SettingsControls(LMFrontierSettings)
"""The live section's controls: the sampled frontier's M prompts, m replies and seed (engines/lm/settings.py)."""

BETA_TO_ZERO = card_spec("kl/beta-to-zero", text.COLLAPSE_QUESTION, text.COLLAPSE_CHOICES, "collapses")
NEVER_WRITTEN = card_spec("kl/never-written", text.NEVER_QUESTION, text.NEVER_CHOICES, "zero")
CARDS = (BETA_TO_ZERO, NEVER_WRITTEN)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class KLPage(pn.viewable.Viewer):
    """log10 beta, the "superb" toggle and the two-reply gap; pi_ref and pi*, the frontier, the numbers."""

    log_beta = param.Number(default=-0.7, bounds=(-2.5, 1.0), step=0.05, label="KL coefficient β (log scale)")
    zero_best = param.Boolean(default=False, label=text.ZERO_BEST_LABEL)
    gap = TWO_REPLIES.number("gap", "Log-odds gap between the two replies", bounds=(0.0, 5.0), step=0.1)
    lm_source = param.Selector(default=text.source_label(LM_SOURCE), objects=[text.source_label(LM_SOURCE)],
                               label="Reference model, reward and replies (the live runs' own)")
    lm_prompts = FRONTIER.integer("prompts", "Held-out prompts M", bounds=(1, 64))
    lm_samples = FRONTIER.integer("samples", "Replies m sampled per prompt", bounds=(2, 1024))
    lm_seed = FRONTIER.integer("seed", "Seed of the samples", bounds=(0, 999_999))
    section = param.Selector(default="distributions", objects=list(text.SECTIONS), label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, runs_dir: Path | str | None = None,
                 cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.cluster = cluster or current_cluster()  # the frontier's sampling is a model job, as a run is
        self.runs = live_runs(runs_dir)
        self.sources = {text.source_label(source): source for source in [LM_SOURCE, *map(run_source, self.runs)]}
        self.param.lm_source.objects = list(self.sources)
        self.dist = ColumnDataSource(name="distributions")
        self.frontier = ColumnDataSource(name="frontier")
        self.current = ColumnDataSource(name="current_beta")
        self.pair = ColumnDataSource(name="two_replies")
        # The figures are built with their sections, on first view; what the updates move is made here.
        self.best_rule, self.ceiling_rule = moving_rules()
        self.summary = Summary()
        self.metrics = MetricRow(text.METRICS)
        self.top_table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[text.CSS])
        self.two = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[text.CSS])
        self.zero = pn.pane.HTML(sizing_mode="stretch_width")
        self.guide = session_guide()
        self.collapse_card = PredictionCard.of(BETA_TO_ZERO, text.collapse_text(reply_space(False)[0]), self.guide)
        self.never_card = PredictionCard.of(NEVER_WRITTEN, text.never_written_text(reply_space(True)[0]), self.guide)
        self.sampled = SampledFrontierJob(lambda: self.sources[self.lm_source],
                                          lambda: FRONTIER.settings(self, **self.sources[self.lm_source]),
                                          self.runs, self.cluster, self.ceiling_rule, self.param.lm_seed)
        # Each tab is built by its method, _<section>_section, the first time it is shown.
        self.sections = LazySections(self.param.section, {section: (title, getattr(self, f"_{section}_section"))
                                                          for section, title in text.SECTIONS.items()})
        self._update_space()  # the link's values, applied next, update what depends on them
        self.param.watch(self._changed, ["log_beta", "zero_best", "gap"])
        self.notice = sync_url(self, query=query)
        self._update_beta()
        self._update_two()
        self.sampled.draw_runs()
        self.param.watch(lambda *_: self.sampled.changed(), ["lm_source", *FRONTIER.names])

    @property
    def beta(self) -> float:
        return beta_of(self.log_beta)

    def close(self) -> None:
        """The tab closed: stop sampling."""
        self.sampled.job.stop()

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
        self.frontier.data = frontier_columns(self.sweep)
        self.best_rule.location = best_reachable(self.space)

    def _update_beta(self):
        beta, space = self.beta, self.space
        policy = optimal_policy(space, beta)
        self.dist.data = dist = distribution_columns(space, self.order, policy)
        self.current.data = frontier_columns(policy)
        self.metrics.update(beta=beta, reward=policy.reward[0], kl=policy.kl[0], entropy=policy.entropy[0],
                            objective=policy.objective[0], top=dist["pi"].max())
        self.summary.show(text.summary_text(beta, space, policy))
        self.top_table.object = text.top_table_html(space, policy)
        self.zero.object = text.zero_html(self.zero_best, beta, space, policy, self.sweep)

    def _update_two(self):
        logp = two_replies_logp(self.gap, self.beta)
        self.pair.data = pair_columns(logp)
        self.two.object = text.two_replies_html(self.gap, self.beta, logp)

    def _distributions_section(self):
        # Figures behind the question are made once it is answered (a builder, not the figures themselves).
        return self.collapse_card.guard(lambda: plot_with_downloads(
            distribution_figures(self.dist), {"distributions": self.dist}, text.DISTRIBUTIONS_HEADING), note="the distributions")

    def _frontier_section(self):
        return self.collapse_card.guard(lambda: plot_with_downloads(
            frontier_figure(self.frontier, self.current, self.best_rule), {"frontier": self.frontier, "current_beta": self.current},
            text.SECTIONS["frontier"]), note="the frontier")

    def _replies_section(self):
        return pn.Column(
            section_heading(text.TOP_HEADING),
            self.top_table,
            section_heading(text.NEVER_HEADING),
            self.never_card,
            self.never_card.guard(self.zero, note="what π* gives those replies"),
            sizing_mode="stretch_width",
        )

    def _two_section(self):
        return pn.Column(
            section_heading(text.TWO_HEADING),
            slider(self.param.gap, width=320),
            self.two,
            plot_with_downloads(pair_figure(self.pair), {"two_replies": self.pair}),
            sizing_mode="stretch_width",
        )

    def _live_section(self):
        return self.sampled.view(pn.Row(pn.widgets.Select.from_param(self.param.lm_source, width=520),
                                        pn.widgets.IntInput.from_param(self.param.lm_prompts, width=150, description=None),
                                        pn.widgets.IntInput.from_param(self.param.lm_samples, width=200, description=None)))

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(text.INTRO, text.EQUATION, text.NOTICE, text.WHY), cards=(self.collapse_card,), notices=(self.notice,),
            controls=(slider(self.param.log_beta, width=300, format=beta_format()),
                      pn.widgets.Checkbox.from_param(self.param.zero_best)),
            figures=(self.sections,),
            more=(self.summary, self.metrics),
        )

def page(query: dict[str, str] | None = None) -> KLPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return KLPage(query=query)
