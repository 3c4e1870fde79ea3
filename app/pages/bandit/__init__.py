"""The four-armed bandit: REINFORCE, the variance of its estimate, and baselines (seed 000 sections 6.4 to 6.7).

One prompt has four replies (arms); the policy is a softmax over four logits theta and
reply k earns a rating r = mu_k + sd * eps. The one-sample REINFORCE estimate is
g = (r - b)(onehot(a) - pi). Because J = sum_k pi_k mu_k is a small sum, the exact
gradient, the exact total variance of g for any constant b and the best constant b*
are known; the page sets them beside a Monte Carlo run, draws the spread of one
coordinate of g with and without b, and trains many seeds with the three baselines
of section 6.7 on a worker thread, the curves filling in as it goes (jobs.py).
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.bandit.figures import (
    curve_columns,
    estimate_numbers,
    estimate_plots,
    gradient_columns,
    histogram_plot,
    marks_columns,
    rule,
    sweep_columns,
)
from app.pages.bandit.jobs import BanditTraining
from app.pages.bandit.text import (
    ARM_CHOICES,
    ARM_EXPLANATION,
    ARM_QUESTION,
    EQUATION,
    ESTIMATE_HEADING,
    INTRO,
    METRICS,
    NOTICE,
    POLICY_CHOICES,
    POLICY_HEADING,
    PREDICT,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    SECTIONS,
    WHY,
    summary_text,
)
from app.serving.results_cache import RESULTS
from engines.bandit import (
    MEANS,
    BanditSettings,
    BanditTrainingSettings,
    arm_sums_of_noise,
    coordinate_histograms,
    exact_gradient,
    expected_return,
    noise_sums,
    one_sample_arms,
    optimal_baseline,
    summarise_sums,
)
from widgets.explorable import figure_first
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import labelled_buttons, slider
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Bandit: REINFORCE and baselines"
SUMMARY = "Four replies, noisy ratings: the REINFORCE estimate is right on average, a baseline takes away most of its noise."
READY_AHEAD = True

K = len(MEANS)
"""Number of arms (replies), as in the seed."""
SWEEP = BanditSettings().b
"""The constant baselines of the seed's sweep (section 6.7), measured by Monte Carlo."""
BINS = 80
"""Histogram bins of the one-sample estimates."""
MONTE_CARLO = SettingsControls(BanditSettings)
"""The Monte Carlo check's controls (engines/bandit.py)."""
TRAINING = SettingsControls(BanditTrainingSettings)
"""The training run's controls (engines/bandit.py); they and the arm means restart it when they change."""
ARM_MEANS = tuple(f"mu{k}" for k in range(1, K + 1))
"""The controls of the arms' mean ratings."""
ANALYTIC = {*ARM_MEANS, "sd", "prefer", "logit", "samples", "seed"}
"""Controls that change the samples (and so every analytic panel)."""


def theta_of(prefer: int, logit: float) -> tuple[float, ...]:
    """The logits: all 0 (uniform), or theta_k = logit for the preferred arm k (numbered from 1)."""
    return tuple(logit if k == prefer else 0.0 for k in range(1, K + 1))


BASELINE_EFFECT = card_spec("bandit/baseline-effect", PREDICT, PREDICT_CHOICES, "spread")
WHICH_ARM = card_spec("bandit/which-arm", ARM_QUESTION, ARM_CHOICES, "most")
CARDS = (BASELINE_EFFECT, WHICH_ARM)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class BanditPage(pn.viewable.Viewer):
    """Arm means, noise, policy, baseline and samples; gradient, variance, histogram and training panels."""

    mu1 = param.Number(default=MEANS[0], bounds=(0.0, 10.0), step=0.5, label="Mean rating μ1")
    mu2 = param.Number(default=MEANS[1], bounds=(0.0, 10.0), step=0.5, label="Mean rating μ2")
    mu3 = param.Number(default=MEANS[2], bounds=(0.0, 10.0), step=0.5, label="Mean rating μ3")
    mu4 = param.Number(default=MEANS[3], bounds=(0.0, 10.0), step=0.5, label="Mean rating μ4")
    sd = TRAINING.number("sd", "Rating noise sd", bounds=(0.0, 5.0), step=0.1)
    prefer = param.Selector(default=0, objects=POLICY_CHOICES, label="Policy")
    logit = param.Number(default=2.0, bounds=(0.0, 5.0), step=0.1, label="Logit θ_k of the preferred arm")
    b = param.Number(default=6.5, bounds=(0.0, 12.0), step=0.1, label="Baseline b")
    samples = MONTE_CARLO.integer("samples", "Monte Carlo samples N", bounds=(1_000, 200_000), step=1_000)
    seed = MONTE_CARLO.integer("seed", "Seed (Monte Carlo)", bounds=(0, 999_999))
    arm = param.Selector(default=4, objects=list(range(1, K + 1)), label="Histogram of coordinate k")
    seeds = TRAINING.integer("seeds", "Training seeds", bounds=(10, 500), step=10)
    steps = TRAINING.integer("steps", "Training steps", bounds=(10, 2000), step=10)
    lr = TRAINING.number("lr", "Learning rate lr", bounds=(0.005, 0.5), step=0.005)
    train_seed = TRAINING.integer("seed", "Seed (training)", bounds=(0, 999_999))
    section = param.Selector(default="estimates", objects=list(SECTIONS), label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.gradient = ColumnDataSource(name="gradient")
        self.curve = ColumnDataSource(name="variance_curve")
        self.points = ColumnDataSource(name="variance_points")
        self.marks = ColumnDataSource(name="baseline_marks")
        self.histogram = ColumnDataSource(name="histogram")
        # The figures are built with their sections, on first view; what the updates move is made here.
        self.b_rule, self.b_star_rule, self.exact_rule = rule("b"), rule("b_star"), rule("exact")
        self.summary = Summary()
        self.metrics = MetricRow(METRICS)
        self.b_to_V = pn.widgets.Button(label="b = V", color="light", width=80, align="end")
        self.b_to_V.on_click(lambda _event: self.set_b(expected_return(self.means, self.theta)))
        self.b_to_star = pn.widgets.Button(label="b = b*", color="light", width=80, align="end")
        self.b_to_star.on_click(lambda _event: self.set_b(optimal_baseline(self.means, self.theta)))
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(BASELINE_EFFECT, PREDICT_EXPLANATION, self.guide)
        self.arm_card = PredictionCard.of(WHICH_ARM, ARM_EXPLANATION, self.guide)
        self.training = BanditTraining(self.training_settings, self.param.train_seed)
        self._started = False
        builders = {"estimates": self._estimates_section, "histogram": self._histogram_section, "training": self._training_section}
        self.sections = LazySections(self.param.section, {key: (SECTIONS[key], build) for key, build in builders.items()},
                                     on_open=self._opened)
        self.notice = sync_url(self, query=query)
        self.param.watch(self._changed, list(ANALYTIC | {"b", "arm", *TRAINING.names}))
        self._update_estimates(sweep=True)
        self.training.frame()
        pn.state.onload(self._start)

    def _start(self) -> None:
        # Once the browser has the page, and only if the training section is open: a visit that never looks costs no run.
        self._started = True
        if "training" in self.sections.opened:
            self.training.start()

    def _opened(self, section: str) -> None:
        if section == "histogram":
            self._update_histogram()
        if section == "training" and self._started:
            self.training.start()

    # -- updates

    @property
    def means(self) -> tuple[float, ...]:
        return (self.mu1, self.mu2, self.mu3, self.mu4)

    @property
    def theta(self) -> tuple[float, ...]:
        return theta_of(self.prefer, self.logit)

    def training_settings(self) -> BanditTrainingSettings:
        return TRAINING.settings(self, means=self.means, report_steps=(self.steps,))

    def _changed(self, *events):
        # One batch per slider step: the plots' data first, the text after it.
        names = {e.name for e in events}
        with one_update():
            if names & (ANALYTIC | {"b"}):
                self._update_estimates(sweep=bool(names & ANALYTIC))
            if names & (ANALYTIC | {"b", "arm"}) and "histogram" in self.sections.opened:
                self._update_histogram()  # (an unopened section's data is computed when it is opened)
            if names & {*ARM_MEANS, *TRAINING.names}:
                self.training.frame()
                if "training" in self.sections.opened:
                    self.training.clear()  # the stopped run's curves go now, the new run starts once the controls are still
                    self.training.job.restart_soon()

    def _update_estimates(self, sweep: bool):
        """The Monte Carlo run at b = 0 and the current b, and with `sweep` also at the seed's
        sweep of b (one run, the same samples) and the exact variance curve."""
        mu, theta, sd, b = self.means, self.theta, self.sd, self.b
        # The arms drawn and their noise depend on the policy, N and the seed only: reduced to per-arm
        # power sums once per process (app.serving.results_cache). The ratings' sums for any means and sd
        # follow from them, and any baseline's summary from those, each O(K): no slider of this
        # section makes a pass over the draws.
        sums = arm_sums_of_noise(RESULTS.get(noise_sums, theta, self.samples, self.seed), mu, sd, theta)
        self.mc = summarise_sums(sums, (0.0, b))
        if sweep:
            self.points.data = sweep_columns(mu, sd, theta, summarise_sums(sums, SWEEP))
            self.curve.data = curve_columns(mu, sd, theta)
        numbers = estimate_numbers(mu, sd, theta, b, self.mc)
        self.gradient.data = gradient_columns(mu, theta, self.mc)
        self.marks.data = marks_columns(mu, sd, theta, b)
        self.b_rule.location, self.b_star_rule.location = b, numbers["b_star"]
        self.metrics.update(**numbers)
        self.summary.show(summary_text(mu, sd, theta, b, self.samples, self.seed, self.mc))

    def _update_histogram(self):
        k = self.arm - 1
        draws = RESULTS.get(one_sample_arms, self.means, self.sd, self.theta, self.samples, self.seed)
        self.histogram.data = coordinate_histograms(*draws, self.theta, k, self.b, BINS)
        self.exact_rule.location = float(exact_gradient(self.means, self.theta)[k])

    def set_b(self, value: float) -> None:
        """Move the baseline slider to `value` (V or b*), rounded to the slider's hundredths."""
        self.b = round(float(value), 2)

    def close(self) -> None:
        """The tab closed: stop the training run."""
        self.training.job.stop()

    # -- the sections, built on first view

    def _estimates_section(self):
        # Figures behind the question are made once it is answered (a builder, not the figures themselves).
        return self.predict_card.guard(
            lambda: estimate_plots(self.gradient, self.curve, self.points, self.marks, self.b_rule, self.b_star_rule, K),
            note="the gradient and the variance",
        )

    def _histogram_section(self):
        return pn.Column(
            labelled_buttons(self.param.arm),
            self.predict_card.guard(lambda: histogram_plot(self.histogram, self.exact_rule), note="the estimates"),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        return self.training.section(pn.Row(*(slider(self.param[name], width=220) for name in ("seeds", "steps", "lr"))), self.arm_card)

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.predict_card,), notices=(self.notice,),
            controls=(section_heading(POLICY_HEADING), *(slider(self.param[name], width=260) for name in ARM_MEANS)),
            figures=(self.sections,),
            more=(
                slider(self.param.sd, width=260),
                labelled_buttons(self.param.prefer),
                slider(self.param.logit, width=260, visible=self.param.prefer.rx() != 0),
                section_heading(ESTIMATE_HEADING),
                slider(self.param.b, width=260),
                pn.Row(self.b_to_V, self.b_to_star),
                slider(self.param.samples, width=260, format="0,0"),
                seed_control(self.param.seed),
                self.predict_card.guard(self.summary, self.metrics, placeholder=False),
            ),
        )

def page(query: dict[str, str] | None = None) -> BanditPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return BanditPage(query=query)
