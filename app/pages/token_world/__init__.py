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

from app.serving import limits
from app.pages.token_world.figures import (
    SLIGHT_NOISE,
    critic_columns,
    decomposition_columns,
    episode_columns,
    heat_map,
    lambda_panels,
    show_heat_axes,
    show_lambda_axes,
    training_curve,
    training_curve_data,
    value_cells,
)
from app.pages.token_world.text import (
    DECOMPOSITION,
    EPISODE_CSS,
    EQUATION,
    INTRO,
    LAMBDA_INTRO,
    MC_STALE,
    NOTICE,
    PREDICT,
    READINGS,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    THRESHOLD_CLAMPED,
    TRAINING_INTRO,
    WHY,
    episode_note,
    episode_table_html,
    lambda_zero_text,
    mc_checked_text,
    mc_sampling_text,
    summary_text,
    training_note,
    training_table,
)
from app.serving.results_cache import RESULTS
from engines.token_world import (
    TokenWorldSettings,
    gae_decomposition_exact,
    mc_steps,
    one_episode,
    reply_tokens,
    token_values,
)
from engines.token_world_training import (
    TokenWorldTrainingSettings,
    summarise_training,
    training_stream,
)
from widgets.downloads import csv_download, plot_with_downloads
from widgets.equation_card import equation, equation_card
from widgets.headings import section_heading
from widgets.job_view import JobView
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.sections import LazySections
from widgets.sliders import CappedSlider, slider
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Token world and GAE"
SUMMARY = "A six-token world where every value is exact: TD errors, GAE and the bias-variance trade-off of lambda."
READY_AHEAD = True

MAX_T = 12
"""Longest reply on the page: exact enumeration of all 2^12 = 4096 replies answers a slider in well under 0.1 s."""
LAMBDA_GRID = tuple(round(x, 2) for x in np.linspace(0.0, 1.0, 21))
"""Lambdas of the exact bias^2 / variance curves, 0 to 1 in steps of 0.05 (the seed's eight among them)."""
MC_LAMBDAS = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.0)
"""The eight lambdas of the seed's Monte Carlo table, the points of the Monte Carlo check."""
TRAINING_LAMBDAS = (0.0, 0.5, 0.95, 1.0)
"""The GAE rows of the seed's training table."""
REWARD_SHIFT = 5.0
"""The seed's shift: every episode gets +5 (5 for failure, 6 for success)."""
REPORT_AT = (10, 25, 50, 150)
"""Updates after which the seed's training table reports the success probability."""


BEST_LAMBDA = card_spec("token-world/best-lambda", PREDICT, PREDICT_CHOICES, "0")
CARDS = (BEST_LAMBDA,)
"""The page's prediction card (the room's tally lists it)."""


class TokenWorldPage(pn.viewable.Viewer):
    """T, threshold, P(A), lambda, critic noise, gamma; the V heat map, one episode, the lambda trade-off, training."""

    T = param.Integer(default=6, bounds=(2, MAX_T), label="Tokens per reply T")
    threshold = param.Integer(default=4, bounds=(0, MAX_T), label="A's needed for reward 1 (threshold)")
    p_a = param.Number(default=0.6, bounds=(0.05, 0.95), step=0.05, label="P(A), the policy's chance of writing A")
    lam = param.Number(default=0.95, bounds=(0.0, 1.0), step=0.05, label="GAE λ")
    critic_noise = param.Number(default=0.15, bounds=(0.0, 0.5), step=0.01, label="Critic noise sd (value units)")
    gamma = param.Number(default=1.0, bounds=(0.5, 1.0), step=0.01, label="Discount γ")
    seed = param.Integer(default=0, bounds=(0, 999_999), label="Critic seed (its noise z)")
    reply = param.Selector(default="chapter", objects={"the chapter's reply ABABAA": "chapter", "sampled from the policy": "sampled"}, label="Episode")
    episode_seed = param.Integer(default=0, bounds=(0, 999_999), label="Episode seed")
    episodes = param.Integer(default=100_000, bounds=(1_000, 100_000), step=1_000, label="Monte Carlo episodes")
    shift = param.Boolean(default=False, label=f"Add +{REWARD_SHIFT:g} to every reward")
    seeds = param.Integer(default=100, bounds=(1, 200), label="Training seeds")
    steps = param.Integer(default=150, bounds=(10, 300), step=10, label="Updates per run")
    train_seed = param.Integer(default=0, bounds=(0, 999_999), label="Training seed")
    section = param.Selector(default="values", objects=["values", "episode", "lambda", "training"], label="Section shown")

    URL_NAMES = ["T", "threshold", "p_a", "lam", "critic_noise", "gamma", "seed", "reply", "episode_seed", "episodes", "shift", "seeds", "steps", "train_seed", "section"]

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.cells = ColumnDataSource(name="values")
        self.path = ColumnDataSource(name="episode_path")
        self.episode = ColumnDataSource(name="episode")
        self.curves = ColumnDataSource(name="lambda_curves")
        self.mc = ColumnDataSource(decomposition_columns(None, ()), name="monte_carlo")
        self.at_lam = ColumnDataSource(name="chosen_lambda")
        self.heat = None  # the figures are built with their sections, on first view
        self.panels: list = []
        self.lam_rules: list = []
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.1em"})
        self.metrics = MetricRow(READINGS)
        self.table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[EPISODE_CSS])
        self.episode_note = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))
        self.why = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(BEST_LAMBDA, PREDICT_EXPLANATION, self.guide)
        self.threshold_cap = CappedSlider(self.param.threshold, self.param.T, THRESHOLD_CLAMPED, width=300)
        self.mc_status = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))
        self.mc_job = JobView(self._apply_mc, self.start_mc, time_limit=limits.current().compute_seconds)
        self.training = training_curve(self._training_steps, self._training_data, TRAINING_LAMBDAS, self.param.train_seed,
                                       limits.current().compute_seconds)
        self.training_note = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))
        self.training_result = pn.pane.Markdown(sizing_mode="stretch_width")
        self._run_settings: TokenWorldTrainingSettings | None = None  # the last run's, fixed as it starts
        self.training.controls.param.watch(self._training_started, "running", onlychanged=False)
        self.sections = LazySections(self.param.section, {
            "values": ("Exact values V(t, k)", self._values_section),
            "episode": ("One episode", self._episode_section),
            "lambda": ("GAE: bias² and variance against λ", self._lambda_section),
            "training": ("Training against GAE critics", self._training_section),
        })
        self.param.watch(self._changed, ["T", "threshold", "p_a", "lam", "critic_noise", "gamma", "seed", "reply", "episode_seed"])
        self.param.watch(self._training_changed, ["T", "threshold", "shift", "seeds", "steps", "train_seed"])
        self.notice = sync_url(self, self.URL_NAMES, query)  # a link's threshold above its T is clamped here
        self.threshold_cap.slider.end = self.T
        self._update_world()
        self._update_critics()
        self._update_lambda()
        self._show_training_note()

    # ------------------------------------------------------------------ figures

    def _show_heat_axes(self) -> None:
        """The heat map's axes fit T and its title states the formula with the current P(A) and threshold."""
        if self.heat is not None:
            show_heat_axes(self.heat, self.T, self.p_a, self.threshold)

    def _lambda_panels(self):
        grid, self.panels, self.lam_rules = lambda_panels(self.curves, self.mc, self.at_lam)
        self._show_lambda_axes()
        return grid

    def _show_lambda_axes(self) -> None:
        """The third panel's title names the slider's noise; the dashed rule marks the chosen λ."""
        if self.panels:
            show_lambda_axes(self.panels, self.lam_rules, self.critic_noise, self.lam)

    # ------------------------------------------------------------------ updates

    def world_settings(self, lambdas=LAMBDA_GRID) -> TokenWorldSettings:
        """The engine's settings for the current controls."""
        return TokenWorldSettings(
            T=self.T,
            threshold=self.threshold,
            p_a=self.p_a,
            gamma=self.gamma,
            lambdas=tuple(lambdas),
            critic_noises=(SLIGHT_NOISE, self.critic_noise),
            episodes=self.episodes,
            seed=self.seed,
            tokens=reply_tokens(self.reply, self.episode_seed, self.T, self.p_a),
            lam=self.lam,
            episode_noise=self.critic_noise,
        )

    def _changed(self, *events):
        if self.threshold_cap.clamping:
            return
        names = {e.name for e in events}
        # One batch per slider step: the plots' data first, the text after it.
        with one_update():
            if names & {"T", "threshold"} and self.threshold_cap.apply():
                names.add("threshold")
            if names & {"T", "threshold", "p_a", "gamma"}:
                self._update_world()
            if names & {"T", "threshold", "p_a", "gamma", "critic_noise", "seed"}:
                self._update_critics()
                self._restart_or_clear_mc()
            self._update_lambda()

    def _update_world(self):
        T = self.T
        v = RESULTS.get(token_values, T, self.threshold, self.p_a, self.gamma)
        self.cells.data = value_cells(v.V)
        self._show_heat_axes()
        self.metrics.update(V=v.V[0, 0], QA=v.Q[0, 0, 1], QB=v.Q[0, 0, 0], AA=v.A[0, 0, 1], AB=v.A[0, 0, 0])
        self.why.object = lambda_zero_text(T, self.threshold, self.p_a, self.gamma)

    def _update_critics(self):
        d = RESULTS.get(gae_decomposition_exact, self.world_settings())
        self.curves.data = decomposition_columns(d, critic_columns(d.critic_noises, self.critic_noise))
        self._show_lambda_axes()

    def _update_lambda(self):
        settings = self.world_settings(lambdas=(self.lam,))
        d = RESULTS.get(gae_decomposition_exact, settings)
        columns = critic_columns(d.critic_noises, self.critic_noise)
        self.at_lam.data = decomposition_columns(d, columns)
        self._show_lambda_axes()
        e = RESULTS.get(one_episode, settings)
        self.path.data = {"t": np.arange(self.T), "k": e.k}
        self.episode.data = episode_columns(e)
        self.table.object = episode_table_html(e, self.lam, self.gamma, self.critic_noise)
        self.episode_note.object = episode_note(self.reply, self.T, self.episode_seed, self.p_a)
        values = RESULTS.get(token_values, self.T, self.threshold, self.p_a, self.gamma)
        self.summary.object = f'<p class="fl-summary">{summary_text(self.T, self.threshold, self.p_a, self.lam, self.critic_noise, values, d, columns)}</p>'

    def new_episode(self) -> None:
        """Sample a fresh reply: a new episode seed, drawn at random."""
        self.param.update(reply="sampled", episode_seed=secrets.randbelow(1_000_000))

    # ------------------------------------------------------------------ Monte Carlo check

    def start_mc(self) -> None:
        """Check the exact decomposition by Monte Carlo, off the UI thread; restarting cancels a run under way."""
        self._clear_mc()
        settings = self.world_settings(lambdas=MC_LAMBDAS)
        self.mc_status.object = mc_sampling_text(settings.episodes, settings.seed)
        self.mc_job.start(lambda: mc_steps(settings))

    def _restart_or_clear_mc(self) -> None:
        if self.mc_job.run.running:
            self.start_mc()  # a newer setting cancels the stale check
        elif len(self.mc.data["lam"]):
            self._clear_mc()
            self.mc_status.object = MC_STALE

    def _clear_mc(self) -> None:
        self.mc.data = decomposition_columns(None, ())

    def _apply_mc(self, snapshot) -> None:
        n, target, d = snapshot
        exact = RESULTS.get(gae_decomposition_exact, self.world_settings(lambdas=MC_LAMBDAS))
        columns = critic_columns(d.critic_noises, self.critic_noise)
        self.mc.data = decomposition_columns(d, columns)
        gap = float(np.abs(d.total[:, columns] - exact.total[:, columns]).max())
        self.mc_job.controls.progress = n / target
        self.mc_status.object = mc_checked_text(n, self.seed, gap)

    # ------------------------------------------------------------------ training

    def training_settings(self) -> TokenWorldTrainingSettings:
        steps = self.steps
        return TokenWorldTrainingSettings(
            T=self.T,
            threshold=self.threshold,
            seeds=self.seeds,
            steps=steps,
            lambdas=TRAINING_LAMBDAS,
            shift=REWARD_SHIFT if self.shift else 0.0,
            seed=self.train_seed,
            report_at=tuple(u for u in REPORT_AT if u < steps) + (steps,),
            spread_at=min(25, steps),
        )

    def _training_started(self, event) -> None:
        """On the session's thread, as a run starts: fix its settings and say what it trains."""
        if not event.new:
            return
        self._run_settings = self.training_settings()
        self.training_result.object = ""
        self._show_training_note()

    def _training_steps(self):
        """The run's generator; called on the worker thread, so it only reads the settings fixed at the start."""
        return training_stream(self._run_settings)

    def _training_data(self, snapshot) -> dict:
        """The curves' columns from an accumulated snapshot; the seed's table once the run is complete."""
        methods, success, steps = snapshot
        data = training_curve_data(success, TRAINING_LAMBDAS)
        if success.shape[1] == steps + 1:
            settings = self._run_settings
            self.training_result.object = training_table(summarise_training(methods, success, settings), settings)
        return data

    def _training_changed(self, *events):
        if self.training.run.running:
            self.training.start()  # a newer setting cancels the stale run
        else:
            self._show_training_note()

    def _show_training_note(self) -> None:
        self.training_note.object = training_note(self._run_settings, self.training_settings())

    def close(self) -> None:
        """Stop the Monte Carlo check and the training (the browser tab closed)."""
        self.mc_job.run.stop()
        self.training.stop()

    # ------------------------------------------------------------------ layout

    def _values_section(self):
        self.heat = heat_map(self.cells, self.path)
        self._show_heat_axes()
        return plot_with_downloads(self.heat, {"values": self.cells}, "Exact values V(t, k); blank cells cannot be reached (k > t)")

    def _episode_section(self):
        new_episode = pn.widgets.Button(label="New episode", color="primary", width=120, align="end")
        new_episode.on_click(lambda _event: self.new_episode())
        return pn.Column(
            section_heading("One episode, and what each estimator says about its tokens"),
            pn.Row(
                pn.widgets.RadioButtonGroup.from_param(self.param.reply, align="end"),
                pn.widgets.IntInput.from_param(self.param.episode_seed, width=140),
                new_episode,
            ),
            self.episode_note,
            self.table,
            pn.Row(csv_download(self.episode, "episode.csv", "CSV: episode")),
            sizing_mode="stretch_width",
        )

    def _lambda_section(self):
        return self.predict_card.guard(
            section_heading("Bias² and variance of GAE against λ, for three critics"),
            pn.pane.Markdown(LAMBDA_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            equation(DECOMPOSITION),
            plot_with_downloads(self._lambda_panels(), {"lambda_curves": self.curves, "chosen_lambda": self.at_lam, "monte_carlo": self.mc}),
            self.mc_job.view(pn.widgets.IntInput.from_param(self.param.episodes, width=180)),
            self.mc_status,
            note="the bias and variance of GAE against λ",
        )

    def _training_section(self):
        return pn.Column(
            pn.pane.Markdown(TRAINING_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            pn.Row(
                pn.widgets.Checkbox.from_param(self.param.shift, align="center"),
                pn.widgets.IntInput.from_param(self.param.seeds, width=140),
                pn.widgets.IntInput.from_param(self.param.steps, width=140),
            ),
            self.training_note,
            self.training,
            self.training_result,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        controls = pn.Column(
            pn.Row(slider(self.param.T, width=300), self.threshold_cap.slider, slider(self.param.p_a, width=300)),
            pn.Row(slider(self.param.lam, width=300), slider(self.param.critic_noise, width=300), slider(self.param.gamma, width=300)),
            self.threshold_cap.notice,
            seed_control(self.param.seed),
        )
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=self.predict_card),
            controls,
            self.summary,
            self.metrics,
            self.predict_card.guard(self.why, placeholder=False),
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None) -> TokenWorldPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return TokenWorldPage(query=query)
