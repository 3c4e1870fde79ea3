"""A job on a page, as one piece: its buttons, its progress, and the one sentence that says why it waits or stopped.

Every page with long work shows it through a `JobView`: Start and Stop, Pause and Resume where
the job allows them, a progress bar, the seed where the job is random, and one alert under them
for the job's place in line, a limit it met or its failure. Because the alert comes with the
buttons (`view`), no page can show a job and leave out the sentence that explains it. The job
itself is a `StreamingRun` (widgets/streaming.py): an engine's generator walked off the UI thread,
which stops at its next snapshot when its tab closes.

The job view takes every snapshot its job yields (engines/snapshots.py): a `Waiting` or a `Failed`
it shows in the alert itself, handing the page only what they carry to draw; anything else is a
result, which clears a wait's sentence and goes to the page's `apply`.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator

import panel as pn
import param

from engines.snapshots import Failed, Waiting
from widgets.debounce import Debounce
from widgets.run_controls import RunControls, show_enabled
from widgets.streaming import StreamingRun

RESTART_DELAY_MS = 300
"""Quiet time after the last change of a job's control before `restart_soon` starts the job afresh."""


class JobView(pn.viewable.Viewer):
    """A StreamingRun, its controls and its alert kept in step: running while a job runs, progress 1.0 when one finishes.

    `apply(result)` draws a result of the job (what it yields but a Waiting or a Failed); `on_start()` is what Start does, the page's
    method that makes a generator and hands it to `start`. Stop calls `on_stop` when the page has
    more to do than stop the generator (a shared run is left, not stopped), else `stop`. `on_pause`
    and `on_resume` add Pause and Resume buttons, enabled as `pausable` and `paused` say.
    `completed()`, if given, says whether a job that reached its end did its work (a job that ends
    on a message has not): only then is its progress shown full. `on_done(finished)` runs after
    the view has shown the end.
    """

    pausable = param.Boolean(default=False, doc="Whether the job may be paused now (it is running, not loading or queued).")
    paused = param.Boolean(default=False, doc="Whether the job is paused, so Resume is what it allows.")

    def __init__(self, apply: Callable[[object], None], on_start: Callable[[], None], seed: param.Integer | None = None,
                 time_limit: float | None = None, completed: Callable[[], bool] | None = None,
                 on_done: Callable[[bool], None] | None = None, on_stop: Callable[[], None] | None = None,
                 on_pause: Callable[[], None] | None = None, on_resume: Callable[[], None] | None = None, **params):
        super().__init__(**params)
        self.completed, self.on_done, self.on_start = completed, on_done, on_start
        self.delayed_start = Debounce(RESTART_DELAY_MS)
        self.apply = apply
        self.run = StreamingRun(self.receive, self.done, time_limit=time_limit)
        self.controls = RunControls(on_start, on_stop or self.stop, seed=seed)
        self.pause_buttons: tuple[pn.widgets.Button, ...] = ()
        if on_pause is not None and on_resume is not None:
            pause = pn.widgets.Button(label="Pause", width=90, disabled=True)
            resume = pn.widgets.Button(label="Resume", color="default", width=90, disabled=True)
            pause.on_click(lambda _event: on_pause())
            resume.on_click(lambda _event: on_resume())
            self.pause_buttons = (pause, resume)

    @property
    def notice(self) -> pn.pane.Alert:
        """The job's one alert: its place in line, a limit it met, or its failure."""
        return self.run.notice

    @param.depends("pausable", "paused", watch=True)
    def _show_pausable(self) -> None:
        if self.pause_buttons:
            pause, resume = self.pause_buttons
            pause.disabled = not self.pausable
            show_enabled(resume, self.paused, "primary")

    def view(self, *beside: pn.viewable.Viewable) -> pn.Column:
        """The job's controls, after `beside` (its other inputs) on one row, and its alert under them."""
        controls = pn.Row(*beside, self.controls, *self.pause_buttons) if beside or self.pause_buttons else self.controls
        return pn.Column(controls, self.notice, sizing_mode="stretch_width")

    def __panel__(self) -> pn.Column:
        return self.view()

    @property
    def failed(self) -> bool:
        """Whether the alert says the job failed (it stays said after the job ends, until the next start)."""
        return self.run.failure_told

    def receive(self, snapshot: object) -> None:
        """Show a snapshot of the job: a wait's or a failure's sentence in the alert (and what it carries on the page),
        a result on the page (its arrival ends a wait)."""
        if isinstance(snapshot, Waiting):
            self.tell(snapshot.sentence)
        elif isinstance(snapshot, Failed):
            self.fail(snapshot.sentence)
        elif self.notice.visible and not self.failed:
            self.tell("")
        result = snapshot.snapshot if isinstance(snapshot, (Waiting, Failed)) else snapshot
        if result is not None:
            self.apply(result)

    def start(self, steps: Callable[[], Iterator]) -> None:
        """Show the controls running from 0 and walk `steps()`, replacing any job under way (and a restart waiting
        for quiet: this start is it); the alert is cleared."""
        self.delayed_start.cancel("start")
        self.controls.param.update(running=True, progress=0.0)
        self.run.start(steps)

    def stop(self) -> None:
        self.delayed_start.cancel("start")
        self.run.stop()
        self.controls.running = False

    @property
    def active(self) -> bool:
        """Whether the job runs, or waits for its controls to be still to start afresh (`restart_soon`)."""
        return self.run.running or self.delayed_start.pending("start")

    def restart_soon(self) -> None:
        """Stop the job under way now, and start afresh (`on_start`) once its controls have been still for
        RESTART_DELAY_MS: a dragged slider's updates then do not share the CPU with runs that its next step
        would replace anyway, and the drag starts one run, not twenty. A running job's buttons stay as they are
        while it waits (Stop cancels the restart), so a drag does not flick them off and on."""
        self.run.cancel()
        self.controls.progress = 0.0
        self.delayed_start.soon("start", self._restart)

    def _restart(self) -> None:
        self.on_start()
        if not self.run.running:  # the page refused the controls' settings and said why: nothing runs
            self.controls.running = False

    def done(self, finished: bool) -> None:
        """The job ended (`finished`: it ran to its end), or a result was shown without one."""
        self.controls.running = False
        self.param.update(pausable=False, paused=False)
        if finished and (self.completed is None or self.completed()):
            self.controls.progress = 1.0
        if self.on_done is not None:
            self.on_done(finished)

    def tell(self, message: str) -> None:
        """One sentence in the alert, as a warning: where the job waits, a limit; an empty one hides it.

        The alert renders Markdown and HTML, and a sentence may quote what a link sent (a model's name): it is escaped."""
        self.run.tell(html.escape(message), "warning")

    def fail(self, message: str) -> None:
        """One sentence in the alert, as an error: what went wrong and what to change; an empty one hides it."""
        self.run.tell(html.escape(message), "danger")
