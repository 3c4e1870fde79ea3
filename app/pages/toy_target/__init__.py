"""The toy target task: seed 001 sections 2 to 5, Exercise 2 and Figure 2.

A bigram policy writes T = 6 symbols from a vocabulary of V = 8 and earns the fraction
of positions that match a hidden target y*. At the uniform start theta = 0 the exact
gradient is known by enumeration, so the page sets many one-batch REINFORCE estimates
beside it: their mean (no baseline, leave-one-out, batch mean, token-level rewards),
their total variance against the exact one, the spread of one coordinate (Figure 2),
and training runs to J >= 0.9 with and without a baseline.

The Monte Carlo batches and the training runs are drawn on worker threads and stream in (jobs.py);
a newer setting stops the work under way and starts afresh once the controls are still. The exact gradient and exact variances are
cached per target and batch size, so moving the coordinate or the estimator only re-reads
estimates already drawn.
"""

from __future__ import annotations

import panel as pn
import param
from bokeh.models import ColumnDataSource, Span

from app.pages.toy_target.figures import coordinate_numbers, hist_figure, histogram_columns
from app.pages.toy_target.jobs import EstimateBatches, TrainingRuns
from app.pages.toy_target.text import (
    COMPARED_LABEL,
    EQUATION,
    FIGURE2_TITLE,
    INTRO,
    METRICS,
    NOTICE,
    PREDICT,
    RANKING_ANSWER,
    RANKING_CHOICES,
    RANKING_EXPLANATION,
    SECTIONS,
    START_CHOICES,
    START_QUESTION,
    VARIANCE_HEADING,
    VARIANCE_NOTE,
    WHY,
    check_yourself_text,
    seed_note_text,
    summary_text,
)
from app.serving import limits
from engines.toy_target import ESTIMATORS, LAB_T, LAB_V, ToyTargetSettings, coordinate, draw_target
from widgets.downloads import plot_with_downloads
from widgets.explorable import figure_first
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, markdown_html, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.style import OKABE_ITO
from widgets.summary import Summary
from widgets.updates import one_update
from widgets.url_state import controls_of, sync_url

TITLE = "The toy target task"
SUMMARY = "REINFORCE on a task small enough to enumerate: estimates against the exact gradient, and what a baseline buys."
READY_AHEAD = True

T, V = LAB_T, LAB_V
"""The lab's task: T = 6 symbols from a vocabulary of V = 8 (262,144 responses)."""
TASK = SettingsControls(ToyTargetSettings)
"""The experiment's and the training's controls (engines/toy_target.py); T and V are the lab's."""

UNIFORM_START = card_spec("toy-target/uniform-start", START_QUESTION, START_CHOICES, "every", kind="Check yourself")
VARIANCE_RANKING = card_spec("toy-target/variance-ranking", PREDICT, RANKING_CHOICES, RANKING_ANSWER)
CARDS = (UNIFORM_START, VARIANCE_RANKING)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class ToyTargetPage(pn.viewable.Viewer):
    """Batch size, batches, estimator, coordinate, seeds; estimates, variance table, Figure 2, training."""

    samples = TASK.integer("samples", "Batch size N (responses per estimate)", bounds=(2, 64))
    batches = TASK.integer("batches", "Number of batches (one estimate each)", bounds=(50, 2000), step=50)
    estimator = param.Selector(default="loo", objects={label: key for key, label in ESTIMATORS.items() if key != "none"},
                               label="Estimator compared with no baseline")
    t = param.Integer(default=1, bounds=(1, T), label="Position t (step)")
    prev = param.Integer(default=0, bounds=(0, V - 1), label="Previous symbol yₜ₋₁")
    symbol = param.Integer(default=6, bounds=(0, V - 1), label="Symbol k (its logit)")
    target_seed = TASK.integer("target_seed", "Target seed", bounds=(0, 999_999))
    seed = TASK.integer("seed", "Seed", bounds=(0, 999_999))
    lr = TASK.number("lr", "Learning rate η", bounds=(0.5, 30.0), step=0.5)
    seeds = TASK.integer("seeds", "Training seeds", bounds=(1, 16))
    steps = TASK.integer("steps", "Training steps", bounds=(50, 1000), step=50)
    section = param.Selector(default="figure2", objects=list(SECTIONS), label="Section shown")

    EXPERIMENT = {"samples", "batches", "target_seed", "seed"}
    """What the Monte Carlo batches are drawn from: a change draws them afresh."""
    TRAINING = {"samples", "target_seed", "seed", "estimator", "lr", "seeds", "steps"}
    """What the training runs depend on: a change trains afresh (once the training section is open)."""
    VIEW = {"estimator", "t", "prev", "symbol"}
    """What Figure 2 reads from the batches already drawn."""

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        compute_seconds = limits.current().compute_seconds
        self.experiment = EstimateBatches(lambda: TASK.settings(self, T=T, V=V), lambda _batches: self._show_coordinate(), self.param.seed,
                                          compute_seconds)
        self.training = TrainingRuns(lambda: TASK.settings(self, T=T, V=V), lambda: ("none", self.estimator), compute_seconds)
        self.hist_none = ColumnDataSource({"left": [], "right": [], "count": []}, name="hist_none")
        self.hist_other = ColumnDataSource({"left": [], "right": [], "count": [], "colour": [], "label": []}, name="hist_compared")
        self.exact_rule = Span(location=0, dimension="height", line_color=OKABE_ITO["vermillion"], line_width=2)
        self.summary = Summary()
        self.metrics = MetricRow(METRICS)
        self.seed_note = pn.pane.Markdown(sizing_mode="stretch_width", margin=(0, 10))
        self._started = False
        self.guide = session_guide()
        self.start_card = PredictionCard.of(UNIFORM_START, check_yourself_text(), self.guide)
        self.ranking_card = PredictionCard.of(VARIANCE_RANKING, RANKING_EXPLANATION, self.guide)
        builders = {"figure2": self._figure2_section, "means": self._means_section,
                    "variance": self._variance_section, "training": self._training_section}
        self.sections = LazySections(self.param.section, {key: (SECTIONS[key], build) for key, build in builders.items()},
                                     on_open=self._opened)
        self.param.watch(self._changed, controls_of(self))
        self.notice = sync_url(self, query=query)
        self._show_start_explanation()
        # Start the worker threads once the browser has the page, so they do not slow its first drawing.
        pn.state.onload(self._start)

    def _start(self) -> None:
        self._started = True
        self.experiment.start()
        if "training" in self.sections.opened:
            self.training.start()

    def _opened(self, section: str) -> None:
        # Training runs only once its section is open: a visit that never looks at it costs no run.
        if section == "training" and self._started:
            self.training.start()

    def _show_start_explanation(self) -> None:
        """The check-yourself's answer, about a batch of the current batch size N."""
        self.start_card.view.explanation = markdown_html(check_yourself_text(self.samples))

    def _changed(self, *events):
        names = {e.name for e in events}
        if "samples" in names:
            self._show_start_explanation()
        if "target_seed" in names and "symbol" not in names:
            # Keep inspecting the target's own symbol at this step (Figure 2's choice) on a new target.
            self.symbol = int(draw_target(T, V, self.target_seed)[self.t - 1])
        if not self._started:
            return
        with one_update():
            if names & self.EXPERIMENT:
                self.experiment.job.restart_soon()
            elif names & self.VIEW:
                self._show_coordinate()
            if names & self.TRAINING and "training" in self.sections.opened:
                self.training.job.restart_soon()

    def close(self) -> None:
        self.experiment.job.stop()
        self.training.job.stop()

    def _show_coordinate(self) -> None:
        """Figure 2 for the chosen coordinate and estimator, from the batches already drawn."""
        b = self.experiment.drawn
        if b is None:
            return
        coord = coordinate(self.t, self.prev, self.symbol)
        at = coordinate_numbers(b, coord, self.estimator)
        self.exact_rule.location = at["exact"]
        self.hist_none.data, self.hist_other.data = histogram_columns(at["x_none"], at["x_other"], self.estimator)
        self.experiment.focus.data = {"exact": [at["exact"]], "mean": [at["mean"]]}
        self.metrics.update(**at)
        self.summary.show(summary_text(coord, b, self.estimator, at["x_none"], at["x_other"]))
        self.seed_note.object = seed_note_text(self.estimator, (at["sd_none"], at["se_none"]), (at["sd_other"], at["se_other"]))

    # --- layout --------------------------------------------------------------------------

    def _figure2_section(self):
        coordinate_controls = pn.Row(
            slider(self.param.t, width=160),
            slider(self.param.prev, width=160, visible=self.param.t.rx() > 1),
            slider(self.param.symbol, width=160),
        )
        figure = hist_figure(self.hist_none, self.hist_other, self.exact_rule)
        return pn.Column(
            plot_with_downloads(figure, {"hist_none": self.hist_none, "hist_compared": self.hist_other}, FIGURE2_TITLE),
            coordinate_controls,
            self.seed_note,
            sizing_mode="stretch_width",
        )

    def _means_section(self):
        return self.experiment.means_view()

    def _variance_section(self):
        return pn.Column(
            section_heading(VARIANCE_HEADING),
            self.ranking_card.guard(self.experiment.variance_table, self.experiment.table_download(), note=VARIANCE_NOTE),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        return self.training.view(
            pn.Row(slider(self.param.lr, width=170), slider(self.param.seeds, width=170), slider(self.param.steps, width=170)))

    def __panel__(self):
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.start_card, self.ranking_card), notices=(self.notice,),
            controls=(slider(self.param.samples, width=300), slider(self.param.batches, width=300)),
            figures=(self.sections,),
            more=(
                pn.widgets.IntInput.from_param(self.param.target_seed, width=140, description=None),
                pn.pane.Markdown(COMPARED_LABEL, margin=(8, 10, 0, 10)),
                pn.widgets.RadioButtonGroup.from_param(self.param.estimator),
                self.experiment.job.controls,
                self.experiment.job.notice,
                self.summary,
                self.metrics,
            ),
        )

def page(query: dict[str, str] | None = None) -> ToyTargetPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return ToyTargetPage(query=query)
