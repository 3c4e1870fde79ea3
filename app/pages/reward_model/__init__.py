"""Reward models: from comparisons to a trained, saved r_phi, seed 001 sections 7 and 8 and the lab's stretch.

The embedded language model writes pairs of 24-token continuations of the lab's prompts;
a hidden gold score g rates each, and a Bradley-Terry rater at tau_label labels the pair
(equation 12). A small transformer r_phi is trained on the labels with the pairwise
logistic loss (equation 14), its held-out accuracy drawn live under the ceiling Acc*
(equation 13), then read against g, probed with hand-written replies, normalised
(equation 15) and saved for the live-run page. The stretch retrains at several tau_label.

The three parts (the pairs, the training, the stretch) are tabs, each built the first time it
is opened (widgets/sections.py); the open one is the `section` control, in the link like every
other. The pairs are sampled and the reward model trained as soon as the page opens, whichever
tab is shown: the training's readings and the save button wait in their tab.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d

from app.jobs.cluster import Cluster, Queued, current as current_cluster
from app.jobs.model_cache import MODELS, ModelCache
from app.jobs.model_jobs import Failed, TrainingView, generate_pairs, pairs_key, told, train_reward_model
from app.pages.reward_model.figures import (accuracy_figure, label_frequencies, loss_figure, pairs_figure, pairs_rows, pairs_table,
                                        probe_table)
from app.pages.reward_model.pairs_files import PairsFiles
from app.pages.reward_model.preference_html import pair_html, pairs_summary, training_summary
from app.pages.reward_model.sweep import TauSweep
from app.pages.reward_model.text import (CHECK_CHOICES, CHECK_QUESTION, EQUATION, INTRO, NOTICE, PROBE_TITLE, READINGS,
                                    TRAINING_INTRO, TRAINING_TEXT, WAITING_TEXT, WHY, check_yourself_text, saved_model_text)
import app.jobs.runs as runs
from engines.bradley_terry import bt_prob, oracle_accuracy
from engines.lm.preferences import PairSettings, PreferencePairs, relabel
from engines.lm.reward_model import RewardModelSettings, TrainedRewardModel
from engines.lm.settings import EMBEDDED
from widgets.debounce import Debounce
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.headings import section_heading
from widgets.job_view import JobView
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.sections import LazySections
from widgets.settings_controls import SettingsControls
from widgets.sliders import slider
from widgets.url_state import notice_alert, sync_url

TITLE = "Reward models"
SUMMARY = "Train a reward model from comparisons, read it against the ceiling Acc*, and see what it gets wrong."

PAGE_ROWS = 8
"""Pairs in the table at once; the pair slider pages through them."""
CURVE_POINTS = 50
"""About this many points on the live training curves (held-out accuracy is read at each)."""
SWEEP_TAUS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Label temperatures of the stretch experiment."""
GAP_AXIS = np.linspace(-6.0, 6.0, 121)
"""Gold-score gaps g_a - g_b drawn on the equation-12 plot."""
RESTART_DELAY_MS = 300
"""Quiet time after the last change of a control before generation or training restarts."""
PAIRS = SettingsControls(PairSettings)
"""The pairs' controls: how many, the rater's τ_label and the seed (engines/lm/preferences.py)."""
TRAINER = SettingsControls(RewardModelSettings)
"""The training's controls (engines/lm/reward_model.py): changing one retrains the reward model."""

# --- the page ---------------------------------------------------------------------------------------------------


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
    section = param.Selector(default="pairs", objects=["pairs", "training", "sweep"], label="Section shown")

    def __init__(self, query: dict[str, str] | None = None, root: Path | str | None = None,
                 cluster: Cluster | None = None, models: ModelCache | None = None, **params):
        super().__init__(**params)
        self.root = Path(runs.RUNS_DIR if root is None else root)
        self.cluster, self.models = cluster or current_cluster(), models or MODELS
        self.base: PreferencePairs | None = None  # the responses, with the labels they came with
        self.data: PreferencePairs | None = None  # the responses labelled as the page shows them
        self.base_key: tuple | None = None  # the settings that made `base`, when the server may keep what it trains on
        self.data_key: tuple | None = None  # the same for `data`: base_key, tau_label and the label seed
        self.source = ""
        self.label_seed = 0
        self.file_labels = False  # a loaded file's own labels are kept until tau_label or the seed moves
        self.trained: TrainedRewardModel | None = None
        self._quiet = False  # set while the page itself moves controls to a loaded file's values
        self._closed = False  # the tab has closed: nothing starts any more
        self._debounce = Debounce(RESTART_DELAY_MS)

        self.table = ColumnDataSource({k: [] for k in ("index", "prompt", "text_a", "g_a", "text_b", "g_b", "preferred", "p_a")}, name="pairs")
        self.freq = ColumnDataSource({"gap": [], "frequency": [], "pairs": []}, name="label_frequency")
        self.prob = ColumnDataSource({"gap": [], "p": []}, name="probability")
        self.curve = ColumnDataSource({"step": [], "loss": [], "accuracy": []}, name="training")
        self.ceiling = ColumnDataSource({"step": [], "acc_star": []}, name="ceiling")
        self.probe = ColumnDataSource({k: [] for k in ("reply", "text", "g", "r_phi", "unknown_tokens")}, name="probe")
        # The training figures' step axes, set to the training's length before it starts (the figures come later).
        self.loss_steps, self.accuracy_steps = Range1d(0, self.steps), Range1d(0, self.steps)

        self.errors = notice_alert([])
        self.errors.alert_type = "danger"
        self.pairs_text = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.05em"})
        self.pair_text = pn.pane.HTML(sizing_mode="stretch_width")
        self.train_text = pn.pane.HTML(WAITING_TEXT, sizing_mode="stretch_width", styles={"font-size": "1.05em"})
        self.metrics = MetricRow(READINGS)
        self.metrics.pane.visible = False
        self.saved_text = pn.pane.Markdown("", sizing_mode="stretch_width", margin=(0, 10))
        self.pairs_files = PairsFiles(lambda: runs.pairs_files(self.root), self.load_file, self.save_pairs)
        self.save_button = pn.widgets.Button(label="Save reward model", color="primary", width=170, disabled=True)
        self.save_button.on_click(lambda _event: self.save_model())

        self.guide = session_guide()
        self.check_card = PredictionCard.of(THREE_MODELS, check_yourself_text(), self.guide)

        self.pairs_job = JobView(self._show_pairs, self.start_pairs, seed=self.param.seed)
        self.training_job = JobView(self._show_training, self.start_training, seed=self.param.train_seed)
        self.sweep = TauSweep(SWEEP_TAUS, self.start_sweep, lambda: self.data, self.cluster)
        controls = [*PAIRS.names, "pair", *TRAINER.names]  # the query string's order
        self.notice = sync_url(self, [*controls, "section"], query)
        self.sections = LazySections(self.param.section, {
            "pairs": ("1. Preference pairs", self._pairs_section),
            "training": ("2. Train the reward model", self._training_section),
            "sweep": ("3. Noisier raters (the stretch)", lambda: self.sweep),
        })
        self.param.watch(self._changed, controls)  # after the link's values: the first start is the onload one
        self._update_probability_curve()
        pn.state.onload(self.start_pairs)

    # -- events

    def _changed(self, *events):
        if self._quiet:
            return
        names = {e.name for e in events}
        with pn.io.hold():
            if names & {"pairs", "seed"}:
                self._debounce.soon("pairs", self.start_pairs)
            elif "tau_label" in names and self.base is not None:
                self._relabel()
            elif names & set(TRAINER.names) and self.data is not None:
                self._invalidate_model()
                self._debounce.soon("train", self.start_training)
            if "tau_label" in names:
                self._update_probability_curve()
            if "pair" in names and self.data is not None:
                self._update_table(self.data)

    # -- the pairs

    def pair_settings(self) -> PairSettings:
        return PAIRS.settings(self)

    def start_pairs(self) -> None:
        """Generate the pairs of the current settings (or take them from the server's cache)."""
        if self._closed:
            return
        self.training_job.stop()
        self.sweep.job.stop()
        settings = self.pair_settings()
        self.pairs_job.start(lambda: generate_pairs(settings, self.cluster, self.models))

    def _show_pairs(self, report) -> None:
        if told(self.pairs_job, report, "Sampling the pairs"):
            return
        if isinstance(report, PreferencePairs):
            base = report
        elif report.pairs is None:
            self.pairs_job.controls.progress = report.done / report.total
            return
        else:
            base = report.pairs
        self.set_pairs(base, f"sampled from the {EMBEDDED} model (seed {self.seed})", self.seed, keep_labels=False,
                       key=pairs_key(self.pair_settings()))

    def set_pairs(self, base: PreferencePairs, source: str, label_seed: int, keep_labels: bool, key: tuple | None = None) -> None:
        """Show `base` (relabelled at the page's tau_label unless `keep_labels`) and retrain on it.

        `key`: the settings that made `base` (pairs_key), so that the server may keep and share
        what is trained on it; None for a file, which another session may have changed since.
        """
        self.base, self.source, self.label_seed, self.file_labels, self.base_key = base, source, label_seed, keep_labels, key
        self.show_error("")
        with pn.io.hold():
            n = len(base)
            self._quiet = True
            self.pair = min(self.pair, n - 1)
            self.param.pair.bounds = (0, n - 1)
            self._quiet = False
            self.pairs_files.save_button.disabled = False
            self._relabel()

    def _relabel(self) -> None:
        keep = self.file_labels and self.tau_label == self.base.tau_label
        data = self.base if keep else relabel(self.base, self.tau_label, self.label_seed)
        self.data_key = None if self.base_key is None else (self.base_key, self.tau_label, self.label_seed)
        self.freq.data = label_frequencies(data)
        self.pairs_text.object = pairs_summary(data, self.source, float(oracle_accuracy(data.g_a, data.g_b, data.tau_label)))
        self._update_table(data)
        self.data = data  # set once its views show it, so whoever sees the new data sees them too
        self.sweep.job.stop()
        self._invalidate_model()
        self._debounce.soon("train", self.start_training)

    def _update_probability_curve(self) -> None:
        self.prob.data = {"gap": GAP_AXIS, "p": bt_prob(GAP_AXIS, 0.0, self.tau_label)}

    def _update_table(self, d: PreferencePairs) -> None:
        start = min(self.pair, len(d) - 1)
        rows = np.arange(start, min(start + PAGE_ROWS, len(d)))
        self.table.data = pairs_rows(d, rows, np.round(bt_prob(d.g_a[rows], d.g_b[rows], d.tau_label), 3))
        self.pair_text.object = pair_html(d, start, float(bt_prob(d.g_a[start], d.g_b[start], d.tau_label)))

    def load_file(self, path) -> None:
        """Read a pairs file from the runs folder and train on it; a bad file is one sentence and nothing else changes."""
        if not path:
            return
        try:
            pairs = runs.read_listed_pairs(self.root, path)
        except ValueError as error:
            self.show_error(str(error))
            return
        self.pairs_job.stop()
        self._quiet = True
        if self.param.tau_label.bounds[0] <= pairs.tau_label <= self.param.tau_label.bounds[1]:
            self.tau_label = pairs.tau_label
        self._quiet = False
        self._update_probability_curve()
        self.set_pairs(pairs, f"from {Path(path).name} (written by the {pairs.model or 'unnamed'} model)", pairs.seed, keep_labels=True)

    def save_pairs(self) -> Path | None:
        """Write the pairs shown to the runs folder's pairs/ (the file `feedback-lab train-reward --pairs` reads)."""
        if self.data is None:
            return None
        path = runs.write_pairs(self.root, self.data)
        self.pairs_files.refresh()
        self.saved_text.object = f"Pairs saved to `{path}`."
        return path

    def show_error(self, message: str) -> None:
        notice_alert([message] if message else [], self.errors)

    # -- training

    def train_settings(self) -> RewardModelSettings:
        return TRAINER.settings(self, eval_every=max(1, self.steps // CURVE_POINTS))

    def _invalidate_model(self) -> None:
        """The trained model no longer matches the data or the settings: clear its readings."""
        self.training_job.stop()
        self.trained = None
        self.curve.data = {"step": [], "loss": [], "accuracy": []}
        self.ceiling.data = {"step": [], "acc_star": []}
        self.probe.data = {k: [] for k in self.probe.data}
        self.metrics.pane.visible = False
        self.save_button.disabled = True
        self.training_job.controls.progress = 0.0

    def start_training(self) -> None:
        """Train the reward model on the pairs shown, replacing any run under way (or show the one the server kept)."""
        if self.data is None or self._closed:
            return
        self._invalidate_model()
        self.show_error("")
        self.train_text.object = TRAINING_TEXT
        self.loss_steps.end = self.accuracy_steps.end = self.steps
        pairs, settings = self.data, self.train_settings()
        key = None if self.data_key is None else ("reward model", self.data_key, settings)
        kept = None if key is None else self.models.result(key)
        if kept is not None:
            self._show_training(replace(kept, pairs=pairs))
            self.training_job.done(True)
            return
        self.training_job.start(lambda: train_reward_model(pairs, settings, key, self.cluster, self.models))

    def _show_training(self, view: TrainingView | Queued | Failed) -> None:
        if told(self.training_job, view, "The training"):
            return
        if view.pairs is not self.data or view.settings != self.train_settings():
            return  # delivered by a run replaced since
        with pn.io.hold():
            self.curve.data = view.curve
            self.ceiling.data = {"step": [0, view.settings.steps], "acc_star": [view.acc_star, view.acc_star]}
            self.training_job.controls.progress = view.progress
            if view.trained is None:
                return
            e = view.trained.evaluation
            self.metrics.update(accuracy=e.heldout_accuracy, se=e.heldout_se, acc_star=e.acc_star,
                                gold_order=e.gold_order_accuracy, spearman=e.spearman)
            self.metrics.pane.visible = True
            self.train_text.object = training_summary(view.trained)
            self.probe.data = {k: [row[k] for row in view.probe] for k in self.probe.data}
            self.save_button.disabled = False
            self.trained = view.trained  # last, as self.data

    def save_model(self) -> Path | None:
        """Save the trained model with its normaliser under the runs folder's reward-models/, and say how to use it."""
        if self.trained is None:
            return None
        path = runs.write_reward_model(self.root, self.trained, self.data, self.train_seed)
        self.saved_text.object = saved_model_text(path)
        return path

    # -- the stretch

    def start_sweep(self) -> None:
        """Relabel the same responses at each of SWEEP_TAUS and retrain (the training settings above)."""
        if self.data is None or self._closed:
            self.sweep.job.controls.running = False
            return
        self.show_error("")
        self.sweep.start(self.data, self.train_settings(), self.label_seed)

    def close(self) -> None:
        """The tab closed: stop every worker."""
        self._closed = True
        for job in (self.pairs_job, self.training_job, self.sweep.job):
            job.run.stop()

    def _pairs_section(self):
        return pn.Column(
            pn.Row(pn.widgets.IntInput.from_param(self.param.pairs, width=160, description=None), slider(self.param.tau_label, width=300)),
            self.pairs_job,
            self.pairs_files,
            self.pairs_text,
            pn.Row(
                pn.Column(slider(self.param.pair, width=300), self.pair_text, sizing_mode="stretch_width"),
                plot_with_downloads(pairs_figure(self.prob, self.freq), {"label_frequency": self.freq, "probability": self.prob},
                                    "Equation 12 in the pairs"),
                sizing_mode="stretch_width",
            ),
            plot_with_downloads(pairs_table(self.table), {"pairs": self.table}),
            sizing_mode="stretch_width",
        )

    def _training_section(self):
        return pn.Column(
            pn.pane.Markdown(TRAINING_INTRO, sizing_mode="stretch_width", margin=(0, 10)),
            pn.Row(slider(self.param.steps, width=260), slider(self.param.min_count, width=300)),
            self.training_job,
            pn.Row(
                plot_with_downloads(loss_figure(self.curve, self.loss_steps), {"training": self.curve}, "Training loss"),
                plot_with_downloads(accuracy_figure(self.curve, self.ceiling, self.accuracy_steps),
                                    {"training": self.curve, "ceiling": self.ceiling}, "Held-out accuracy under the ceiling Acc*"),
                sizing_mode="stretch_width",
            ),
            self.train_text,
            self.metrics,
            section_heading(PROBE_TITLE),
            plot_with_downloads(probe_table(self.probe), {"probe": self.probe}),
            pn.Row(self.save_button),
            self.saved_text,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return pn.Column(
            self.notice,
            self.errors,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=self.check_card),
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None) -> RewardModelPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return RewardModelPage(query=query)
