"""Live REINFORCE on a language model: seed 000 sections 6.11 and 6.12, run in the browser.

Each training step samples K replies to each prompt, scores them with a sentiment reward (or a reward model saved
by the reward-models page, whose gold score g is then drawn dashed beside it) and ascends the REINFORCE estimate
with per-token shaped rewards r_t = -beta (log pi - log ref) + [t = T-1] R and a leave-one-out baseline
(engines/lm/reinforce.py). The run is a model job on the server's Dask cluster, shared by the learners who start
the same settings (app/jobs/shared_runs.py, docs/architecture.md "A model job's life"). The package holds the view
here, its words in text.py and status.py, what it draws of a run in figures.py, replies.py and evaluation.py, its
inputs in inputs.py and the room's runs in runs_table.py; the server's limits (app/serving/limits.py) bound the controls.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from pathlib import Path

import panel as pn
import param

from app.jobs.cluster import Cluster
from app.jobs.cluster import current as current_cluster
from app.jobs.runs import RUNS_DIR, is_learned
from app.jobs.shared_runs import find_run, settings_of
from app.pages.live_run.figures import RunDisplay
from app.pages.live_run.inputs import SettingsInputs
from app.pages.live_run.jobs import LiveRunJob
from app.pages.live_run.runs_table import RunsTable
from app.pages.live_run.status import newest_pace
from app.pages.live_run.text import (
    ADVANTAGE_LABELS,
    COMPARE,
    CURVE_TITLE,
    EQUATION,
    INTRO,
    METRICS,
    NOTICE,
    PREDICT,
    PREDICT_CHOICES,
    PREDICT_EXPLANATION,
    RUN_NAME_PATTERN,
    SECTIONS,
    SETTINGS_TITLE,
    UNOPENABLE,
    WHY,
)
from app.serving.limits import bound_controls, clamp_query
from app.serving.limits import current as current_limits
from app.serving.offered import current as current_offer
from app.serving.offered import offer_menu, reward_options, start_problem
from engines.lm.settings import DEVICES, LMSettings, Recipe, default_lr
from widgets.downloads import plot_with_downloads
from widgets.explorable import Fold, figure_first
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.streaming import deliver, session_document
from widgets.url_state import sync_url

TITLE = "Live run: REINFORCE on a language model"
SUMMARY = "Train a language model against a sentiment reward in the browser: reward climbs, KL grows, and without a penalty the replies degrade."

LM = SettingsControls(LMSettings)
"""The run's controls, made from the engine's settings (the seed's recipe): every control starts from its default."""
DEFAULTS = LMSettings()
KEEP_SAMPLES = DEFAULTS.keep_samples
"""Newest replies kept per step for display (fewer when a step has fewer prompts)."""
COLLAPSE = card_spec("live-run/collapse", PREDICT, PREDICT_CHOICES, "collapse")
CARDS = (COLLAPSE,)
"""The page's prediction card (the room's tally lists it)."""
RECIPE_FIELDS = tuple(f.name for f in dataclasses.fields(Recipe))
"""The settings a model's recipe sets: they follow the model chosen."""
RUN_COLUMN = 480
"""The widest of the column of Start, the settings and the reward curve: Start, Stop and the progress bar on one line."""


class LiveRunPage(pn.viewable.Viewer):
    """The run's settings; start, pause, resume, stop; live curves, samples, tables; earlier runs."""

    model = LM.selector("model", "Model", objects=[DEFAULTS.model],
                        doc="The models this server offers (app/serving/offered.py); the first is the default.")
    reward = LM.selector("reward", "Reward", objects=[DEFAULTS.reward],
                         doc="VADER, the classifiers this server offers and, per page, the reward models saved in the runs folder.")
    beta = LM.number("beta", "KL coefficient β", bounds=(0.0, 10.0), step=0.01)
    lr = LM.number("lr", "Learning rate (Adam)", default=default_lr(DEFAULTS.model), bounds=(1e-7, 1e-2), step=1e-5)
    steps = LM.integer("steps", "Training steps", bounds=(1, 5000))
    # The highest values of these bounds are the server's limits, set per page (app.serving.limits.LIMITED).
    prompts = LM.integer("prompts", "Prompts per step", bounds=(1, 64))
    replies = LM.integer("replies", "Replies per prompt K", bounds=(2, 16))
    advantage = LM.selector("advantage", "Advantage over the K replies", objects=ADVANTAGE_LABELS)
    T = LM.integer("T", "Reply length T (tokens)", bounds=(1, 64))
    trained_blocks = LM.integer("trained_blocks", "Top blocks trained (0: all)", bounds=(0, 96))
    seed = LM.integer("seed", "Seed", bounds=(0, 999_999))
    device = LM.selector("device", "Device", objects=list(DEVICES),
                         doc="auto: the best device a worker of the cluster offers; a device no worker offers is refused at Start.")
    eval_every = LM.integer("eval_every", "Evaluate every (steps)", bounds=(1, 5000))
    eval_prompts = LM.integer("eval_prompts", "Held-out prompts", bounds=(1, 64))
    eval_replies = LM.integer("eval_replies", "Replies per held-out prompt", bounds=(1, 16))
    at_pace = param.Boolean(default=False, label="Replay a finished run at the pace it trained",
                            doc="A run that already ran to its end with these settings is shown from its files: at once, or step by step.")
    run = param.String(default="", regex=RUN_NAME_PATTERN, label="Run shown",
                       doc="A run of the room's list, by its folder's name: opened when the page is.")
    section = param.Selector(default="samples", objects=list(SECTIONS), label="Section shown")
    phase = param.Selector(default="idle", objects=["idle", "loading", "downloading", "queued", "running", "paused"], precedence=-1,
                           doc="What this tab's run is doing.")

    def __init__(self, query: dict[str, str] | None = None, runs_dir: Path | str | None = None,
                 cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else RUNS_DIR
        self.cluster = cluster or current_cluster()
        self.highest = bound_controls(self, current_limits())
        self.offer = current_offer()
        self.display = RunDisplay(METRICS)
        self.guide = session_guide()
        self.predict_card = PredictionCard.of(COLLAPSE, PREDICT_EXPLANATION, self.guide)
        self.run_job = LiveRunJob(self.runs_dir, self.cluster, self.display, self.start,
                                  on_phase=lambda phase: setattr(self, "phase", phase), on_ended=self.refresh_runs)
        self.inputs = SettingsInputs(self, self.run_job.job.fail)
        self.settings_fold = Fold(SETTINGS_TITLE, self.inputs, open=True)
        self.runs_list = RunsTable(self.runs_dir, SECTIONS["runs"], COMPARE, self._draw_overlays, self.refresh_runs,
                                   on_open=self.open_run)
        self.param.watch(self._follow_recipe, ["model", "device"])
        self.param.watch(lambda _e: self._show_pace(), "model")
        offer_menu(self, "model", self.offer.models)
        self.param.watch(lambda _e: self._show_reward_kind(), "reward")
        offer_menu(self, "reward", reward_options(self.runs_dir))  # before the link names a saved reward model
        self.notice = sync_url(self, query=query, adjust=lambda link: clamp_query(link, self.highest))
        self.sections = LazySections(self.param.section, {
            "samples": (SECTIONS["samples"], self.display.samples_section),
            "curves": (SECTIONS["curves"], lambda: self.display.curves_section(is_learned(self.reward))),
            "evaluation": (SECTIONS["evaluation"], lambda: self.display.evaluation),
            "runs": (SECTIONS["runs"], lambda: self.runs_list),
        })
        self._show_reward_kind()
        # The cluster calls from its watcher thread: the line is redrawn on this session's own thread.
        self._unsubscribe = self.cluster.subscribe(partial(deliver, session_document(), self._show_queue))
        self._show_queue()
        self.refresh_runs()
        if self.run:
            self.open_run(self.run)

    def settings(self) -> LMSettings:
        """The controls as the engine's settings (ValueError with one sentence if refused)."""
        # A reward model scores the lab's feeling prompts it was trained on (seed 001 section 6), not movie reviews.
        return LM.settings(self, model=self.model.strip(), keep_samples=min(KEEP_SAMPLES, self.prompts),
                           prompt_set="feelings" if is_learned(self.reward) else "reviews")

    def _show_reward_kind(self) -> None:
        """A learned reward: the gold score's sentence and the curves' labels say it is drawn beside the reward."""
        self.display.name_reward(is_learned(self.reward))
        self._draw_overlays()

    def _recipe(self, model: str, device: str) -> dict:
        """The settings a run of `model` takes from its recipe (engines.lm.settings.RECIPES): a GPU's where the learner
        chose cuda, else a CPU's (asking the cluster what 'auto' means would start it for every page built)."""
        defaults = LMSettings.of_model(model.strip(), "cuda" if device.startswith("cuda") else "cpu")
        return {name: getattr(defaults, name) for name in RECIPE_FIELDS}

    def _follow_recipe(self, *events) -> None:
        # A setting of the recipe follows the new model's (or device's) unless it was set by hand, away from the old one's.
        before = {"model": self.model, "device": self.device} | {e.name: e.old for e in events}
        old, new = self._recipe(**before), self._recipe(self.model, self.device)
        self.param.update({name: new[name] for name in RECIPE_FIELDS if math.isclose(getattr(self, name), old[name])})

    def start(self) -> None:
        """Watch the run of the current settings, or say why none starts: not offered or beyond the server's limits."""
        settings, problem = start_problem(self.offer, self.settings, self.highest)
        if settings is None:
            self.run_job.job.fail(problem)
            return
        self.run_job.start(settings, self.at_pace)

    def open_run(self, name: str) -> None:
        """Show the room's run `name`, live where it trains; the controls take its settings, so the link names it."""
        try:
            found = find_run(name, self.runs_dir)
            settings = settings_of(found)
        except ValueError as error:
            self.run_job.job.fail(str(error))
            self.run = ""
            return
        try:
            self.param.update({k: v for k, v in LM.values(settings).items() if k != "device"} | {"run": name})
        except ValueError:  # a reward model deleted since, or a setting beyond this server's limits
            self.run_job.job.fail(UNOPENABLE.format(run=name))
            return
        self.run_job.open(found)

    def close(self) -> None:
        """The tab closed: this learner leaves the run (which stops if it was the last one on it)."""
        self.run_job.close()
        self._unsubscribe()

    @param.depends("phase", watch=True)
    def _show_phase(self) -> None:
        self.inputs.enabled = self.phase == "idle"

    def _show_queue(self) -> None:
        self.display.show_queue(self.cluster.overview())
        if self.runs_list.folder.runs():
            self._show_runs()  # a run's status (running or not) follows the queue

    def refresh_runs(self) -> None:
        """Read the runs folder again (only the runs whose files changed) and redraw the list; offer the reward models
        saved there now (a chosen one that is gone falls back to the default)."""
        self.runs_list.folder.refresh()
        offer_menu(self, "reward", reward_options(self.runs_dir))
        self._show_runs()
        self._show_pace()

    def _show_pace(self) -> None:
        self.display.show_no_run(newest_pace(self.runs_list.folder.runs().values(), self.model))

    def _show_runs(self) -> None:
        with pn.io.hold():
            self.runs_list.show(self.cluster.running_ids(), self.run_job.learner.class_runs.watchers(self.runs_dir, self.cluster))
            self._draw_overlays()

    def _draw_overlays(self) -> None:
        self.display.curves.overlay(self.runs_list.ticked_runs(), is_learned(self.reward))

    @param.depends("phase", watch=True)
    def _fold_settings(self) -> None:
        # Once a run starts, its curve and replies take the room of the settings, which open again with one click.
        if self.phase != "idle":
            self.settings_fold.open = False

    def __panel__(self):
        # While a run trains its settings fold away: the reward curve under Start, the step and the newest replies beside it.
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.predict_card,), notices=(self.notice,),
            controls=(
                self.run_job.job,
                *self.settings_fold.parts(),
                self.display.curves.legend,
                self.display.goodhart,
                plot_with_downloads(self.display.curves.reward, {"metrics": self.display.curves.steps, "evals": self.display.curves.evals},
                                    CURVE_TITLE),
            ),
            figures=(self.display.shared_line, self.display.status, self.display.download_bar, self.display.queue_line, self.display.metrics,
                     self.display.newest),
            # Full width below: the other curves' grid (a Bokeh GridPlot) draws nothing inside the demo's grid.
            after=(self.sections,),
            controls_width=RUN_COLUMN,
        )


def page(query: dict[str, str] | None = None, runs_dir: Path | str | None = None) -> LiveRunPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return LiveRunPage(query=query, runs_dir=runs_dir)
