"""Live REINFORCE on a language model: seed 000 sections 6.11 and 6.12, run in the browser.

Each training step samples K replies to each prompt, scores them with a sentiment reward (or a reward model saved
by the reward-models page, whose gold score g is then drawn dashed beside it) and ascends the REINFORCE estimate
with per-token shaped rewards r_t = -beta (log pi - log ref) + [t = T-1] R and a leave-one-out baseline
(engines/lm/reinforce.py). The run is a model job on the server's Dask cluster (docs/architecture.md, "A model
job's life"): learners who start the same settings watch one run, a run that already ran to its end is shown
from its files, a closed tab leaves its run, and a paused run keeps its place on the device.

The package holds the page: its controls (made from LMSettings, widgets/settings_controls.py) and view here, its
words in text.py and status.py, its figures and what it draws of a run in figures.py, replies.py and
evaluation.py, the room's list of runs in runs_table.py. The server's limits (app/serving/limits.py) bound every control.
"""

from __future__ import annotations

import html
import math
from functools import partial
from pathlib import Path

import panel as pn
import panel.models.tabulator  # noqa: F401  (see below)
import param

from app.jobs.cluster import Cluster, current as current_cluster
from app.serving.limits import bound_controls, clamp_query, current as current_limits, limit_sentence
from app.jobs.model_jobs import LiveState
from app.serving.offered import current as current_offer, offer_menu, reward_options, start_problem
from app.jobs.runs import RUNS_DIR, RunsFolder, is_learned, overlay_columns, runs_frame, zip_runs
from app.jobs.shared_runs import (CLASS_RUNS, SharedRun, find_run, finished_run, follow_folder, replay, run_key, settings_of,
                             trains, training_elsewhere)
from app.pages.live_run.text import (COMPARE, ELSEWHERE, EQUATION, FINISHED, FROM_FILES, GOODHART, INTRO, JOINED, LEFT, METRICS,
                               NOTICE, OPENED, PREDICT, RUN_NAME_PATTERN, UNOPENABLE)
from engines.lm.settings import DEVICES, LMSettings, default_lr
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.job_view import JobView
from widgets.number_box import number_box
from widgets.run_controls import seed_control
from app.pages.live_run.figures import RunDisplay
from app.pages.live_run.runs_table import RunsTable
from app.pages.live_run.status import idle_html, queue_html
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

# The runs table is built when its tab first opens, after the browser was sent the page's scripts. Panel sends
# a component's script with every page once its model is registered (panel.models.tabulator, imported above):
# without that, a table opened on a fresh server would have no script to draw it.


# ----------------------------------------------------------------------------- the page


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
    T = LM.integer("T", "Reply length T (tokens)", bounds=(1, 64))
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
    section = param.Selector(default="samples", objects=["samples", "curves", "evaluation", "runs"], label="Section shown")
    phase = param.Selector(default="idle", objects=["idle", "loading", "downloading", "queued", "running", "paused"], precedence=-1,
                           doc="What this tab's run is doing.")

    def __init__(self, query: dict[str, str] | None = None, runs_dir: Path | str | None = None,
                 cluster: Cluster | None = None, **params):
        super().__init__(**params)
        self.runs_dir = Path(runs_dir) if runs_dir is not None else RUNS_DIR
        self.cluster = cluster or current_cluster()
        self.limits = current_limits()
        self.highest = bound_controls(self, self.limits)
        self.offer = current_offer()
        self._run: SharedRun | None = None
        self._state: LiveState | None = None
        self.runs = RunsFolder(self.runs_dir)
        self.display = RunDisplay(METRICS)

        # A run left or stopped before its last step ends too: its progress stays at the step it reached.
        self.job = JobView(self._show_state, self.start, on_done=self._done, on_stop=self.stop, on_pause=self.pause,
                           on_resume=self.resume, completed=lambda: self._state is not None and self._state.step >= self._state.settings.steps)
        self.queue_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[self.display.css])
        self.shared_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[self.display.css], visible=False)
        self.goodhart = pn.pane.Markdown(GOODHART, sizing_mode="stretch_width", margin=(0, 10), css_classes=["fl-goodhart"])
        self.runs_list = RunsTable(runs_frame([], set()), "The room's runs", COMPARE, self._draw_overlays,
                                   self.refresh_runs, self._download, on_open=self.open_run)

        self.param.watch(self._model_changed, "model")
        offer_menu(self, "model", self.offer.models)
        self.param.watch(lambda _e: self._show_phase(), "phase")
        self.param.watch(lambda _e: self._show_reward_kind(), "reward")
        self._refresh_rewards()
        self.notice = sync_url(self, [*LM.names, "at_pace", "run", "section"], query,
                               adjust=lambda link: clamp_query(link, self.highest))
        self.sections = LazySections(self.param.section, {
            "samples": ("The newest replies", self.display.samples_section),
            "curves": ("More curves", self._curves_section),
            "evaluation": ("Held-out evaluation and worked example", lambda: self.display.evaluation),
            "runs": ("The room's runs", lambda: self.runs_list),
        })
        self._show_reward_kind()
        # The cluster calls from its watcher thread: the line is redrawn on this session's own thread.
        self._unsubscribe = self.cluster.subscribe(partial(deliver, session_document(), self._show_queue))
        self._show_queue()
        self.refresh_runs()
        if self.run:
            self.open_run(self.run)

    # --- settings ------------------------------------------------------------------------

    def settings(self) -> LMSettings:
        """The controls as the engine's settings (ValueError with one sentence if refused)."""
        # A reward model scores the lab's feeling prompts it was trained on (seed 001 section 6), not movie reviews.
        return LM.settings(self, model=self.model.strip(), keep_samples=min(KEEP_SAMPLES, self.prompts),
                           prompt_set="feelings" if is_learned(self.reward) else "reviews")

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
        self.display.curves.name_reward(learned)
        self._draw_overlays()

    def _model_changed(self, event) -> None:
        # The learning rate follows the model's default unless it was set by hand.
        if math.isclose(self.lr, default_lr(event.old.strip())):
            self.lr = default_lr(event.new.strip())

    # --- start, pause, resume, stop ------------------------------------------------------

    def start(self) -> None:
        """Watch the run of the current settings: one another learner started, one that already ran to its end
        on this server, or a new one (which may wait for its device)."""
        settings, problem = start_problem(self.offer, self.settings, self.highest)
        if settings is not None:
            try:
                device = self.cluster.device_for(settings.device)
            except ValueError as error:
                settings, problem = None, str(error)
        self.job.fail(problem)
        if settings is None:
            return
        self._leave()
        key = run_key(settings, device)
        done = finished_run(key, self.runs_dir)
        elsewhere = training_elsewhere(key, self.runs_dir, self.cluster) if done is None else None
        if done is not None:
            self._show(partial(replay, done, self.at_pace), settings, FINISHED.format(run=html.escape(done.id)))
        elif elsewhere is not None:
            self._follow_files(elsewhere, settings, JOINED)
        else:
            self._run, joined = CLASS_RUNS.watch(key, settings, device, self.runs_dir, self.cluster, self)
            self._show(partial(self._run.follow, self), settings, JOINED if joined else "")

    def _follow_files(self, name: str, settings: LMSettings, sentence: str) -> None:
        """Show the run `name` that another web process trains, from its files as they grow."""
        self._show(partial(follow_folder, self.runs_dir / name, partial(trains, self.cluster, name)), settings,
                   f"{sentence} {ELSEWHERE}")

    def open_run(self, name: str) -> None:
        """Show the room's run `name`: join it where it trains in this process, else show its files; the controls
        take its settings, so the link names it."""
        try:
            found = find_run(name, self.runs_dir)
            settings = settings_of(found)
        except ValueError as error:
            self.job.fail(str(error))
            self.run = ""
            return
        try:
            self.param.update({k: v for k, v in LM.values(settings).items() if k != "device"} | {"run": name})
        except ValueError:  # a reward model deleted since, or a setting beyond this server's limits
            self.job.fail(UNOPENABLE.format(run=name))
            return
        self._leave()
        self._run = CLASS_RUNS.open(name, self.runs_dir, self)
        if self._run is not None:
            self._show(partial(self._run.follow, self), settings, OPENED)
        elif trains(self.cluster, name):
            self._follow_files(name, settings, OPENED)
        else:
            self._show(partial(replay, found), settings, FROM_FILES.format(run=html.escape(name)))

    def _show(self, states, settings: LMSettings, sentence: str) -> None:
        """Walk `states()` (a run's LiveStates) into the page, with `sentence` said above the status line."""
        self._state = LiveState("loading", settings)
        self.display.shown = (-1, -1)
        self.shared_line.object, self.shared_line.visible = f'<p class="fl-shared">{sentence}</p>', bool(sentence)
        self.phase = "loading"
        self.job.start(states)

    def _leave(self) -> None:
        if self._run is not None:
            self._run.leave(self)
            self._run = None

    def pause(self) -> None:
        """Hold this page's view after the step shown; the run holds too if no other learner watches it."""
        if self.phase == "running" and self._run is not None:
            self._run.pause(self)

    def resume(self) -> None:
        if self._run is not None:
            self._run.resume(self)
            if self.phase == "paused":
                self.phase = "running"

    def stop(self) -> None:
        """Leave the run: it stops after its step in flight (its files stay) if no other learner watches it,
        else it trains on for them. A replay stops at once."""
        if self._run is not None:
            self._run.leave(self)
        else:
            self.job.stop()

    def close(self) -> None:
        """The tab closed: this learner leaves the run (which stops if it was the last one on it)."""
        self._leave()
        self.job.stop()
        self._unsubscribe()

    # --- showing the run -----------------------------------------------------------------

    def _show_state(self, state: LiveState) -> None:
        """Draw a snapshot: the parts whose data changed, in one batch."""
        self._state = state
        with pn.io.hold():
            if state.phase != "error" and self.phase != state.phase:
                self.phase = state.phase
            self.display.show(state)
            if state.metrics:
                self.job.controls.progress = min(state.step / state.settings.steps, 1.0)

    def _done(self, finished: bool) -> None:
        """The run has ended (finished, stopped, or refused) or this learner left it: show the final state and the list of runs."""
        state, run, self._run = self._state, self._run, None
        if run is not None and state is not None and not run.ended and not run.stopping:
            self.shared_line.object = f'<p class="fl-shared">{LEFT.format(step=state.step, others=run.watchers)}</p>'
            self.shared_line.visible = True
        if state is not None:
            self._show_state(state)
            if state.phase == "error":
                self.job.fail(state.message)
            else:
                self.display.status.object = idle_html(state)
        self.phase = "idle"
        self.refresh_runs()

    def _show_phase(self) -> None:
        idle = self.phase == "idle"
        self.job.param.update(pausable=self.phase == "running", paused=self.phase == "paused")
        for widget in self._widgets().values():
            widget.disabled = not idle

    # --- the queue and the runs folder ---------------------------------------------------

    def _show_queue(self) -> None:
        self.queue_line.object = queue_html(self.cluster.overview())
        if self.runs.runs():
            self._show_runs()  # a run's status (running or not) follows the queue

    def refresh_runs(self) -> None:
        """Read the runs folder again (only the runs whose files changed) and redraw the list."""
        self.runs.refresh()
        self._refresh_rewards()
        self._show_runs()

    def _show_runs(self) -> None:
        frame = runs_frame(list(self.runs.runs().values()), self.cluster.running_ids(), CLASS_RUNS.watchers(self.runs_dir))
        with pn.io.hold():
            self.runs_list.show(frame)
            self._draw_overlays()

    def _draw_overlays(self) -> None:
        found = self.runs.runs()
        runs = [found[i] for i in self.runs_list.ticked if i in found]
        gold = is_learned(self.reward) or any(m.get("gold") is not None for r in runs for m in r.metrics[:1])
        self.display.curves.overlay(*overlay_columns(runs), [r.label for r in runs], gold)

    def _download(self):
        chosen = self.runs_list.ticked or list(self.runs.runs())
        return zip_runs([self.runs_dir / run_id for run_id in chosen])

    # --- layout --------------------------------------------------------------------------

    def _widgets(self) -> dict[str, pn.widgets.Widget]:
        if not hasattr(self, "_setting_widget_map"):
            made = {
                "model": pn.widgets.Select.from_param(self.param.model, width=330),
                "reward": pn.widgets.Select.from_param(self.param.reward, width=220),
                "device": pn.widgets.Select.from_param(self.param.device, width=110),
                "lr": number_box(self, "lr", self.job.fail, width=160),
                "beta": number_box(self, "beta", self.job.fail, width=160),
                "at_pace": pn.widgets.Checkbox.from_param(self.param.at_pace),
            }
            made["seed"], made["new_seed"] = seed_control(self.param.seed)
            for name in ("steps", "prompts", "replies", "T", "eval_every", "eval_prompts", "eval_replies"):
                made[name] = number_box(self, name, self.job.fail, too_high=lambda n, name=name: limit_sentence(name, n), width=160)
            self._setting_widget_map = made
        return self._setting_widget_map

    def _curves_section(self):
        grid = self.display.curves.grid()
        self._show_reward_kind()  # the reward-over-KL figure's axis names the reward in force
        return pn.pane.Bokeh(grid, sizing_mode="stretch_width")


    def __panel__(self):
        w = self._widgets()
        settings = pn.Column(
            pn.Row(w["model"], w["reward"], w["device"]),
            pn.Row(w["beta"], w["lr"], w["steps"], w["seed"], w["new_seed"]),
            pn.Row(w["prompts"], w["replies"], w["T"]),
            pn.Row(w["eval_every"], w["eval_prompts"], w["eval_replies"]),
            w["at_pace"],
        )
        self._show_phase()
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, PREDICT),
            settings,
            self.job,
            self.shared_line,
            self.display.status,
            self.display.download_bar,
            self.queue_line,
            self.display.metrics,
            self.display.curves.legend,
            self.goodhart,
            plot_with_downloads(self.display.curves.reward, {"metrics": self.display.curves.steps, "evals": self.display.curves.evals}, "The run, step by step"),
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None, runs_dir: Path | str | None = None) -> LiveRunPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return LiveRunPage(query=query, runs_dir=runs_dir)
