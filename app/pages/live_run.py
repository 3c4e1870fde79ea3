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

Below the reward curve, the other curves, the newest replies, the held-out evaluation and the
list of earlier runs are tabs, each built the first time it is opened (widgets/sections.py):
the open one is the `section` control, in the link like every other.
"""

from __future__ import annotations

import html
import math
from functools import partial
from pathlib import Path

import panel as pn
import panel.models.tabulator  # noqa: F401  (see below)
import param

from app.cluster import Cluster, current as current_cluster
from app.limits import bound_controls, clamp_query, current as current_limits, limit_sentence
from app.model_jobs import LiveState, run_label
from app.offered import current as current_offer, offer_menu, reward_options, start_problem
from app.runs import RUNS_DIR, RunsFolder, columns_of, is_learned, overlay_columns, runs_frame, wall_pace, zip_runs
from app.shared_runs import (CLASS_RUNS, PACE_STEPS, SharedRun, find_run, finished_run, follow_folder, replay, run_key, settings_of,
                             trains, training_elsewhere)
from app.text.live_run import (COMPARE, ELSEWHERE, EQUATION, FINISHED, FROM_FILES, GOODHART, INTRO, JOINED, LEFT, METRICS,
                               NOTICE, OPENED, PREDICT, RUN_NAME_PATTERN, UNOPENABLE)
from engines.lm.settings import DEVICES, LMSettings, default_lr
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.headings import section_heading
from widgets.job_view import JobView
from widgets.metrics import MetricRow
from widgets.number_box import number_box
from widgets.run_controls import seed_control
from widgets.run_curves import CSS as CURVES_CSS, EVAL_COLUMNS, STEP_COLUMNS, RunCurves
from widgets.run_evaluation import RunEvaluation
from widgets.run_html import CSS as RUN_CSS, ratio_scale_html, samples_html
from widgets.run_list import RunsTable
from widgets.run_status import CSS as STATUS_CSS, idle_html, queue_html, status_html
from widgets.sections import LazySections
from widgets.streaming import deliver, session_document
from widgets.url_state import sync_url

TITLE = "Live run: REINFORCE on a language model"
SUMMARY = "Train a language model against a sentiment reward in the browser: reward climbs, KL grows, and without a penalty the replies degrade."

DEFAULTS = LMSettings()
"""The engine's defaults (the seed's recipe): every control starts from them."""
KEEP_SAMPLES = DEFAULTS.keep_samples
"""Newest replies kept per step for display (fewer when a step has fewer prompts)."""

CSS = STATUS_CSS + CURVES_CSS + RUN_CSS
# The runs table is built when its tab first opens, after the browser was sent the page's scripts. Panel sends
# a component's script with every page once its model is registered (panel.models.tabulator, imported above):
# without that, a table opened on a fresh server would have no script to draw it.


# ----------------------------------------------------------------------------- the page


class LiveRunPage(pn.viewable.Viewer):
    """The run's settings; start, pause, resume, stop; live curves, samples, tables; earlier runs."""

    model = param.Selector(default=DEFAULTS.model, objects=[DEFAULTS.model], label="Model",
                           doc="The models this server offers (app/offered.py); the first is the default.")
    reward = param.Selector(default=DEFAULTS.reward, objects=[DEFAULTS.reward], label="Reward",
                            doc="VADER, the classifiers this server offers and, per page, the reward models saved in the runs folder.")
    beta = param.Number(default=DEFAULTS.beta, bounds=(0.0, 10.0), step=0.01, label="KL coefficient β")
    lr = param.Number(default=default_lr(DEFAULTS.model), bounds=(1e-7, 1e-2), step=1e-5, label="Learning rate (Adam)")
    steps = param.Integer(default=DEFAULTS.steps, bounds=(1, 5000), label="Training steps")
    # The highest values of these bounds are the server's limits, set per page (app.limits.LIMITED).
    prompts = param.Integer(default=DEFAULTS.prompts, bounds=(1, 64), label="Prompts per step")
    replies = param.Integer(default=DEFAULTS.replies, bounds=(2, 16), label="Replies per prompt K")
    T = param.Integer(default=DEFAULTS.T, bounds=(1, 64), label="Reply length T (tokens)")
    seed = param.Integer(default=DEFAULTS.seed, bounds=(0, 999_999), label="Seed")
    device = param.Selector(default=DEFAULTS.device, objects=list(DEVICES), label="Device",
                            doc="auto: the best device a worker of the cluster offers; a device no worker offers is refused at Start.")
    eval_every = param.Integer(default=DEFAULTS.eval_every, bounds=(1, 5000), label="Evaluate every (steps)")
    eval_prompts = param.Integer(default=DEFAULTS.eval_prompts, bounds=(1, 64), label="Held-out prompts")
    eval_replies = param.Integer(default=DEFAULTS.eval_replies, bounds=(1, 16), label="Replies per held-out prompt")
    at_pace = param.Boolean(default=False, label="Replay a finished run at the pace it trained",
                            doc="A run that already ran to its end with these settings is shown from its files: at once, or step by step.")
    run = param.String(default="", regex=RUN_NAME_PATTERN, label="Run shown",
                       doc="A run of the room's list, by its folder's name: opened when the page is.")
    section = param.Selector(default="samples", objects=["samples", "curves", "evaluation", "runs"], label="Section shown")
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
        self.highest = bound_controls(self, self.limits)
        self.offer = current_offer()
        self._run: SharedRun | None = None
        self._state: LiveState | None = None
        self._shown = (-1, -1)
        self.runs = RunsFolder(self.runs_dir)
        self.curves = RunCurves(stylesheets=[CSS])

        # A run left or stopped before its last step ends too: its progress stays at the step it reached.
        self.job = JobView(self._show_state, self.start, on_done=self._done, on_stop=self.stop, on_pause=self.pause,
                           on_resume=self.resume, completed=lambda: self._state is not None and self._state.step >= self._state.settings.steps)
        self.status = pn.pane.HTML(idle_html(None), sizing_mode="stretch_width", stylesheets=[CSS])
        self.queue_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.shared_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS], visible=False)
        self.download_bar = pn.indicators.Progress(value=0, max=1000, visible=False, sizing_mode="stretch_width",
                                                   css_classes=["fl-download"])
        self.goodhart = pn.pane.Markdown(GOODHART, sizing_mode="stretch_width", margin=(0, 10), css_classes=["fl-goodhart"])
        self.metrics = MetricRow(METRICS)
        self.samples = pn.pane.HTML(samples_html(0, ()), sizing_mode="stretch_width", stylesheets=[CSS])
        self.evaluation = RunEvaluation()
        self.runs_list = RunsTable(runs_frame([], set()), "The room's runs", COMPARE, self._draw_overlays,
                                   self.refresh_runs, self._download, on_open=self.open_run)

        self.param.watch(self._model_changed, "model")
        offer_menu(self, "model", self.offer.models)
        self.param.watch(lambda _e: self._show_phase(), "phase")
        self.param.watch(lambda _e: self._show_reward_kind(), "reward")
        self._refresh_rewards()
        self.notice = sync_url(self, [*self.SETTINGS, "at_pace", "run", "section"], query,
                               adjust=lambda link: clamp_query(link, self.highest))
        self.sections = LazySections(self.param.section, {
            "samples": ("The newest replies", self._samples_section),
            "curves": ("More curves", self._curves_section),
            "evaluation": ("Held-out evaluation and worked example", lambda: self.evaluation),
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
        return LMSettings(
            model=self.model.strip(), reward=self.reward, beta=self.beta, lr=self.lr, steps=self.steps,
            prompts=self.prompts, replies=self.replies, T=self.T, seed=self.seed, device=self.device,
            eval_every=self.eval_every, eval_prompts=self.eval_prompts, eval_replies=self.eval_replies,
            keep_samples=min(KEEP_SAMPLES, self.prompts),
            # A reward model scores the lab's feeling prompts it was trained on (seed 001 section 6), not movie reviews.
            prompt_set="feelings" if is_learned(self.reward) else "reviews",
        )

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
        self.curves.name_reward(learned)
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
            self.param.update({k: getattr(settings, k) for k in self.SETTINGS if k != "device"} | {"run": name})
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
        self._shown = (-1, -1)
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
            self.status.object = status_html(state, run_label(state.settings), wall_pace(list(state.metrics[-PACE_STEPS:])))
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
        shown = self._shown[0]
        if 0 <= shown < len(state.metrics):  # the same run, further on: only its new steps travel to the browser
            self.curves.steps.stream(columns_of(list(state.metrics[shown:]), STEP_COLUMNS))
        else:
            self.curves.steps.data = columns_of(list(state.metrics), STEP_COLUMNS)
        if state.metrics:
            self.metrics.update(**state.metrics[-1])
            self.job.controls.progress = min(state.step / state.settings.steps, 1.0)
        self.samples.object = samples_html(state.step, state.samples)

    def _show_evals(self, state: LiveState) -> None:
        evals = list(state.evals)
        self.curves.evals.data = columns_of(evals, EVAL_COLUMNS)
        self.evaluation.show(evals, state.eval_results, state.settings)

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
                self.status.object = idle_html(state)
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
        self.curves.overlay(*overlay_columns(runs), [r.label for r in runs], gold)

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

    def _samples_section(self):
        return pn.Column(
            section_heading("The newest replies, each token shaded by its log-ratio to the reference"),
            pn.pane.HTML(ratio_scale_html(), sizing_mode="stretch_width", stylesheets=[CSS]),
            self.samples,
            sizing_mode="stretch_width",
        )

    def _curves_section(self):
        grid = self.curves.grid()
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
            self.status,
            self.download_bar,
            self.queue_line,
            self.metrics,
            self.curves.legend,
            self.goodhart,
            plot_with_downloads(self.curves.reward, {"metrics": self.curves.steps, "evals": self.curves.evals}, "The run, step by step"),
            self.sections,
            sizing_mode="stretch_width",
        )


def page(query: dict[str, str] | None = None, runs_dir: Path | str | None = None) -> LiveRunPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return LiveRunPage(query=query, runs_dir=runs_dir)
