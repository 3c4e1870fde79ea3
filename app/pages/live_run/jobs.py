"""The live-run page's long job, one `JobView` with what it draws: this tab's run of REINFORCE on a language model
(seed 000 sections 6.11 and 6.12), started, joined or opened among the class's runs.

The run itself is a model job shared by the learners who start the same settings (app/jobs/shared_runs.py: this
tab's `Learner`). The page owns the controls (they are in its link); it checks their settings against what the
server offers and allows (app.serving.offered.start_problem) and hands them to `start`, or a run of the room's list
to `open`. Every state the run reaches is drawn on the page's `RunDisplay`, and its phase handed to the page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import panel as pn

from app.jobs.cluster import Cluster
from app.jobs.model_jobs import LiveState
from app.jobs.runs import Run
from app.jobs.shared_runs import Learner, Watching
from app.pages.live_run.figures import RunDisplay
from app.pages.live_run.status import idle_html
from app.pages.live_run.text import LEFT, watching_sentence
from app.serving.offered import download_problem
from engines.lm.settings import LMSettings
from widgets.job_view import JobView


class LiveRunJob:
    """This tab's run: its learner among the class's runs, its JobView (Start, Stop, Pause, Resume, the alert), the
    newest state shown (`state`) on `display`.

    `on_start()` is the page's Start (it checks the controls, then calls `start`); `on_phase(phase)` is told each
    phase the run reaches ('loading', ..., 'idle' once it has ended); `on_ended()` runs after the last state is
    shown (the page rereads its runs folder)."""

    def __init__(self, runs_dir: Path, cluster: Cluster, display: RunDisplay, on_start: Callable[[], None],
                 on_phase: Callable[[str], None], on_ended: Callable[[], None]):
        self.display, self.on_phase, self.on_ended = display, on_phase, on_ended
        self.learner = Learner(runs_dir, cluster, download_problem)
        self.state: LiveState | None = None
        self.phase = "idle"
        # A run left or stopped before its last step ends too: its progress stays at the step it reached.
        self.job = JobView(self._show_state, on_start, on_done=self._done, on_stop=self.stop, on_pause=self.pause,
                           on_resume=self.resume, completed=lambda: self.state is not None and self.state.step >= self.state.settings.steps)

    def start(self, settings: LMSettings, at_pace: bool) -> None:
        """Watch the run of `settings` (which the server allows), or say why none starts (no worker offers its device)."""
        watching, problem = self.learner.start(settings, at_pace)
        self.job.fail(problem)
        if watching is not None:
            self._watch(watching)

    def open(self, found: Run) -> None:
        """Show the room's run `found`, live where it trains, else from its files."""
        self._watch(self.learner.open(found))

    def _watch(self, watching: Watching) -> None:
        """Walk the run's snapshots into the page, saying above the status line how the learner came to it."""
        self.state = LiveState("loading", watching.settings)
        self.display.begin(watching_sentence(watching))
        self._set_phase("loading")
        self.job.start(watching.snapshots)

    def _set_phase(self, phase: str) -> None:
        self.phase = phase
        self.job.param.update(pausable=phase == "running", paused=phase == "paused")
        self.on_phase(phase)

    def pause(self) -> None:
        """Hold this page's view after the step shown; the run holds too if no other learner watches it."""
        if self.phase == "running":
            self.learner.pause()

    def resume(self) -> None:
        self.learner.resume()
        if self.phase == "paused":
            self._set_phase("running")

    def stop(self) -> None:
        """Leave the run (it trains on if other learners watch it); a run shown from its files stops at once."""
        if not self.learner.leave():
            self.job.stop()

    def close(self) -> None:
        """The tab closed: this learner leaves the run (which stops if it was the last one on it)."""
        self.learner.leave()
        self.job.stop()

    def _show_state(self, state: LiveState) -> None:
        """Draw a snapshot: the parts whose data changed, in one batch."""
        self.state = state
        with pn.io.hold():
            if state.phase != "error" and self.phase != state.phase:
                self._set_phase(state.phase)
            self.display.show(state)
            if state.metrics:
                self.job.controls.progress = min(state.step / state.settings.steps, 1.0)

    def _done(self, finished: bool) -> None:
        """The run has ended (finished, stopped, or refused) or this learner left it: show the final state."""
        state, others = self.state, self.learner.ended()
        if state is not None:
            if others is not None:
                self.display.say(LEFT.format(step=state.step, others=others))
            self._show_state(state)
            if state.phase != "error":  # an error's sentence is the job view's alert
                self.display.status.object = idle_html(state)
        self._set_phase("idle")
        self.on_ended()
