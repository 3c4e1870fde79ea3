"""Group baselines on right/wrong rewards: seed 000 sections 6.1 and 6.10, seed 001 section 4.

An easy and a hard prompt, K replies to each, reward 1 if right: the page sets each estimator's exact
expected update (none, group mean, leave-one-out, GRPO, Dr. GRPO) beside the true gradient, with its
exact variance and the share of groups that carry no signal (engines/group_baselines.py); works four
rewards through by hand; and trains the two prompts' logits with each estimator over seeds, the runs
drawn on a worker thread and streamed in.
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import ColumnDataSource

from app.pages.group_baselines.figures import bar_columns, bars_figure, exact_metrics
from app.pages.group_baselines.jobs import GroupTrainingRuns
from app.pages.group_baselines.text import (
    EQUATION,
    EXAMPLE_NOTE,
    INTRO,
    METRICS,
    NOTICE,
    PREDICT,
    SECTIONS,
    UNBIASED_ANSWER,
    UNBIASED_CHOICES,
    UNBIASED_EXPLANATION,
    UPDATES_TITLE,
    VARIANCE_TITLE,
    WHY,
    example_table_html,
    no_signal_card,
    summary_text,
)
from app.pages.toy_target.text import TABLE_CSS
from app.serving import limits
from engines.group_baselines import GroupBaselinesSettings, exact_moments
from widgets.downloads import plot_with_downloads
from widgets.explorable import figure_first
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import controls_of, sync_url

TITLE = "Group baselines: RLOO, GRPO and Dr. GRPO"
SUMMARY = "K replies to a prompt as each other's baseline: which estimators are unbiased, which rescale, which reweight."
READY_AHEAD = True

GROUP = SettingsControls(GroupBaselinesSettings)
"""The group size and the training's controls (engines/group_baselines.py); the two prompts' p are the page's own."""
EASY, HARD = GroupBaselinesSettings.p
"""The two prompts' chances of a right reply at the start, the engine's defaults."""

UNBIASED = card_spec("group-baselines/unbiased", PREDICT, UNBIASED_CHOICES, UNBIASED_ANSWER)
NO_SIGNAL = card_spec("group-baselines/no-signal", *no_signal_card()[:3], kind="Check yourself")
CARDS = (UNBIASED, NO_SIGNAL)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class GroupBaselinesPage(pn.viewable.Viewer):
    """Sliders p₁, p₂ and K; expected updates and variances per estimator, the worked example, training over seeds."""

    p_easy = param.Number(default=EASY, bounds=(0.01, 0.99), step=0.01, label="p₁ = P(prompt 1 right)",
                          doc="Prompt 1's chance of a right reply at the start.")
    p_hard = param.Number(default=HARD, bounds=(0.01, 0.99), step=0.01, label="p₂ = P(prompt 2 right)",
                          doc="Prompt 2's chance of a right reply at the start.")
    K = GROUP.integer("K", "Replies per prompt K", bounds=(2, 16))
    lr = GROUP.number("lr", "Learning rate η", bounds=(0.05, 5.0), step=0.05)
    seeds = GROUP.integer("seeds", "Training seeds", bounds=(1, 64))
    steps = GROUP.integer("steps", "Training steps", bounds=(10, 500), step=10)
    seed = GROUP.integer("seed", "Seed", bounds=(0, 999_999))
    section = param.Selector(default="updates", objects=list(SECTIONS), label="Section shown")

    TRAINING = {"p_easy", "p_hard", "K", "lr", "seeds", "steps", "seed"}
    """What the training runs depend on: a change trains afresh (once the training section is open)."""

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.bars = ColumnDataSource({"x": [], "expected": [], "variance": [], "true": [], "ratio": []}, name="updates")
        self.summary = Summary()
        self.metrics = MetricRow(METRICS)
        self.training = GroupTrainingRuns(self.settings, self.param.seed, limits.current().compute_seconds)
        self._started = False
        """Whether the browser has the page: a training run waits for it (`_start`)."""
        self.guide = session_guide()
        self.unbiased_card = PredictionCard.of(UNBIASED, UNBIASED_EXPLANATION, self.guide)
        self.no_signal_card = PredictionCard.of(NO_SIGNAL, no_signal_card()[3], self.guide)
        builders = {"updates": self._updates_section, "example": self._example_section, "training": self._training_section}
        self.sections = LazySections(self.param.section, {key: (SECTIONS[key], build) for key, build in builders.items()},
                                     on_open=self._opened)
        self.param.watch(self._changed, controls_of(self))
        self.notice = sync_url(self, query=query)
        self._show_exact()
        # Start a training run (if its section is open) once the browser has the page, not while it is being built.
        pn.state.onload(self._start)

    def _start(self) -> None:
        self._started = True
        if "training" in self.sections.opened:
            self.training.start()

    def settings(self) -> GroupBaselinesSettings:
        """The engine's settings of the controls now (ValueError with its sentence if refused)."""
        return GROUP.settings(self, p=(self.p_easy, self.p_hard))

    def _opened(self, section: str) -> None:
        # Training runs only once its section is open: a visit that never looks at it costs no run.
        if section == "training" and self._started:
            self.training.start()

    def _changed(self, *events):
        names = {e.name for e in events}
        with one_update():
            if names & {"p_easy", "p_hard", "K"}:
                self._show_exact()
            if names & self.TRAINING and "training" in self.sections.opened and self._started:
                self.training.job.restart_soon()

    def _show_exact(self) -> None:
        """The exact moments at the current p₁, p₂, K: milliseconds, so on the UI thread at every slider step."""
        ex = exact_moments(self.settings())
        self.bars.data = bar_columns(ex)
        self.metrics.update(**exact_metrics(ex))
        self.summary.show(summary_text(ex, self.K))

    def close(self) -> None:
        self.training.job.stop()

    # --- layout --------------------------------------------------------------------------

    def _updates_section(self):
        return pn.Column(
            plot_with_downloads(bars_figure(self.bars, "mean update E[g] (per unit θ)", "expected", True), {"updates": self.bars},
                                UPDATES_TITLE),
            plot_with_downloads(bars_figure(self.bars, "variance Var[g]", "variance", False), {}, VARIANCE_TITLE),
            sizing_mode="stretch_width",
        )

    def _example_section(self):
        return pn.Column(
            pn.pane.HTML(example_table_html(), sizing_mode="stretch_width", stylesheets=[TABLE_CSS]),
            pn.pane.Markdown(EXAMPLE_NOTE, sizing_mode="stretch_width", margin=(0, 10)),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        return self.training.view(slider(self.param.lr, width=170), slider(self.param.seeds, width=170),
                                  slider(self.param.steps, width=170))

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.unbiased_card,), notices=(self.notice,),
            controls=(slider(self.param.p_easy, width=300), slider(self.param.p_hard, width=300), slider(self.param.K, width=300)),
            figures=(self.sections,),
            more=(self.summary, self.metrics),
            after=(self.no_signal_card,),
            guard=self.unbiased_card, guard_note="the estimators' updates",
        )


def page(query: dict[str, str] | None = None) -> GroupBaselinesPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return GroupBaselinesPage(query=query)
