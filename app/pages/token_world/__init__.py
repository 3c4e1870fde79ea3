"""Token world and GAE: exact values, TD errors and the lambda trade-off, seed 000 sections 6.8 to 6.10.

A reply is T tokens, A or B; the state is (t, k), the position and the A's so far, and
the only reward, 1 if the reply has at least `threshold` A's, comes after the last token.
Everything is exact: V by a backward recursion, the advantage A = Q - V, and GAE's
squared error against A split into bias^2 and variance by enumerating all 2^T replies.
A Monte Carlo check of that split and the training comparison (REINFORCE against GAE
critics) run on worker threads and stream into their plots.
"""

from __future__ import annotations

import secrets

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.token_world.figures import (
    SLIGHT_NOISE,
    critic_columns,
    decomposition_columns,
    episode_columns,
    episode_path,
    heat_map,
    lambda_panels,
    show_heat_axes,
    show_lambda_axes,
    start_readings,
    value_cells,
)
from app.pages.token_world.jobs import MonteCarloCheck, TrainingComparison
from app.pages.token_world.text import (
    DECOMPOSITION,
    EPISODE_CSS,
    EPISODE_HEADING,
    EQUATION,
    INTRO,
    LAMBDA_HEADING,
    LAMBDA_INTRO,
    NOTICE,
    PREDICT,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    READINGS,
    SECTIONS,
    THRESHOLD_CLAMPED,
    WHY,
    episode_note,
    episode_table_html,
    lambda_zero_text,
    summary_text,
)
from app.serving import limits
from app.serving.results_cache import RESULTS
from engines.token_world import TokenWorldSettings, gae_decomposition_exact, one_episode, reply_tokens, token_values
from engines.token_world_training import TokenWorldTrainingSettings
from widgets.downloads import csv_download, plot_with_downloads
from widgets.equation_card import equation
from widgets.explorable import figure_first
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import CappedSlider, labelled_buttons, slider
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Token world and GAE"
SUMMARY = "A six-token world where every value is exact: TD errors, GAE and the bias-variance trade-off of lambda."
READY_AHEAD = True

WORLD = SettingsControls(TokenWorldSettings)
"""The world's, the critics' and the Monte Carlo check's controls (engines/token_world.py)."""
TRAINING = SettingsControls(TokenWorldTrainingSettings)
"""The training's controls (engines/token_world_training.py); its T and threshold are the world's."""
MAX_T = 12
"""Longest reply on the page: exact enumeration of all 2^12 = 4096 replies answers a slider in well under 0.1 s."""
LAMBDA_GRID = tuple(round(x, 2) for x in np.linspace(0.0, 1.0, 21))
"""Lambdas of the exact bias^2 / variance curves, 0 to 1 in steps of 0.05 (the seed's eight among them)."""
MC_LAMBDAS = TokenWorldSettings.lambdas
"""The eight lambdas of the seed's Monte Carlo table, the points of the Monte Carlo check."""
REWARD_SHIFT = 5.0
"""The seed's shift: every episode gets +5 (5 for failure, 6 for success)."""

WORLD_VIEW = {"T", "threshold", "p_a", "gamma"}  # what the heat map and the readings follow
CRITICS = WORLD_VIEW | {"critic_noise", "seed"}  # what the λ curves follow: a Monte Carlo check made before is stale
EPISODE = CRITICS | {"lam", "reply", "episode_seed"}  # what the chosen λ's points, the episode and the summary follow

BEST_LAMBDA = card_spec("token-world/best-lambda", PREDICT, PREDICT_CHOICES, "0")
CARDS = (BEST_LAMBDA,)
"""The page's prediction card (the room's tally lists it)."""


class TokenWorldPage(pn.viewable.Viewer):
    """T, threshold, P(A), lambda, critic noise, gamma; the V heat map, one episode, the lambda trade-off, training."""

    T = WORLD.integer("T", "Tokens per reply T", bounds=(2, MAX_T))
    threshold = WORLD.integer("threshold", "A's needed for reward 1 (threshold)", bounds=(0, MAX_T))
    p_a = WORLD.number("p_a", "P(A), the policy's chance of writing A", bounds=(0.05, 0.95), step=0.05)
    lam = WORLD.number("lam", "GAE λ", bounds=(0.0, 1.0), step=0.05)
    critic_noise = WORLD.number("episode_noise", "Critic noise sd (value units)", bounds=(0.0, 0.5), step=0.01,
                                doc="Standard deviation of the rough critic's noise: the third panel's and the episode's; >= 0.")
    gamma = WORLD.number("gamma", "Discount γ", bounds=(0.5, 1.0), step=0.01)
    seed = WORLD.integer("seed", "Critic seed (its noise z)", bounds=(0, 999_999))
    reply = param.Selector(default="chapter", objects={"the chapter's reply ABABAA": "chapter", "sampled from the policy": "sampled"}, label="Episode")
    episode_seed = param.Integer(default=0, bounds=(0, 999_999), label="Episode seed")
    episodes = WORLD.integer("episodes", "Monte Carlo episodes", bounds=(1_000, 100_000), step=1_000)
    shift = param.Boolean(default=False, label=f"Add +{REWARD_SHIFT:g} to every reward")  # the engine's shift: 0 or this
    seeds = TRAINING.integer("seeds", "Training seeds", bounds=(1, 200))
    steps = TRAINING.integer("steps", "Updates per run", bounds=(10, 300), step=10)
    train_seed = TRAINING.integer("seed", "Training seed", bounds=(0, 999_999))
    section = param.Selector(default="values", objects=list(SECTIONS), label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        names = ("values", "episode_path", "episode", "lambda_curves", "chosen_lambda")
        self.cells, self.path, self.episode, self.curves, self.at_lam = (ColumnDataSource(name=n) for n in names)
        self.heat, self.panels, self.lam_rules = None, [], []  # the figures are built with their sections, on first view
        self.summary, self.metrics = Summary(), MetricRow(READINGS)
        self.table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[EPISODE_CSS])
        self.episode_note, self.why = (pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10)) for _ in range(2))
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(BEST_LAMBDA, PREDICT_EXPLANATION, self.guide)
        self.threshold_cap = CappedSlider(self.param.threshold, self.param.T, THRESHOLD_CLAMPED, width=300)
        compute_seconds = limits.current().compute_seconds
        self.mc = MonteCarloCheck(lambda: self.world_settings(MC_LAMBDAS), lambda: self.critic_noise, compute_seconds)
        self.training = TrainingComparison(self.training_settings, self.param.train_seed, compute_seconds)
        builders = {"values": self._values_section, "episode": self._episode_section,
                    "lambda": self._lambda_section, "training": self._training_section}
        self.sections = LazySections(self.param.section, {key: (SECTIONS[key], build) for key, build in builders.items()})
        self.param.watch(self._changed, list(EPISODE | {"shift", *TRAINING.names}))
        self.notice = sync_url(self, query=query)  # a link's threshold above its T is clamped here, by _changed
        self.threshold_cap.slider.end = self.T
        self._update_world()
        self._update_critics()
        self._update_lambda()
        self.training.show_note()

    def world_settings(self, lambdas=LAMBDA_GRID) -> TokenWorldSettings:
        """The engine's settings for the current controls, with `lambdas` those of the bias² / variance table."""
        return WORLD.settings(self, lambdas=tuple(lambdas), critic_noises=(SLIGHT_NOISE, self.critic_noise),
                              tokens=reply_tokens(self.reply, self.episode_seed, self.T, self.p_a))

    def training_settings(self) -> TokenWorldTrainingSettings:
        """The training's settings for the current controls: the world's T and threshold, a report at the last update."""
        last, defaults = self.steps, TokenWorldTrainingSettings  # the seed's table: its reports before the last update, and the last
        return TRAINING.settings(self, T=self.T, threshold=self.threshold, shift=REWARD_SHIFT if self.shift else 0.0,
                                 report_at=tuple(u for u in defaults.report_at if u < last) + (last,), spread_at=min(defaults.spread_at, last))

    # ------------------------------------------------------------------ updates

    def _changed(self, *events):
        if self.threshold_cap.clamping:
            return
        names = {e.name for e in events}
        # One batch per slider step: the plots' data first, the text after it.
        with one_update():
            if names & {"T", "threshold"} and self.threshold_cap.apply():
                names.add("threshold")
            if names & WORLD_VIEW:
                self._update_world()
            if names & CRITICS:
                self._update_critics()
                self.mc.outdated()
            if names & EPISODE:
                self._update_lambda()
            if names & {"T", "threshold", "shift", *TRAINING.names}:
                self.training.changed()

    def _update_world(self):
        v = RESULTS.get(token_values, self.T, self.threshold, self.p_a, self.gamma)
        self.cells.data = value_cells(v.V)
        if self.heat is not None:
            show_heat_axes(self.heat, self.T, self.p_a, self.threshold)
        self.metrics.update(**start_readings(v))
        self.why.object = lambda_zero_text(self.T, self.threshold, self.p_a, self.gamma)

    def _update_critics(self):
        self.curves.data = decomposition_columns(RESULTS.get(gae_decomposition_exact, self.world_settings()), self.critic_noise)
        self._show_lambda_axes()

    def _update_lambda(self):
        settings = self.world_settings(lambdas=(self.lam,))
        d = RESULTS.get(gae_decomposition_exact, settings)
        self.at_lam.data = decomposition_columns(d, self.critic_noise)
        self._show_lambda_axes()
        e = RESULTS.get(one_episode, settings)
        self.path.data, self.episode.data = episode_path(e), episode_columns(e)
        self.table.object = episode_table_html(e, self.lam, self.gamma, self.critic_noise)
        self.episode_note.object = episode_note(self.reply, self.T, self.episode_seed, self.p_a)
        values = RESULTS.get(token_values, self.T, self.threshold, self.p_a, self.gamma)
        columns = critic_columns(d.critic_noises, self.critic_noise)
        self.summary.show(summary_text(self.T, self.threshold, self.p_a, self.lam, self.critic_noise, values, d, columns))

    def _show_lambda_axes(self) -> None:
        if self.panels:  # built with their section
            show_lambda_axes(self.panels, self.lam_rules, self.critic_noise, self.lam)

    def new_episode(self) -> None:
        """Sample a fresh reply: a new episode seed, drawn at random."""
        self.param.update(reply="sampled", episode_seed=secrets.randbelow(1_000_000))

    def close(self) -> None:
        """Stop the Monte Carlo check and the training (the browser tab closed)."""
        self.mc.job.stop()
        self.training.job.stop()

    # ------------------------------------------------------------------ layout

    def _values_section(self):
        self.heat = heat_map(self.cells, self.path)
        show_heat_axes(self.heat, self.T, self.p_a, self.threshold)
        return plot_with_downloads(self.heat, {"values": self.cells}, "Exact values V(t, k); blank cells cannot be reached (k > t)")

    def _episode_section(self):
        new_episode = pn.widgets.Button(label="New episode", color="primary", width=120, align="end")
        new_episode.on_click(lambda _event: self.new_episode())
        return pn.Column(
            section_heading(EPISODE_HEADING),
            pn.Row(labelled_buttons(self.param.reply), pn.widgets.IntInput.from_param(self.param.episode_seed, width=140), new_episode),
            self.episode_note,
            self.table,
            pn.Row(csv_download(self.episode, "episode.csv", "CSV: episode")),
            sizing_mode="stretch_width",
        )

    def _lambda_section(self):
        grid, self.panels, self.lam_rules = lambda_panels(self.curves, self.mc.points, self.at_lam)
        self._show_lambda_axes()
        return self.predict_card.guard(
            section_heading(LAMBDA_HEADING),
            pn.pane.Markdown(LAMBDA_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            equation(DECOMPOSITION),
            plot_with_downloads(grid, {"lambda_curves": self.curves, "chosen_lambda": self.at_lam, "monte_carlo": self.mc.points}),
            self.mc.job.view(pn.widgets.IntInput.from_param(self.param.episodes, width=180, description=None)),
            self.mc.status,
            note="the bias and variance of GAE against λ",
        )

    def _training_section(self):
        return self.training.view(pn.Row(
            pn.widgets.Checkbox.from_param(self.param.shift, align="center"),
            pn.widgets.IntInput.from_param(self.param.seeds, width=140, description=None),
            pn.widgets.IntInput.from_param(self.param.steps, width=140, description=None),
        ))

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.predict_card,), notices=(self.notice,),
            controls=(slider(self.param.T, width=300), self.threshold_cap.slider, slider(self.param.p_a, width=300), self.threshold_cap.notice),
            figures=(self.sections,),
            more=(
                slider(self.param.lam, width=300), slider(self.param.critic_noise, width=300), slider(self.param.gamma, width=300),
                seed_control(self.param.seed),
                self.summary,
                self.metrics,
                self.predict_card.guard(self.why, placeholder=False),
            ),
        )

def page(query: dict[str, str] | None = None) -> TokenWorldPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return TokenWorldPage(query=query)
