"""Reward models: from comparisons to a trained, saved r_phi, seed 001 sections 7 and 8 and the lab's stretch.

The embedded language model writes pairs of 24-token continuations of the lab's prompts; a hidden gold score g
rates each, and a Bradley-Terry rater at tau_label labels the pair (equation 12). A small transformer r_phi is
trained on the labels with the pairwise logistic loss (equation 14), its held-out accuracy drawn live under the
ceiling Acc* (equation 13), then read against g, probed with hand-written replies, normalised (equation 15) and
saved for the live-run page. The stretch retrains at several tau_label.

The three parts (the pairs, the training, the stretch) are tabs, each built the first time it is opened
(widgets/sections.py); the open one is the `section` control, in the link like every other. The pairs are sampled
and the reward model trained as soon as the page opens, whichever tab is shown: the training's readings and the
save button wait in their tab. What the page draws of them is figures.py's PairsDisplay and TrainingDisplay.
"""

from __future__ import annotations

from pathlib import Path

import panel as pn
import param

import app.jobs.runs as runs
from app.jobs.cluster import Cluster
from app.jobs.cluster import current as current_cluster
from app.jobs.model_cache import MODELS, ModelCache
from app.jobs.model_jobs import pairs_key
from app.pages.reward_model.figures import PairsDisplay, TrainingDisplay, probability_curve
from app.pages.reward_model.jobs import PairsSampling, RewardModelTraining, TauSweep
from app.pages.reward_model.pairs_files import PairsFiles
from app.pages.reward_model.text import (
    CHECK_CHOICES,
    CHECK_QUESTION,
    EQUATION,
    INTRO,
    NOTICE,
    SECTIONS,
    TRAINING_INTRO,
    WHY,
    check_yourself_text,
    file_source,
    sampled_source,
    saved_model_text,
)
from engines.lm.preferences import PairSettings, PreferencePairs, relabel
from engines.lm.reward_model import RewardModelSettings
from widgets.explorable import figure_first
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.url_state import sync_url

TITLE = "Reward models"
SUMMARY = "Train a reward model from comparisons, read it against the ceiling Acc*, and see what it gets wrong."

PAGE_ROWS = 8
"""Pairs in the table at once; the pair slider pages through them."""
CURVE_POINTS = 50
"""About this many points on the live training curves (held-out accuracy is read at each)."""
SWEEP_TAUS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Label temperatures of the stretch experiment."""
PAIRS = SettingsControls(PairSettings)
"""The pairs' controls: how many, the rater's τ_label and the seed (engines/lm/preferences.py)."""
TRAINER = SettingsControls(RewardModelSettings)
"""The training's controls (engines/lm/reward_model.py): changing one retrains the reward model."""
THREE_MODELS = card_spec("reward-model/three-models", CHECK_QUESTION, CHECK_CHOICES, "ab", kind="Check yourself")
CARDS = (THREE_MODELS,)
"""The page's prediction card (the room's tally lists it)."""


class RewardModelPage(pn.viewable.Viewer):
    """Pairs (generated or loaded), their browser, live training, the readings, the probe, the sweep, saving."""

    pairs = PAIRS.integer("pairs", "Preference pairs", bounds=(50, 5000), step=50)
    tau_label = PAIRS.number("tau_label", "Label temperature τ_label", bounds=(0.05, 5.0), step=0.05)
    seed = PAIRS.integer("seed", "Seed (pairs and labels)", bounds=(0, 999_999))
    pair = param.Integer(default=0, bounds=(0, 4999), label="Pairs shown from #")
    steps = TRAINER.integer("steps", "Training steps", bounds=(20, 2000), step=10)
    min_count = TRAINER.integer("min_count", "Embedding for tokens seen at least (times)", bounds=(1, 10))
    train_seed = TRAINER.integer("seed", "Seed (training)", bounds=(0, 999_999))
    section = param.Selector(default="pairs", objects=list(SECTIONS), label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, root: Path | str | None = None,
                 cluster: Cluster | None = None, models: ModelCache | None = None, **params):
        super().__init__(**params)
        self.notice = sync_url(self, query=query)  # first: what follows is built from the link's values
        self.root = Path(runs.RUNS_DIR if root is None else root)
        self.cluster, self.models = cluster or current_cluster(), models or MODELS
        self.base: PreferencePairs | None = None  # the responses, with the labels they came with
        self.data: PreferencePairs | None = None  # the responses labelled as the page shows them
        # The settings that made `base`, if the server may keep what is trained on it (and share it with other sessions):
        # None for a file's pairs, which another session may have changed since.
        self.base_key: tuple | None = None
        self.source, self.label_seed = "", 0  # where `base` came from, and the seed its labels are drawn with
        self.file_labels = False  # a loaded file's own labels are kept until tau_label or the seed moves
        self._quiet = False  # set while the page itself moves tau_label to a loaded file's
        self._closed = False  # the tab has closed: nothing starts any more

        self.pairs_display = PairsDisplay(self.tau_label, PAGE_ROWS)
        self.sampling = PairsSampling(lambda: PAIRS.settings(self), self._take_sampled, self.start_pairs, self.cluster, self.models,
                                      self.param.seed)
        self.training = RewardModelTraining(lambda: self.data, self.train_settings, lambda: self.base_key,
                                            TrainingDisplay(self.steps, self.save_model), self.start_training, self.cluster,
                                            self.models, self.param.train_seed)
        self.pairs_files = PairsFiles(self.root, self.take_file, lambda: self.data,
                                      lambda path: self.pairs_display.summarise(self.data, self.source, saved=path),
                                      fail=self.sampling.job.fail)

        self.guide = session_guide()
        self.check_card = PredictionCard.of(THREE_MODELS, check_yourself_text(), self.guide)
        self.sweep = TauSweep(SWEEP_TAUS, self.start_sweep, lambda: self.data, self.cluster)
        builders = {"pairs": self._pairs_section, "training": self._training_section, "sweep": lambda: self.sweep}
        self.sections = LazySections(self.param.section, {key: (SECTIONS[key], build) for key, build in builders.items()})
        self.param.watch(self._changed, [*PAIRS.names, "pair", *TRAINER.names])  # after the link's: the first start is onload's
        pn.state.onload(self.start_pairs)

    def _changed(self, *events):
        if self._quiet:
            return
        names = {e.name for e in events}
        with pn.io.hold():
            if names & {"pairs", "seed"}:
                self.sampling.job.restart_soon()
            elif "tau_label" in names and self.base is not None:
                self._relabel()
            elif names & set(TRAINER.names) and self.data is not None:
                self.training.clear()
                self.training.job.restart_soon()
            if "tau_label" in names:
                self.pairs_display.prob.data = probability_curve(self.tau_label)
            if "pair" in names and self.data is not None:
                self.pairs_display.show_page(self.data, self.pair)

    def start_pairs(self) -> None:
        """Generate the pairs of the current settings (or take them from the server's cache)."""
        if self._closed:
            return
        self.training.job.stop()
        self.sweep.job.stop()
        self.sampling.start()

    def _take_sampled(self, pairs: PreferencePairs) -> None:
        self.set_pairs(pairs, sampled_source(self.seed), self.seed, keep_labels=False, key=pairs_key(PAIRS.settings(self)))

    def set_pairs(self, base: PreferencePairs, source: str, label_seed: int, keep_labels: bool, key: tuple | None = None) -> None:
        """Show `base` (relabelled at the page's tau_label unless `keep_labels`) and retrain on it; `key`: pairs_key's."""
        self.base, self.source, self.label_seed, self.file_labels, self.base_key = base, source, label_seed, keep_labels, key
        self.sampling.job.fail("")  # a file that could not be read is forgotten once pairs are shown
        with pn.io.hold():
            self.param.pair.bounds = (0, len(base) - 1)
            self.pair = min(self.pair, len(base) - 1)
            self.pairs_files.save_button.disabled = False
            self._relabel()

    def _relabel(self) -> None:
        keep = self.file_labels and self.tau_label == self.base.tau_label
        data = self.base if keep else relabel(self.base, self.tau_label, self.label_seed)
        self.pairs_display.show(data, self.source, self.pair)
        self.data = data  # set once its views show it, so whoever sees the new data sees them too
        self.sweep.job.stop()
        self.training.clear()
        self.training.job.restart_soon()

    def take_file(self, pairs: PreferencePairs, path: str) -> None:
        """Train on pairs read from a file, with their own labels at their own tau_label (the slider's, if it has it)."""
        self.sampling.job.stop()
        self._quiet = True
        if self.param.tau_label.bounds[0] <= pairs.tau_label <= self.param.tau_label.bounds[1]:
            self.tau_label = pairs.tau_label
        self._quiet = False
        self.pairs_display.prob.data = probability_curve(self.tau_label)
        self.set_pairs(pairs, file_source(path, pairs.model), pairs.seed, keep_labels=True)

    def train_settings(self) -> RewardModelSettings:
        return TRAINER.settings(self, eval_every=max(1, self.steps // CURVE_POINTS))

    def start_training(self) -> None:
        """Train the reward model on the pairs shown, replacing any run under way (or show the one the server kept)."""
        if not self._closed:
            self.training.start()

    def save_model(self) -> Path | None:
        """Save the trained model with its normaliser under the runs folder's reward-models/, and say how to use it."""
        if self.training.trained is None:
            return None
        path = runs.write_reward_model(self.root, self.training.trained, self.data, self.train_seed)
        self.training.display.saved.object = saved_model_text(path)
        return path

    def start_sweep(self) -> None:
        """Relabel the same responses at each of SWEEP_TAUS and retrain (the training settings above)."""
        if self.data is None or self._closed:
            self.sweep.job.controls.running = False
            return
        self.sweep.start(self.data, self.train_settings(), self.label_seed)

    def close(self) -> None:
        """The tab closed: stop every worker."""
        self._closed = True
        for job in (self.sampling.job, self.training.job, self.sweep.job):
            job.stop()

    def _pairs_section(self):
        return pn.Column(
            pn.Row(pn.Column(slider(self.param.pair, width=300), self.pairs_display.pair, sizing_mode="stretch_width"),
                   self.pairs_display.figure_view(), sizing_mode="stretch_width"),
            self.pairs_display.table_view(),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        return pn.Column(
            pn.pane.Markdown(TRAINING_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            pn.Row(slider(self.param.steps, width=260), slider(self.param.min_count, width=300)),
            self.training.job, self.training.display.curves_view(), *self.training.display.readings_view(),
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        # The pairs' settings lead the page: they feed every section (the pairs, the training on them, the sweep).
        return figure_first(
            summary=SUMMARY, prose=(INTRO, EQUATION, NOTICE, WHY), cards=(self.check_card,), notices=(self.notice,),
            controls=(slider(self.param.tau_label, width=300),),
            figures=(self.sections,),
            more=(pn.widgets.IntInput.from_param(self.param.pairs, width=160, description=None), self.sampling.job, self.pairs_files,
                  self.pairs_display.summary),
        )


def page(query: dict[str, str] | None = None) -> RewardModelPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return RewardModelPage(query=query)
