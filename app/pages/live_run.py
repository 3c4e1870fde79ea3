"""Live REINFORCE on a language model: seed 000 sections 6.11 and 6.12, run in the browser.

Start a run and watch it happen: each training step samples K replies to each prompt,
scores them with a sentiment reward, and ascends the REINFORCE estimate with per-token
shaped rewards r_t = -beta (log pi - log ref) + [t = T-1] R and a leave-one-out baseline
(engines/lm/reinforce.py). The page draws the reward, P(positive), the KL to the reference,
the entropy and the held-out distinct-n as the run goes, shades each token of the newest
replies by its log-ratio to the reference, and shows the seed's held-out `[eval]` table and
its token-by-token worked example.

The run is a model job (app/model_jobs.py) on the server's Dask cluster: a worker process
trains it and appends every result to its run folder (app/runs.py) before sending it, so a
closed tab or a killed server loses at most the step in flight. Runs wait their turn per
device across the cluster. When a tab closes, its queued run leaves the line and its running
run stops at the next step boundary: the step in flight is finished and written first, then
the files are closed, and the run is listed as interrupted. (Closing a tab stops its work, as on every page; and no unwatched run holds the
device while others wait.) A paused run keeps its place on the device until it is resumed or
stopped, so a class can pause to read the samples without losing its turn.

The reward may be a reward model saved by the reward-models page (seed 001 sections 6 to 8):
the run then trains on the lab's feeling prompts and every result carries the gold score g
of the same replies, drawn dashed beside the learned reward over steps and over the KL to
the reference (the over-optimisation curve of Gao et al. 2023). A hub model or classifier
not yet on this machine is sized first and downloaded with a progress bar; offline, one
sentence says it cannot be fetched. The server's limits (app/limits.py) bound every control.
"""

from __future__ import annotations

import html
import io
import math
import re
import unicodedata
import zipfile
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import panel as pn
import param
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool

from app.cluster import Cluster, current as current_cluster
from app.limits import ServerLimits, current as current_limits
from app.model_jobs import LiveRun, LiveState, run_label
from app.runs import FILES, RUNS_DIR, Run, learned_rewards, read_run
from app.train_lm import format_eval, format_worked_example
from engines.lm.models import EMBEDDED, EMBEDDED_DIR
from engines.lm.results import EvalResult, worked_example
from engines.lm.rewards import REWARDS
from engines.lm.settings import DEVICES, REWARD_PREFIX, LMSettings, default_lr
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.metrics import MetricRow
from widgets.number_box import number_box
from widgets.run_controls import RunControls, seed_control
from widgets.run_html import CSS as RUN_CSS, eval_table_html, ratio_scale_html, samples_html, worked_example_html
from widgets.streaming import StreamingRun, in_document
from widgets.style import OKABE_ITO, plot
from widgets.url_state import sync_url

TITLE = "Live run: REINFORCE on a language model"
SUMMARY = "Train a language model against a sentiment reward in the browser: reward climbs, KL grows, and without a penalty the replies degrade."

DEFAULTS = LMSettings()
"""The engine's defaults (the seed's recipe): every control starts from them."""
KEEP_SAMPLES = DEFAULTS.keep_samples
"""Newest replies kept per step for display (fewer when a step has fewer prompts)."""
STEP_COLUMNS = ("step", "reward", "p_positive", "kl", "entropy", "grad_norm", "step_time", "gold")
EVAL_COLUMNS = ("step", "reward", "p_positive", "kl_exact", "kl", "entropy", "ref_perplexity", "distinct_1", "distinct_2", "gold")
"""The curves' columns; "gold" is NaN (drawn as nothing) unless the reward is a learned reward model."""
LIVE = OKABE_ITO["blue"]
OVERLAY_COLOURS = tuple(OKABE_ITO[k] for k in ("orange", "green", "vermillion", "purple", "sky", "yellow", "grey"))
"""Colours of earlier runs drawn over the curves, in the order they are ticked."""
MODEL_CHARS = 200
"""Longest model name, hub id or folder the page takes (less where the server's max_prompt_chars is less)."""
MODEL_PATTERN = rf"^[^\x00-\x1f]{{0,{MODEL_CHARS}}}$"
"""A model name from a link: printable, at most MODEL_CHARS characters (the text box says more, see model_problem)."""
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
"""The form of a hub id: a name, or owner/name."""
LIMITED = {
    "steps": ("max_steps", "steps per run"),
    "eval_every": ("max_steps", "steps between evaluations"),
    "prompts": ("max_prompts", "prompts per step"),
    "eval_prompts": ("max_prompts", "held-out prompts"),
    "replies": ("max_replies", "replies per prompt"),
    "eval_replies": ("max_replies", "replies per held-out prompt"),
    "T": ("max_reply_tokens", "tokens per reply"),
}
"""The controls the server's limits bound: control -> (ServerLimits field, what it counts)."""

INTRO = (
    "This is section 6.11's experiment, live. A language model continues the first 8 tokens of a "
    "movie review with 24 more, sampled at temperature 1; a sentiment reward scores prompt plus reply in "
    "log-odds; REINFORCE with a leave-one-out baseline over the K replies to each prompt makes the "
    "well-scored replies more likely. The KL penalty (section 6.12) charges every token for its "
    "log-ratio to the frozen starting model. The default model is the project's own small "
    "GPT-2-architecture model (0.9 M parameters, trained on movie-review text the project generates), "
    "because GPT-2 cannot be downloaded everywhere; give a hub id (gpt2) or a folder to use another. "
    "The default reward is the VADER sentiment lexicon; lvwerra/distilbert-imdb is the seed's classifier."
)
EQUATION = (
    r"r_t = -\beta\,\big(\log \pi_\theta(y_t \mid s_t) - \log \pi_{\text{ref}}(y_t \mid s_t)\big) + \mathbb{1}[t = T-1]\,R(x, y),"
    r"\quad G_t = \sum_{t' \ge t} r_{t'},\quad \text{loss} = -\tfrac{1}{NT}\sum_{i,t} \big(G_t^{(i)} - b_t^{(i)}\big) \log \pi_\theta(y_t^{(i)} \mid s_t^{(i)})"
)
NOTICE = (
    "With β = 0 the reward climbs to its ceiling while the KL grows without limit, the entropy and "
    "distinct-1 fall, and the replies collapse onto a few glowing words on a loop (the seed's Run 1). "
    "With β = 0.05 or 0.2 the reward rises less and the replies stay English. In the samples, orange "
    "tokens are where the policy has moved away from the reference: that is where the penalty lands."
)
PREDICT = (
    "Before you start a run with β = 0: the reward will rise. What will the replies look like after "
    "a hundred steps, and what will happen to distinct-1?"
)
GOODHART = (
    "With a saved reward model the run continues the lab's feeling prompts, on which it was trained. "
    "The dashed lines are the gold score g of the same replies: the hidden rule that labelled the reward model's "
    "training pairs (distinct positive words count, up to three; negative words and crowding cost). The policy is "
    "trained on the reward model's R, which learned g only from replies like those in its pairs, so the further the "
    "policy moves from the reference, the more it finds replies where R is high and g is not: R climbs while g stalls "
    "or falls (Goodhart's law). Over the KL, this is the over-optimisation curve of Gao et al. (2023)."
)
COMPARE = (
    "Reward, P(positive), KL (exact) and distinct-1 are each run's last held-out evaluation. "
    "Tick runs to draw them over the curves and to download them. The seed compares three runs with "
    "the same seed: β = 0 (Run 1), 0.05 and 0.2 (Runs 2 and 3); start them one after another, or in "
    "three tabs (they wait their turn for the device)."
)

CSS = """
.fl-status { font-size: 1.05em; margin: 0.2em 0.6em; }
.fl-queue { margin: 0 0.6em; opacity: 0.85; }
.fl-legend { display: flex; flex-wrap: wrap; gap: 0.3em 1.4em; align-items: center; margin: 0.2em 0.6em; }
.fl-swatch { display: inline-block; width: 1.6em; height: 0.3em; vertical-align: middle; margin-right: 0.4em; }
.fl-caption { margin: 0.3em 0.6em; }
""" + RUN_CSS


# ----------------------------------------------------------------------------- what the page shows


def eval_lines(results: tuple[EvalResult, ...], settings: LMSettings) -> str:
    """The evaluations as `feedback-lab train-lm` prints them (the seed's `[eval ...]` lines)."""
    return "\n".join(format_eval(r, settings) for r in results)


def reward_label(reward: str) -> str:
    """How the worked example names the reward's log-odds."""
    return "VADER" if reward == "vader" else "reward-model" if is_learned(reward) else "classifier"


def is_learned(reward: str) -> bool:
    """True for a saved reward model ('reward-model:PATH'), the reward that has a gold score beside it."""
    return reward.startswith(REWARD_PREFIX)


def reward_options(runs_dir: Path) -> dict[str, str]:
    """The Reward control's entries, label -> reward: the registered rewards, then each saved reward model by file name."""
    return {name: name for name in REWARDS} | {f"learned: {Path(r[len(REWARD_PREFIX):]).name}": r for r in learned_rewards(runs_dir)}


def format_bytes(n: int) -> str:
    """548105171 -> '548 MB' (decimal units, as the hub shows sizes)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{n} bytes"


def shown_path(path: Path) -> str:
    """A folder as a sentence names it: relative to the working folder when inside it."""
    path = path.resolve()
    return f"{path.relative_to(Path.cwd())}/" if path.is_relative_to(Path.cwd()) else f"{path}/"


def model_problem(name: str, folders: tuple[Path, ...], max_chars: int) -> str:
    """Why the model box's text cannot be a model, in one sentence ('' when it may be one).

    A folder must lie inside `folders` (what this server lets a learner load); a hub id
    must have a hub id's form. Whether the hub has it is learned when the run starts.
    """
    where = " or ".join(shown_path(f) for f in folders)
    if not name.strip():
        return f"Give a model: 'embedded', a hub id such as gpt2, or a folder in {where}."
    if len(name) > max_chars:
        return f"A model name has at most {max_chars} characters; this one has {len(name):,}."
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "The model name holds a control character (a line break, a tab or an invisible code); type it on one line."
    name = name.strip()
    if name == EMBEDDED:
        return ""
    path = Path(name).expanduser()
    if name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1 or path.is_dir():
        folder = path.resolve()
        if not any(folder.is_relative_to(f.resolve()) for f in folders):
            return f"The folder {name} is outside the folders this server loads models from ({where})."
        if not (folder / "config.json").is_file():
            return f"There is no model in the folder {name} (it has no config.json)."
        return ""
    if HUB_ID.match(name) is None or "--" in name or ".." in name:
        return f"'{name}' is not a model name: give 'embedded', a hub id such as gpt2 or distilbert/distilgpt2, or a folder in {where}."
    return ""


def limit_bounds(limits: ServerLimits, page: param.Parameterized) -> dict[str, int]:
    """The highest value of each limited control: the server's limit (within what the engine takes)."""
    highest = {name: getattr(limits, field) for name, (field, _) in LIMITED.items()}
    highest["eval_prompts"] = min(highest["eval_prompts"], page.param.eval_prompts.bounds[1])
    return highest


def clamp_query(query: dict[str, str], highest: dict[str, int]) -> tuple[dict[str, str], list[str]]:
    """A link's values with every number above the server's limit set to the limit, and one sentence for each."""
    query, notices = dict(query), []
    for name, n in highest.items():
        try:
            value = float(query[name])
        except (KeyError, ValueError):
            continue  # absent, or not a number: sync_url says so
        if math.isfinite(value) and value > n:
            query[name] = str(n)
            notices.append(limit_sentence(name, n))
    return query, notices


def limit_sentence(name: str, n: int) -> str:
    """What a link or a box asking for more than the limit `n` of control `name` is told."""
    return f"This server allows at most {n} {LIMITED[name][1]}; the run was set to {n}."


def limit_problem(settings: LMSettings, highest: dict[str, int]) -> str:
    """One sentence if `settings` ask for more than the server allows ('' otherwise)."""
    for name, n in highest.items():
        value = getattr(settings, name)
        if value > n:
            return f"This server allows at most {n} {LIMITED[name][1]}; this run asks for {value}, so it was not started."
    return ""


def example_options(result: EvalResult) -> dict[str, int]:
    """The worked-example selector's entries: every held-out reply of an evaluation."""
    return {f"{i}: {p}|{y[:60]}": i for i, (p, y) in enumerate(zip(result.prompts, result.replies))}


def run_status(run: Run, running: set[str]) -> str:
    """finished (every step written), running (training now in this server), or interrupted."""
    if run.id in running:
        return "running"
    return "finished" if run.finished else "interrupted"


def runs_frame(runs: list[Run], running: set[str]) -> pd.DataFrame:
    """The table of run folders (their names give time, model, reward and beta): how far each got, its last held-out evaluation."""
    rows = []
    for run in runs:
        s, last = run.config.get("settings", {}), (run.evals[-1] if run.evals else {})
        rows.append({
            "run": run.id,
            "status": run_status(run, running),
            "β": s.get("beta", math.nan),
            "steps": f"{run.metrics[-1]['step'] if run.metrics else 0} / {s.get('steps', '?')}",
            "reward": round(last.get("reward", math.nan), 2),
            "P(positive)": round(last.get("p_positive", math.nan), 3),
            "KL": round(last.get("kl_exact", math.nan), 2),
            "distinct-1": round(last.get("distinct_1", math.nan), 3),
            "gold": round(last.get("gold", math.nan), 2),
        })
    columns = ["run", "status", "β", "steps", "reward", "P(positive)", "KL", "distinct-1", "gold"]
    return pd.DataFrame(rows, columns=columns)


def columns_of(records: list[dict], keys: tuple[str, ...]) -> dict[str, list]:
    """Records as plot columns; a key a record lacks (gold, without a learned reward) is NaN there."""
    return {k: [r.get(k, math.nan) for r in records] for k in keys}


def zip_runs(folders: list[Path]) -> io.BytesIO:
    """The run folders' files in one zip, a folder per run."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in folders:
            for name in ("config.json", *FILES):
                if (folder / name).is_file():
                    archive.write(folder / name, f"{folder.name}/{name}")
    buffer.seek(0)
    return buffer


# ----------------------------------------------------------------------------- the page


class LiveRunPage(pn.viewable.Viewer):
    """The run's settings; start, pause, resume, stop; live curves, samples, tables; earlier runs."""

    model = param.String(default=DEFAULTS.model, regex=MODEL_PATTERN, label="Model: embedded, a hub id (gpt2) or a folder")
    reward = param.Selector(default=DEFAULTS.reward, objects=list(REWARDS), label="Reward",
                            doc="The registered rewards and, per page, the reward models saved in the runs folder.")
    beta = param.Number(default=DEFAULTS.beta, bounds=(0.0, 10.0), step=0.01, label="KL coefficient β")
    lr = param.Number(default=default_lr(DEFAULTS.model), bounds=(1e-7, 1e-2), step=1e-5, label="Learning rate (Adam)")
    steps = param.Integer(default=DEFAULTS.steps, bounds=(1, 5000), label="Training steps")
    # The highest values of these bounds are the server's limits, set per page (LIMITED).
    prompts = param.Integer(default=DEFAULTS.prompts, bounds=(1, 64), label="Prompts per step")
    replies = param.Integer(default=DEFAULTS.replies, bounds=(2, 16), label="Replies per prompt K")
    T = param.Integer(default=DEFAULTS.T, bounds=(1, 64), label="Reply length T (tokens)")
    seed = param.Integer(default=DEFAULTS.seed, bounds=(0, 999_999), label="Seed")
    device = param.Selector(default=DEFAULTS.device, objects=list(DEVICES), label="Device",
                            doc="auto: the best device a worker of the cluster offers; a device no worker offers is refused at Start.")
    eval_every = param.Integer(default=DEFAULTS.eval_every, bounds=(1, 5000), label="Evaluate every (steps)")
    eval_prompts = param.Integer(default=DEFAULTS.eval_prompts, bounds=(1, 64), label="Held-out prompts")
    eval_replies = param.Integer(default=DEFAULTS.eval_replies, bounds=(1, 16), label="Replies per held-out prompt")
    phase = param.Selector(default="idle", objects=["idle", "loading", "downloading", "queued", "running", "paused"], precedence=-1,
                           doc="What this tab's run is doing.")

    SETTINGS = ("model", "reward", "beta", "lr", "steps", "prompts", "replies", "T", "seed", "device",
                "eval_every", "eval_prompts", "eval_replies")

    def __init__(self, query: dict[str, str] | None = None, runs_dir: Path | str | None = None,
                 cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else RUNS_DIR
        self.cluster = cluster or current_cluster()
        self.limits = current_limits()
        self.highest = limit_bounds(self.limits, self)
        for name, n in self.highest.items():
            low = self.param[name].bounds[0]
            self.param[name].bounds = (low, max(low, n))  # replies >= 2 even where the limit is 1: start() refuses then
            if getattr(self, name) > n:
                setattr(self, name, max(low, n))
        self.model_chars = min(MODEL_CHARS, self.limits.max_prompt_chars)
        self.model_folders = (EMBEDDED_DIR.parent, self.runs_dir)
        """Where a model folder may lie: the bundled models and the runs folder (nothing else on the server is read)."""
        self._doc = pn.state.curdoc if pn.state.curdoc and pn.state.curdoc.session_context else None
        self._run: LiveRun | None = None
        self._state: LiveState | None = None
        self._shown = (-1, -1)
        self._runs: dict[str, tuple[tuple, Run]] = {}
        self._overlaid: list[str] = []

        self.steps_source = ColumnDataSource({k: [] for k in STEP_COLUMNS}, name="metrics")
        self.evals_source = ColumnDataSource({k: [] for k in EVAL_COLUMNS}, name="evals")
        self.overlay_steps = ColumnDataSource({k: [] for k in ("xs", "reward", "p_positive", "kl", "entropy", "gold", "colour", "label")}, name="overlay_metrics")
        self.overlay_evals = ColumnDataSource({k: [] for k in ("xs", "distinct_1", "distinct_2", "kl_xs", "reward", "gold", "colour", "label")}, name="overlay_evals")
        self.figures = self._figures()

        self.runner = StreamingRun(self._show_state, self._done)
        self.controls = RunControls(self.start, self.stop)
        self.pause_button = pn.widgets.Button(label="Pause", width=90, disabled=True)
        self.resume_button = pn.widgets.Button(label="Resume", color="primary", width=90, disabled=True)
        self.pause_button.on_click(lambda _e: self.pause())
        self.resume_button.on_click(lambda _e: self.resume())
        self.status = pn.pane.HTML(self._idle_text(None), sizing_mode="stretch_width", stylesheets=[CSS])
        self.queue_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.error = pn.pane.Alert(alert_type="danger", visible=False, sizing_mode="stretch_width", css_classes=["fl-run-error"])
        self.download_bar = pn.indicators.Progress(value=0, max=1000, visible=False, sizing_mode="stretch_width",
                                                   css_classes=["fl-download"])
        self.goodhart = pn.pane.Markdown(GOODHART, sizing_mode="stretch_width", margin=(0, 10), css_classes=["fl-goodhart"])
        self.model_box = pn.widgets.TextInput(label=self.param.model.label, value=self.model, width=330,
                                              max_length=max(self.model_chars + 1, 5000))
        self.model_box.param.watch(self._model_typed, "value")
        self.metrics = MetricRow({
            "step": ("step", "{value:.0f}"),
            "reward": ("reward R (log-odds)", "{value:+.2f}"),
            "p_positive": ("P(positive)", "{value:.3f}"),
            "kl": ("KL k1 (nats/reply)", "{value:.2f}"),
            "entropy": ("entropy (nats/token)", "{value:.2f}"),
            "grad_norm": ("gradient norm", "{value:.2f}"),
            "step_time": ("seconds per step", "{value:.2f}"),
        })
        self.legend = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.samples = pn.pane.HTML(samples_html(0, ()), sizing_mode="stretch_width", stylesheets=[CSS])
        self.eval_table = pn.pane.HTML(eval_table_html([]), sizing_mode="stretch_width", stylesheets=[CSS])
        self.eval_text = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.example_choice = pn.widgets.Select(label="Held-out reply of the latest evaluation", options={}, width=640)
        self.example_choice.param.watch(lambda _e: self._show_example(), "value")
        self.example = pn.pane.HTML('<p class="fl-caption">The worked example appears after the first evaluation.</p>',
                                    sizing_mode="stretch_width", stylesheets=[CSS])
        self.runs_table = pn.widgets.Tabulator(runs_frame([], set()), selectable="checkbox", disabled=True, show_index=False,
                                               layout="fit_data_table", pagination="local", page_size=10,
                                               sizing_mode="stretch_width", css_classes=["fl-runs"])
        self.runs_table.param.watch(self._overlay_changed, "selection")
        self.refresh_button = pn.widgets.Button(label="Refresh the list", width=150)
        self.refresh_button.on_click(lambda _e: self.refresh_runs())
        self.download = pn.widgets.FileDownload(callback=self._download, filename="runs.zip", embed=False, color="light",
                                                label="Download runs (zip): the ticked ones, or all", width=320)

        self.param.watch(self._model_changed, "model")
        self.param.watch(lambda _e: self._show_phase(), "phase")
        self.param.watch(lambda _e: self._show_reward_kind(), "reward")
        self._refresh_rewards()
        self.notice = sync_url(self, list(self.SETTINGS), query, adjust=lambda link: clamp_query(link, self.highest))
        self._show_reward_kind()
        self._unsubscribe = self.cluster.subscribe(self._queue_changed)
        self._show_legend()
        self._show_queue()
        self.refresh_runs()

    # --- settings ------------------------------------------------------------------------

    def settings(self) -> LMSettings:
        """The controls as the engine's settings (ValueError with one sentence if refused)."""
        return LMSettings(
            model=self.model.strip(), reward=self.reward, beta=self.beta, lr=self.lr, steps=self.steps,
            prompts=self.prompts, replies=self.replies, T=self.T, seed=self.seed, device=self.device,
            eval_every=self.eval_every, eval_prompts=self.eval_prompts, eval_replies=self.eval_replies,
            keep_samples=min(KEEP_SAMPLES, self.prompts),
            # A reward model scores the lab's feeling prompts it was trained on (seed 001 section 6), not movie reviews.
            prompt_set="feelings" if is_learned(self.reward) else "reviews",
        )

    def _model_typed(self, event) -> None:
        """The model box changed: a usable name becomes the model (and the link's), anything else gets its sentence."""
        problem = model_problem(event.new, self.model_folders, self.model_chars)
        self._show_error(problem)
        if not problem:
            self.model = event.new.strip()

    def _refresh_rewards(self) -> None:
        """Offer the reward models saved in the runs folder now; a chosen one that is gone falls back to the default."""
        options = reward_options(self.runs_dir)
        chosen = self.reward
        self.param.reward.objects = options
        if chosen not in options.values():
            self.reward = DEFAULTS.reward

    def _show_reward_kind(self) -> None:
        """A learned reward: the gold score's sentence and the curves' labels say it is drawn beside the reward."""
        learned = is_learned(self.reward)
        self.goodhart.visible = learned
        self.figures[0].yaxis.axis_label = "learned reward R and gold g" if learned else "reward R (log-odds)"
        self.figures[-1].yaxis.axis_label = "learned reward R and gold g" if learned else "reward R (log-odds)"
        self._draw_overlays()

    def _model_changed(self, event) -> None:
        if self.model_box.value.strip() != event.new:
            self.model_box.value = event.new  # a link or the code set it: the box shows it
        # The learning rate follows the model's default unless it was set by hand.
        if math.isclose(self.lr, default_lr(event.old.strip())):
            self.lr = default_lr(event.new.strip())

    # --- start, pause, resume, stop ------------------------------------------------------

    def start(self) -> None:
        """Start a run with the current settings (it may wait in the device's queue)."""
        problem = model_problem(self.model_box.value, self.model_folders, self.model_chars)
        if problem:
            self._show_error(problem)
            return
        try:
            settings = self.settings()
        except ValueError as error:
            self._show_error(str(error))
            return
        problem = limit_problem(settings, self.highest)
        if problem:
            self._show_error(problem)
            return
        self._show_error("")
        self._state = LiveState("loading", settings)
        self._shown = (-1, -1)
        self.controls.param.update(running=True, progress=0.0)
        self.phase = "loading"
        if self._run is not None:
            self._run.stop()
        self._run = LiveRun(settings, self.runs_dir, self.cluster)
        self.runner.start(self._run.states)

    def pause(self) -> None:
        """Hold the run after the step in flight; it keeps its device."""
        if self.phase == "running" and self._run is not None:
            self._run.pause()

    def resume(self) -> None:
        if self._run is not None:
            self._run.resume()
            if self.phase == "paused":
                self.phase = "running"

    def stop(self) -> None:
        """Stop the run after the step in flight (a queued run leaves the queue); its files stay.

        A run on its worker ends by itself once told, its last step written and shown; a run
        still loading or downloading is cut off at once.
        """
        if self._run is not None and self._run.job is not None:
            self._run.stop()
        else:
            self.runner.stop()

    def close(self) -> None:
        """The tab closed: a queued run leaves the line, a running one stops at the next step boundary."""
        if self._run is not None:
            self._run.stop()
        self.runner.stop()
        self._unsubscribe()

    # --- showing the run -----------------------------------------------------------------

    def _show_state(self, state: LiveState) -> None:
        """Draw a snapshot: the parts whose data changed, in one batch."""
        self._state = state
        with pn.io.hold():
            if state.phase != "error" and self.phase != state.phase:
                self.phase = state.phase
            self.status.object = self._status_text(state)
            self.download_bar.visible = state.download is not None
            if state.download is not None:
                _, done, total = state.download
                self.download_bar.value = int(self.download_bar.max * done / total) if total else 0
            if len(state.metrics) != self._shown[0]:
                self._show_steps(state)
            if len(state.evals) != self._shown[1]:
                self._show_evals(state)
            self._shown = (len(state.metrics), len(state.evals))

    def _show_steps(self, state: LiveState) -> None:
        self.steps_source.data = columns_of(list(state.metrics), STEP_COLUMNS)
        if state.metrics:
            self.metrics.update(**state.metrics[-1])
            self.controls.progress = min(state.step / state.settings.steps, 1.0)
        self.samples.object = samples_html(state.step, state.samples)

    def _show_evals(self, state: LiveState) -> None:
        evals = list(state.evals)
        self.evals_source.data = columns_of(evals, EVAL_COLUMNS)
        self.eval_table.object = eval_table_html(evals)
        self.eval_text.object = f'<pre class="fl-lines">{html.escape(eval_lines(state.eval_results, state.settings))}</pre>' if evals else ""
        if state.eval_results:
            chosen = self.example_choice.value
            options = example_options(state.eval_results[-1])
            self.example_choice.options = options
            self.example_choice.value = chosen if chosen in options.values() else 0
            self._show_example()

    def _show_example(self) -> None:
        state = self._state
        if state is None or not state.eval_results or self.example_choice.value is None:
            return
        ex = worked_example(state.eval_results[-1], int(self.example_choice.value))
        lines = format_worked_example(ex, reward_label(state.settings.reward)).splitlines()
        self.example.object = worked_example_html(ex, lines[0], lines[-1])

    def _status_text(self, state: LiveState) -> str:
        s = state.settings
        if state.phase == "loading":
            return (f'<p class="fl-status">Loading: {html.escape(run_label(s))} on {state.device or s.device} (the first run '
                    "of a model on a worker reads it from disk)…</p>")
        if state.phase == "downloading":
            name, done, total = state.download
            return (f'<p class="fl-status">{html.escape(name)}: {format_bytes(total)} to download, {format_bytes(done)} done '
                    "(once only: it is kept in this machine's Hugging Face cache).</p>")
        if state.phase == "queued":
            return (
                f'<p class="fl-status">Waiting for {state.device}: your run is number {state.position} in line. It starts when '
                "the runs before it finish or are stopped; closing this tab takes it out of the line.</p>"
            )
        if state.phase == "error":
            return f'<p class="fl-status">{self._idle_text(state)}</p>'
        where = html.escape(str(state.folder))
        if state.phase == "paused":
            return (
                f'<p class="fl-status">Paused after step {state.step} of {s.steps}. The run keeps its place on {state.device}: '
                f"Resume continues it, Stop ends it and lets waiting runs start. Files: {where}</p>"
            )
        times = [m["step_time"] for m in state.metrics[-10:]]
        pace = ""
        if times:
            left = float(np.median(times)) * (s.steps - state.step)
            pace = f" · {np.median(times):.2f} s per step, about {left / 60:.0f} min of training left" if left >= 60 else f" · {np.median(times):.2f} s per step"
        return f'<p class="fl-status">Running on {state.device}: {state.step} of {s.steps} steps done{pace} · writing {where}</p>'

    def _idle_text(self, state: LiveState | None) -> str:
        if state is None:
            return ('<p class="fl-status">No run yet: choose the settings and press Start. On a CPU a step of the seed\'s batch '
                    "(16 prompts × 4 replies × 24 tokens) of the embedded model takes one to a few seconds; try 50 steps first.</p>")
        if state.folder is None:
            return "No run was started."
        done = state.metrics[-1]["step"] if state.metrics else 0
        if done >= state.settings.steps:
            return f"Finished: all {done} steps are written to {html.escape(str(state.folder))}."
        return f"Stopped after step {done} of {state.settings.steps}; {html.escape(str(state.folder))} holds every step done."

    def _done(self, finished: bool) -> None:
        """The worker has ended (finished, stopped, or refused): show the final state and the list of runs."""
        state = self._state
        self.controls.running = False
        if state is not None:
            self._show_state(state)
            if state.phase == "error":
                self._show_error(state.message)
            else:
                self.status.object = f'<p class="fl-status">{self._idle_text(state)}</p>'
        self.phase = "idle"
        self.refresh_runs()

    def _show_error(self, message: str) -> None:
        self.error.object = html.escape(message)
        self.error.visible = bool(message)

    def _show_phase(self) -> None:
        idle = self.phase == "idle"
        self.pause_button.disabled = self.phase != "running"
        self.resume_button.disabled = self.phase != "paused"
        for widget in self._setting_widgets():
            widget.disabled = not idle

    # --- the queue and the runs folder ---------------------------------------------------

    def _queue_changed(self) -> None:
        """Called by the queue from any thread: redraw on this session's own thread."""
        if self._doc is None:
            self._show_queue()
            return
        try:
            self._doc.add_next_tick_callback(partial(in_document, self._doc, self._show_queue))
        except (RuntimeError, AttributeError):
            pass  # this tab has closed: nothing of it to redraw

    def _show_queue(self) -> None:
        lines = []
        for q in self.cluster.overview():
            running = "; ".join(map(html.escape, q.running)) or "nothing"
            lines.append(f"<b>{q.device}</b>: training {running}; {len(q.waiting)} waiting")
        text = " · ".join(lines) if lines else "No run is training on this server."
        self.queue_line.object = f'<p class="fl-queue">Device queue: {text}</p>'
        if self._runs:
            self._show_runs()

    def refresh_runs(self) -> None:
        """Read the runs folder again (only the runs whose files changed) and redraw the list."""
        found = {}
        if self.runs_dir.is_dir():
            for folder in sorted(self.runs_dir.iterdir()):
                if not (folder / "config.json").is_file():
                    continue
                stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None
                              for p in (folder / n for n in ("config.json", *FILES)))
                cached = self._runs.get(folder.name)
                found[folder.name] = cached if cached is not None and cached[0] == stamp else (stamp, read_run(folder))
        self._runs = found
        self._refresh_rewards()
        self._show_runs()

    def _show_runs(self) -> None:
        runs = [run for _, run in self._runs.values()]
        frame = runs_frame(runs, self.cluster.running_ids())
        with pn.io.hold():
            self.runs_table.value = frame
            ids = list(frame["run"])
            self.runs_table.selection = [ids.index(i) for i in self._overlaid if i in ids]
            self._draw_overlays()

    def _overlay_changed(self, _event) -> None:
        ids = list(self.runs_table.value["run"])
        self._overlaid = [ids[i] for i in self.runs_table.selection if i < len(ids)]
        self._draw_overlays()

    def _draw_overlays(self) -> None:
        runs = [self._runs[i][1] for i in self._overlaid if i in self._runs]
        colours = [OVERLAY_COLOURS[k % len(OVERLAY_COLOURS)] for k in range(len(runs))]
        labels = [f"{r.id} (β {r.config.get('settings', {}).get('beta', '?')})" for r in runs]
        steps = {"xs": [[m["step"] for m in r.metrics] for r in runs], "colour": colours, "label": labels}
        steps |= {k: [columns_of(r.metrics, (k,))[k] for r in runs] for k in ("reward", "p_positive", "kl", "entropy", "gold")}
        self.overlay_steps.data = steps
        evals = {"xs": [[e["step"] for e in r.evals] for r in runs], "kl_xs": [[e["kl_exact"] for e in r.evals] for r in runs],
                 "colour": colours, "label": labels}
        evals |= {k: [columns_of(r.evals, (k,))[k] for r in runs] for k in ("distinct_1", "distinct_2", "reward", "gold")}
        self.overlay_evals.data = evals
        gold = is_learned(self.reward) or any(m.get("gold") is not None for r in runs for m in r.metrics[:1])
        self._show_legend(labels, colours, gold)

    def _show_legend(self, labels: list[str] = (), colours: list[str] = (), gold: bool = False) -> None:
        items = [f'<span><span class="fl-swatch" style="background:{LIVE}"></span>this tab\'s run: each training batch; '
                 f'<span style="color:{LIVE}">◆</span> its held-out evaluations</span>']
        items += [f'<span><span class="fl-swatch" style="background:{c}"></span>{html.escape(label)}</span>' for label, c in zip(labels, colours)]
        if gold:
            items.append(f'<span><span class="fl-swatch" style="background:repeating-linear-gradient(90deg,{LIVE} 0 5px,transparent 5px 9px)">'
                         "</span>dashed: the gold score g of the same replies</span>")
        self.legend.object = f'<div class="fl-legend">{"".join(items)}</div>'

    def _download(self) -> io.BytesIO:
        chosen = self._overlaid or list(self._runs)
        return zip_runs([self.runs_dir / run_id for run_id in chosen])

    # --- layout --------------------------------------------------------------------------

    def _figures(self):
        specs = (
            ("reward", "reward R (log-odds)", "reward", None),
            ("p_positive", "P(positive)", "p_positive", (0.0, 1.02)),
            ("kl", "KL to the reference (nats/reply)", "kl_exact", None),
            ("entropy", "policy entropy (nats/token)", "entropy", None),
        )
        figures = []
        for column, label, eval_column, y_range in specs:
            fig = plot("training step", label, y_range=y_range if y_range else DataRange1d(), height=260)
            fig.multi_line("xs", column, source=self.overlay_steps, line_color="colour", line_width=1.6, line_alpha=0.9)
            line = fig.line("step", column, source=self.steps_source, color=LIVE, line_width=2.5)
            fig.scatter("step", eval_column, source=self.evals_source, marker="diamond", size=11, color=LIVE,
                        line_color="white")
            fig.add_tools(HoverTool(renderers=[line], tooltips=[("step", "@step"), (label, f"@{column}{{0.000}}")]))
            figures.append(fig)
        distinct = plot("training step", "distinct-n of held-out replies", y_range=(0.0, 1.02), height=260)
        distinct.multi_line("xs", "distinct_1", source=self.overlay_evals, line_color="colour", line_width=1.6)
        distinct.multi_line("xs", "distinct_2", source=self.overlay_evals, line_color="colour", line_width=1.6, line_dash="dashed")
        distinct.line("step", "distinct_1", source=self.evals_source, color=LIVE, line_width=2.5, legend_label="distinct-1")
        distinct.line("step", "distinct_2", source=self.evals_source, color=LIVE, line_width=2.5, line_dash="dashed", legend_label="distinct-2")
        distinct.scatter("step", "distinct_1", source=self.evals_source, marker="diamond", size=11, color=LIVE, line_color="white")
        distinct.scatter("step", "distinct_2", source=self.evals_source, marker="diamond", size=11, color=LIVE, line_color="white")
        distinct.legend.location = "top_right"
        figures.append(distinct)
        reward = figures[0]  # the gold score g beside the learned reward, dashed, in each run's colour
        reward.multi_line("xs", "gold", source=self.overlay_steps, line_color="colour", line_width=1.6, line_dash="dashed")
        gold = reward.line("step", "gold", source=self.steps_source, color=LIVE, line_width=2.5, line_dash="dashed", name="gold")
        reward.scatter("step", "gold", source=self.evals_source, marker="square", size=9, color=LIVE, line_color="white")
        reward.add_tools(HoverTool(renderers=[gold], tooltips=[("step", "@step"), ("gold score g", "@gold{0.000}")]))
        # Over the KL (Gao et al. 2023): each training batch a dot, the held-out evaluations (exact KL) joined by lines.
        over_kl = plot("KL to the reference (nats/reply)", "reward R (log-odds)", height=260)
        over_kl.multi_line("kl_xs", "reward", source=self.overlay_evals, line_color="colour", line_width=1.6)
        over_kl.multi_line("kl_xs", "gold", source=self.overlay_evals, line_color="colour", line_width=1.6, line_dash="dashed")
        over_kl.scatter("kl", "reward", source=self.steps_source, size=4, color=LIVE, alpha=0.35)
        over_kl.scatter("kl", "gold", source=self.steps_source, marker="square", size=4, color=LIVE, alpha=0.35)
        over_kl.line("kl_exact", "reward", source=self.evals_source, color=LIVE, line_width=2.5)
        over_kl.line("kl_exact", "gold", source=self.evals_source, color=LIVE, line_width=2.5, line_dash="dashed", name="gold_over_kl")
        over_kl.scatter("kl_exact", "reward", source=self.evals_source, marker="diamond", size=11, color=LIVE, line_color="white")
        over_kl.scatter("kl_exact", "gold", source=self.evals_source, marker="square", size=9, color=LIVE, line_color="white")
        figures.append(over_kl)
        return figures

    def _widgets(self) -> dict[str, pn.widgets.Widget]:
        if not hasattr(self, "_setting_widget_map"):
            made = {
                "model": self.model_box,
                "reward": pn.widgets.Select.from_param(self.param.reward, width=220),
                "device": pn.widgets.Select.from_param(self.param.device, width=110),
                "lr": number_box(self, "lr", self._show_error, width=160),
                "beta": number_box(self, "beta", self._show_error, width=160),
            }
            made["seed"], made["new_seed"] = seed_control(self.param.seed)
            for name in ("steps", "prompts", "replies", "T", "eval_every", "eval_prompts", "eval_replies"):
                made[name] = number_box(self, name, self._show_error, too_high=lambda n, name=name: limit_sentence(name, n), width=160)
            self._setting_widget_map = made
        return self._setting_widget_map

    def _setting_widgets(self) -> list[pn.widgets.Widget]:
        return list(self._widgets().values())

    def __panel__(self):
        w = self._widgets()
        settings = pn.Column(
            pn.Row(w["model"], w["reward"], w["device"]),
            pn.Row(w["beta"], w["lr"], w["steps"], w["seed"], w["new_seed"]),
            pn.Row(w["prompts"], w["replies"], w["T"]),
            pn.Row(w["eval_every"], w["eval_prompts"], w["eval_replies"]),
        )
        self._show_phase()
        curves = plot_with_downloads(
            gridplot(self.figures, ncols=2, sizing_mode="stretch_width", merge_tools=False),
            {"metrics": self.steps_source, "evals": self.evals_source},
            "The run, step by step",
        )
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, PREDICT),
            settings,
            pn.Row(self.controls, self.pause_button, self.resume_button),
            self.error,
            self.runner.notice,
            self.status,
            self.download_bar,
            self.queue_line,
            self.metrics,
            self.legend,
            self.goodhart,
            curves,
            pn.pane.Markdown("#### The newest replies, each token shaded by its log-ratio to the reference", margin=(0, 10)),
            pn.pane.HTML(ratio_scale_html(), sizing_mode="stretch_width", stylesheets=[CSS]),
            self.samples,
            pn.pane.Markdown("#### Held-out evaluation (the seed's `[eval]` lines)", margin=(0, 10)),
            self.eval_table,
            self.eval_text,
            pn.pane.Markdown("#### The worked example of section 6.12: one held-out reply, token by token", margin=(0, 10)),
            self.example_choice,
            self.example,
            pn.pane.Markdown(f"#### Runs in {self.runs_dir}/\n\n{COMPARE}", margin=(0, 10), sizing_mode="stretch_width"),
            self.runs_table,
            pn.Row(self.refresh_button, self.download),
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None, runs_dir: Path | str | None = None) -> LiveRunPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return LiveRunPage(query=query, runs_dir=runs_dir)
