"""The four-armed bandit: REINFORCE, the variance of its estimate, and baselines (seed 000 sections 6.4 to 6.7).

One prompt has four replies (arms); the policy is a softmax over four logits theta and
reply k earns a rating r = mu_k + sd * eps. The one-sample REINFORCE estimate is
g = (r - b)(onehot(a) - pi). Because J = sum_k pi_k mu_k is a small sum, the exact
gradient, the exact total variance of g for any constant b and the best constant b*
are known; the page sets them beside a Monte Carlo run, draws the spread of one
coordinate of g with and without b, and trains many seeds with the three baselines
of section 6.7 on a worker thread, the curves filling in as it goes.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d, Span

from app.serving import limits
from app.pages.bandit.figures import (
    COLOURS,
    gradient_figure,
    histogram_figure,
    training_figures,
    variance_figure,
)
from app.pages.bandit.text import (
    ARM_CHOICES,
    ARM_EXPLANATION,
    ARM_QUESTION,
    EQUATION,
    INTRO,
    NOTICE,
    PREDICT,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    TABLE_CSS,
    TRAINING_NOTE,
    WHY,
    summary_text,
    training_table,
    variance_ratio,
)
from app.serving.results_cache import RESULTS
from engines.bandit import (
    BASELINES,
    MEANS,
    BanditTrainingSettings,
    TrainingView,
    arm_sums_of_noise,
    coordinate_histograms,
    exact_gradient,
    exact_total_variance,
    expected_return,
    noise_sums,
    one_sample_arms,
    optimal_baseline,
    summarise_sums,
    training_views,
)
from widgets.debounce import Debounce
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.headings import section_heading
from widgets.job_view import JobView
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import labelled_buttons, slider
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Bandit: REINFORCE and baselines"
SUMMARY = "Four replies, noisy ratings: the REINFORCE estimate is right on average, a baseline takes away most of its noise."
READY_AHEAD = True

K = len(MEANS)
"""Number of arms (replies), as in the seed."""
SWEEP = (0.0, 3.0, 5.0, 6.0, 6.5, 7.0, 8.0, 10.0, 12.0)
"""The constant baselines of the seed's sweep (section 6.7), measured by Monte Carlo."""
B_AXIS = np.linspace(0.0, 12.0, 241)
"""Baselines of the exact variance curve, 0 to 12 in steps of 0.05."""
BINS = 80
"""Histogram bins of the one-sample estimates."""
RESTART_DELAY_MS = 300
"""Quiet time after the last change of a training control before the run restarts."""
CONTROLS = ("mu1", "mu2", "mu3", "mu4", "sd", "prefer", "logit", "b", "samples", "seed", "arm", "seeds", "steps", "lr", "train_seed", "section")
"""Every control, in the order of the query string."""
ANALYTIC = {"mu1", "mu2", "mu3", "mu4", "sd", "prefer", "logit", "samples", "seed"}
"""Controls that change the samples (and so every analytic panel)."""
TRAINING = SettingsControls(BanditTrainingSettings)
"""The training run's controls (engines/bandit.py); they and the arm means restart it when they change."""


def theta_of(prefer: int, logit: float) -> tuple[float, ...]:
    """The logits: all 0 (uniform), or theta_k = logit for the preferred arm k (numbered from 1)."""
    return tuple(logit if k == prefer else 0.0 for k in range(1, K + 1))


EMPTY_CURVES = {"step": []} | {f"{b}_{c}": [] for b in BASELINES for c in ("mean", "p10", "p90")}
EMPTY_ARMS = {"arm": [], **{b: [] for b in BASELINES}}
"""The training plots' columns before a run has delivered its first steps."""


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
    prefer = param.Selector(
        default=0,
        objects={"uniform, θ = 0": 0, **{f"prefers arm {k}": k for k in range(1, K + 1)}},
        label="Policy",
    )
    logit = param.Number(default=2.0, bounds=(0.0, 5.0), step=0.1, label="Logit θ_k of the preferred arm")
    b = param.Number(default=6.5, bounds=(0.0, 12.0), step=0.1, label="Baseline b")
    samples = param.Integer(default=200_000, bounds=(1_000, 200_000), step=1_000, label="Monte Carlo samples N")
    seed = param.Integer(default=0, bounds=(0, 999_999), label="Seed (Monte Carlo)")
    arm = param.Selector(default=4, objects=list(range(1, K + 1)), label="Histogram of coordinate k")
    seeds = TRAINING.integer("seeds", "Training seeds", bounds=(10, 500), step=10)
    steps = TRAINING.integer("steps", "Training steps", bounds=(10, 2000), step=10)
    lr = TRAINING.number("lr", "Learning rate lr", bounds=(0.005, 0.5), step=0.005)
    train_seed = TRAINING.integer("seed", "Seed (training)", bounds=(0, 999_999))
    section = param.Selector(default="estimates", objects=["estimates", "histogram", "training"], label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.gradient = ColumnDataSource(name="gradient")
        self.curve = ColumnDataSource(name="variance_curve")
        self.points = ColumnDataSource(name="variance_points")
        self.marks = ColumnDataSource(name="baseline_marks")
        self.histogram = ColumnDataSource(name="histogram")
        self.curves = ColumnDataSource(EMPTY_CURVES, name="training")
        self.arms = ColumnDataSource(EMPTY_ARMS, name="final_arms")
        # The figures are built with their sections, on first view; what the updates move is made here.
        self.b_rule = Span(location=self.b, dimension="height", line_color=COLOURS["b"], line_dash=[4, 3], line_width=1.5)
        self.b_star_rule = Span(location=0, dimension="height", line_color=COLOURS["b_star"], line_dash=[2, 2], line_width=1.5)
        self.exact_rule = Span(location=0, dimension="height", line_color=COLOURS["exact"], line_width=2)
        self.steps_range, self.J_range, self.seeds_range = Range1d(0, self.steps), Range1d(5, 8), Range1d(0, self.seeds)
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.1em"})
        self.metrics = MetricRow(
            {
                "J": ("J = V", "{value:.3f}"),
                "b_star": ("b*", "{value:.3f}"),
                "exact_none": ("variance, b = 0", "{value:.3f}"),
                "exact_b": ("variance at b", "{value:.3f}"),
                "ratio": ("ratio", "{value:.1f}×"),
                "mc_none": ("Monte Carlo, b = 0", "{value:.3f}"),
                "mc_b": ("Monte Carlo at b", "{value:.3f}"),
                "mc_ratio": ("Monte Carlo ratio", "{value:.1f}×"),
            }
        )
        self.b_to_V = pn.widgets.Button(label="b = V", color="light", width=80, align="end")
        self.b_to_V.on_click(lambda _event: self.set_b(expected_return(self.means, self.theta)))
        self.b_to_star = pn.widgets.Button(label="b = b*", color="light", width=80, align="end")
        self.b_to_star.on_click(lambda _event: self.set_b(optimal_baseline(self.means, self.theta)))
        self.table = pn.pane.HTML(training_table(None), sizing_mode="stretch_width", stylesheets=[TABLE_CSS])
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(BASELINE_EFFECT, PREDICT_EXPLANATION, self.guide)
        self.arm_card = PredictionCard.of(WHICH_ARM, ARM_EXPLANATION, self.guide)
        self.view: TrainingView | None = None
        self.delayed_restart = Debounce(RESTART_DELAY_MS)
        self.training_job = JobView(self._show_training, self.start_training, seed=self.param.train_seed,
                                    time_limit=limits.current().compute_seconds)
        self._started = False
        self.sections = LazySections(self.param.section, {
            "estimates": ("Gradient and variance", self._estimates_section),
            "histogram": ("One coordinate's estimates", self._histogram_section),
            "training": ("Training with and without a baseline", self._training_section),
        }, on_open=self._opened)
        self.param.watch(self._changed, list(CONTROLS))
        self.notice = sync_url(self, list(CONTROLS), query)
        self._update_estimates(sweep=True)
        self._frame_training()
        pn.state.onload(self._start)

    def _start(self) -> None:
        # Once the browser has the page, and only if the training section is open: a visit that never looks costs no run.
        self._started = True
        if "training" in self.sections.opened:
            self.start_training()

    def _opened(self, section: str) -> None:
        if section == "histogram":
            self._update_histogram()
        if section == "training" and self._started:
            self.start_training()

    # -- updates

    @property
    def means(self) -> tuple[float, ...]:
        return (self.mu1, self.mu2, self.mu3, self.mu4)

    @property
    def theta(self) -> tuple[float, ...]:
        return theta_of(self.prefer, self.logit)

    def _changed(self, *events):
        # One batch per slider step: the plots' data first, the text after it.
        names = {e.name for e in events}
        with one_update():
            if names & (ANALYTIC | {"b"}):
                self._update_estimates(sweep=bool(names & ANALYTIC))
            if names & (ANALYTIC | {"b", "arm"}) and "histogram" in self.sections.opened:
                self._update_histogram()  # (an unopened section's data is computed when it is opened)
            if names & {"mu1", "mu2", "mu3", "mu4", *TRAINING.names}:
                self._frame_training()
                if "training" in self.sections.opened:
                    self.restart_training_soon()

    def _update_estimates(self, sweep: bool):
        """The Monte Carlo run at b = 0 and the current b, and with `sweep` also at the seed's
        sweep of b (one run, the same samples) and the exact variance curve."""
        mu, theta, sd = self.means, self.theta, self.sd
        # The arms drawn and their noise depend on the policy, N and the seed only: reduced to per-arm
        # power sums once per process (app.serving.results_cache). The ratings' sums for any means and sd
        # follow from them, and any baseline's summary from those, each O(K): no slider of this
        # section makes a pass over the draws.
        sums = arm_sums_of_noise(RESULTS.get(noise_sums, theta, self.samples, self.seed), mu, sd, theta)
        mc = summarise_sums(sums, (0.0, self.b))
        self.mc = mc
        if sweep:
            swept = summarise_sums(sums, SWEEP)
            variance, se = swept.total_variance, swept.total_variance_se
            self.points.data = {
                "b": swept.b,
                "mc": variance,
                "low": variance - 2 * se,
                "high": variance + 2 * se,
                "se": se,
                "exact": exact_total_variance(mu, sd, theta, swept.b),
            }
            self.curve.data = {"b": B_AXIS, "exact": exact_total_variance(mu, sd, theta, B_AXIS)}
        grad = exact_gradient(mu, theta)
        arm = np.arange(1, K + 1)
        data = {"arm": arm, "exact": grad}
        for j, (key, shift) in enumerate((("none", -0.15), ("b", 0.15))):
            mean, se = mc.mean_estimate[j], mc.mean_estimate_se[j]
            data |= {f"x_{key}": arm + shift, f"mean_{key}": mean, f"se_{key}": se, f"low_{key}": mean - 2 * se, f"high_{key}": mean + 2 * se}
        self.gradient.data = data
        J = float(expected_return(mu, theta))
        b_star = float(optimal_baseline(mu, theta))
        exact_none, exact_b, exact_star = exact_total_variance(mu, sd, theta, np.array([0.0, self.b, b_star]))
        self.marks.data = {"b": [b_star, self.b], "variance": [exact_star, exact_b], "colour": [COLOURS["b_star"], COLOURS["b"]]}
        self.b_rule.location = self.b
        self.b_star_rule.location = b_star
        numbers = {
            "J": J,
            "b_star": b_star,
            "exact_none": exact_none,
            "exact_b": exact_b,
            "mc_none": mc.total_variance[0],
            "mc_b": mc.total_variance[1],
            "ratio": variance_ratio(exact_none, exact_b),
            "mc_ratio": variance_ratio(mc.total_variance[0], mc.total_variance[1]),
        }
        self.metrics.update(**numbers)
        self.summary.object = f'<p class="fl-summary">{summary_text(self.means, self.sd, self.theta, self.b, self.samples, self.seed, mc)}</p>'

    def _update_histogram(self):
        k = self.arm - 1
        draws = RESULTS.get(one_sample_arms, self.means, self.sd, self.theta, self.samples, self.seed)
        self.histogram.data = coordinate_histograms(*draws, self.theta, k, self.b, BINS)
        self.exact_rule.location = float(exact_gradient(self.means, self.theta)[k])

    # -- training, streamed from a worker thread

    def training_settings(self) -> BanditTrainingSettings:
        return TRAINING.settings(self, means=self.means, report_steps=(self.steps,))

    def _frame_training(self):
        """Axes that hold the whole run, so the curves fill in without the plot jumping."""
        self.steps_range.end = self.steps
        self.J_range.update(start=min(self.means) - 0.1, end=max(self.means) + 0.1)
        self.seeds_range.end = self.seeds

    def restart_training_soon(self) -> None:
        """Stop the run under way and clear its curves now; start afresh once the controls have
        been still for RESTART_DELAY_MS, so a drag's updates do not share the CPU with runs
        that the next step of the drag would cancel anyway."""
        self.training_job.run.stop()
        self._clear_training()
        self.delayed_restart.soon("training", self.start_training)

    def _clear_training(self) -> None:
        self.curves.data = dict(EMPTY_CURVES)
        self.arms.data = dict(EMPTY_ARMS)
        self.training_job.controls.param.update(running=False, progress=0.0)

    def start_training(self) -> None:
        """Start a fresh run of the three baselines, replacing any run under way."""
        settings = self.training_settings()
        self._clear_training()
        every = max(1, settings.steps // 200)
        self.training_job.start(lambda: training_views(settings, every))

    def _show_training(self, view: TrainingView) -> None:
        if view.settings != self.training_settings():
            return  # delivered by a run stopped since; its settings are no longer the controls'
        with one_update():
            self.view = view
            self.curves.data = view.curves
            self.arms.data = view.arms
            self.table.object = training_table(view)
            self.training_job.controls.progress = view.step / view.settings.steps

    def close(self) -> None:
        """The tab closed: stop the training run."""
        self.training_job.run.stop()

    def set_b(self, value: float) -> None:
        """Move the baseline slider to `value` (V or b*), rounded to the slider's hundredths."""
        self.b = round(float(value), 2)

    def _estimates_section(self):
        # Figures behind the question are made once it is answered (a builder, not the figures themselves).
        return self.predict_card.guard(
            lambda: pn.Row(
                plot_with_downloads(gradient_figure(self.gradient, K), {"gradient": self.gradient}, "Exact gradient and Monte Carlo means ± 2 SE"),
                plot_with_downloads(variance_figure(self.curve, self.points, self.marks, self.b_rule, self.b_star_rule), {"variance_curve": self.curve, "variance_points": self.points},
                                    "Total variance against the baseline b"),
                sizing_mode="stretch_width",
            ),
            note="the gradient and the variance",
        )

    def _histogram_section(self):
        return pn.Column(
            labelled_buttons(self.param.arm),
            self.predict_card.guard(
                lambda: plot_with_downloads(histogram_figure(self.histogram, self.exact_rule), {"histogram": self.histogram},
                                            "One-sample estimates of coordinate k, with and without b"),
                note="the estimates",
            ),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        training_figure, arms_figure = training_figures(self.curves, self.arms, K, self.steps_range, self.J_range, self.seeds_range)
        return pn.Column(
            pn.pane.Markdown(TRAINING_NOTE, sizing_mode="stretch_width", margin=(0, 10)),
            pn.Row(slider(self.param.seeds, width=220), slider(self.param.steps, width=220), slider(self.param.lr, width=220)),
            self.training_job,
            self.arm_card,
            self.arm_card.guard(
                pn.Row(
                    plot_with_downloads(training_figure, {"training": self.curves}, "Mean J over seeds, 10th to 90th percentile"),
                    plot_with_downloads(arms_figure, {"final_arms": self.arms}, "Which arm each seed prefers"),
                    sizing_mode="stretch_width",
                ),
                self.table,
                note="where the seeds end up",
            ),
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        bandit = pn.Column(
            section_heading("The bandit and the policy"),
            pn.Row(*(slider(self.param[f"mu{k}"], width=200) for k in range(1, K + 1))),
            pn.Row(
                slider(self.param.sd, width=200),
                labelled_buttons(self.param.prefer),
                slider(self.param.logit, width=220, visible=self.param.prefer.rx() != 0),
            ),
        )
        estimate = pn.Column(
            section_heading("The estimate"),
            pn.Row(slider(self.param.b, width=260), self.b_to_V, self.b_to_star, slider(self.param.samples, width=260, format="0,0")),
            seed_control(self.param.seed),
        )
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=self.predict_card),
            bandit,
            estimate,
            self.predict_card.guard(self.summary, self.metrics, placeholder=False),
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None) -> BanditPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return BanditPage(query=query)
