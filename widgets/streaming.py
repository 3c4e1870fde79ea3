"""Training runs that stream: a worker thread walks an engine's generator, the plot follows.

An engine's long computation is a generator of frozen snapshots. `StreamingRun` walks
it off the UI thread and hands the latest snapshot to the page at most every `period`
seconds (0.1 s, so partial results arrive well within 250 ms) through the session's event
loop and the Bokeh document's next-tick callback (`deliver`). Starting again
cancels the run under way, so a newer slider value always wins over stale work, and
snapshots of a cancelled run are dropped even if already queued.

A job that outlives its `time_limit` (the server's compute seconds, for the analytic pages)
is stopped at its next snapshot, and one that raises is logged with its traceback on the
"feedback_lab" logger; either way the page's `notice` pane says so in one sentence, and the
session goes on. A job whose session has gone (the tab closed) stops at its next snapshot.

`ControlledRun` keeps a run and its Start/Stop buttons and progress bar in step, and
`StreamingCurve` is the common case of it: a line plot whose ColumnDataSource is replaced
in place by each snapshot, with Start/Stop, progress and (optionally) the seed.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from functools import cached_property, partial

import panel as pn
import param
from bokeh.models import ColumnDataSource
from panel.io.state import set_curdoc

from widgets.downloads import plot_with_downloads
from widgets.run_controls import RunControls
from widgets.style import OKABE_ITO, plot

LOG = logging.getLogger("feedback_lab")
"""The app's logger: a job's unexpected error goes here with its traceback."""
TIME_LIMIT = "This computation was stopped after {seconds:g} s, the server's limit per job; ask for fewer samples."
FAILED = "This computation failed on an unexpected error ({kind}), which the server has logged; change a setting or start it again."
THREAD_NAME = "feedback-lab-job"
"""The name of every worker thread (with a number), so that a server's running jobs can be told apart."""
COMPUTING = threading.Lock()
"""Held while a job with a compute limit (an analytic page's Monte Carlo or training, computed in the web
process) makes its next snapshot: such jobs take turns, so however many learners run one, the web
process's event loop competes for the interpreter lock with one of them, not with all."""
_END = object()
EXIT_WAIT = 10.0
"""Seconds the process waits, as it exits, for its stopped jobs to reach their next snapshot."""
_numbers = itertools.count(1)
_runs: weakref.WeakSet = weakref.WeakSet()


class StreamingRun:
    """Run generators on a worker thread, one at a time, delivering snapshots to `apply`.

    `apply(snapshot)` and `on_done(finished)` run on the session's thread (directly,
    on the worker, when there is no server session, as in tests). `finished` is True
    when the generator ran to its end, False when it was stopped, replaced, cut at
    `time_limit` seconds or failed; `notice` (a hidden Alert the page places under its
    controls) shows the sentence of the last two. A job with a `time_limit` computes in this
    process: it makes each snapshot holding `COMPUTING`, and its time waiting for it does not
    count against its limit.
    """

    def __init__(self, apply: Callable[[object], None], on_done: Callable[[bool], None] | None = None, period: float = 0.1,
                 time_limit: float | None = None):
        self.apply, self.on_done, self.period, self.time_limit = apply, on_done, period, time_limit
        self.notice = pn.pane.Alert(alert_type="warning", visible=False, sizing_mode="stretch_width", css_classes=["fl-job-notice"])
        self._token = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping: list[threading.Thread] = []  # replaced jobs not yet at their next snapshot
        _runs.add(self)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def start(self, steps: Callable[[], Iterator]) -> None:
        """Cancel any run under way and walk the generator `steps()` on a new thread."""
        self.stop()
        if self._thread is not None:
            self._stopping = [t for t in (*self._stopping, self._thread) if t.is_alive()]
        self._token += 1
        self._stop = threading.Event()
        self.tell("")
        doc = session_document()
        self._thread = threading.Thread(target=self._work, args=(self._token, steps, self._stop, doc), daemon=True,
                                        name=f"{THREAD_NAME}-{next(_numbers)}")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for every job this run started, the current and the replaced ones, for at most `timeout` seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in (*self._stopping, self._thread):
            if thread is not None:
                thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))

    def _deliver(self, doc, callback, stop: threading.Event) -> None:
        if not deliver(doc, callback):
            stop.set()

    def _work(self, token: int, steps: Callable[[], Iterator], stop: threading.Event, doc) -> None:
        started = last = time.monotonic()
        pending, finished, message, snapshots, waited = None, False, "", None, 0.0
        try:
            snapshots = steps()
            while True:
                asked = time.monotonic()
                with COMPUTING if self.time_limit is not None else nullcontext():
                    waited += time.monotonic() - asked
                    snapshot = next(snapshots, _END) if not stop.is_set() else _END
                if snapshot is _END or stop.is_set():
                    break
                pending = snapshot
                if time.monotonic() - last >= self.period:
                    self._deliver(doc, partial(self._apply_current, token, pending), stop)
                    last, pending = time.monotonic(), None
                if self.time_limit is not None and time.monotonic() - started - waited > self.time_limit:
                    message = TIME_LIMIT.format(seconds=self.time_limit)
                    return
            finished = not stop.is_set()
        except Exception as error:  # a bug or a resource error of one job must not reach the server or other sessions
            if stop.is_set():  # told to stop (replaced, tab closed, the process exiting and tearing torch down): no one waits
                return
            LOG.exception("A job of %s failed", getattr(steps, "__qualname__", repr(steps)))
            message = FAILED.format(kind=type(error).__name__)
        finally:
            _close(snapshots)
            if pending is not None and not stop.is_set():
                self._deliver(doc, partial(self._apply_current, token, pending), stop)
            self._deliver(doc, partial(self._done_current, token, finished, message), stop)

    def _apply_current(self, token: int, snapshot) -> None:
        if token == self._token:
            self.apply(snapshot)

    def _done_current(self, token: int, finished: bool, message: str) -> None:
        if token != self._token:
            return
        self.tell(message)
        if self.on_done is not None:
            self.on_done(finished)

    def tell(self, message: str) -> None:
        """Show one sentence in `notice` (an empty one hides it): a limit, a failure, a wait for the device."""
        self.notice.object = message
        self.notice.visible = bool(message)


@atexit.register
def _stop_every_job() -> None:
    """Stop every job as the process exits and give each a moment to reach its next snapshot.

    Worker threads are daemons, so the process never waits on a job; but one left inside a
    torch operation while the interpreter shuts down aborts the process ("terminate called
    without an active exception"). A stopped job leaves at its next snapshot instead.
    """
    deadline = time.monotonic() + EXIT_WAIT
    runs = list(_runs)
    for run in runs:
        run.stop()
    for run in runs:
        run.join(max(deadline - time.monotonic(), 0.0))


def session_document():
    """This session's Bokeh document, or None outside a server session (as in tests)."""
    return pn.state.curdoc if pn.state.curdoc and pn.state.curdoc.session_context else None


def deliver(doc, callback: Callable[[], None]) -> bool:
    """Run `callback` on the thread of `doc`'s session (a session_document), from any thread; at once when `doc` is None.

    False when the tab has closed: then nothing of it is left to update.

    The callback is handed to the session's event loop (Tornado's `add_callback`, the one call
    that is safe from any thread), which then adds it as the document's next-tick callback.
    Adding it from this thread directly can lose it: Bokeh announces a new next-tick callback
    as a document event, and while the event loop holds the document (a slider step's update)
    that event goes into the held list, which `unhold` copies and empties without a lock. One
    added between the copy and the emptying never runs (1 to 44 in 20,000 while the loop held
    and released the document in a tight loop, tests/app/test_delivery.py), so a run's last
    snapshot could miss its page.
    """
    if doc is None:
        callback()
        return True
    session = doc.session_context
    application = session.server_context.application_context if session is not None else None
    if session is None or session.destroyed or application is None or application.io_loop is None:
        return False
    application.io_loop.add_callback(_add_next_tick, doc, callback)
    return True


def _add_next_tick(doc, callback: Callable[[], None]) -> None:
    """On the session's event loop: run `callback` as the document's next-tick callback (nothing if the tab has closed).

    The session is looked at again here, on the event loop that also destroys it: a tab that
    closed after `deliver` looked must not be handed the callback. Bokeh would take it, then
    raise inside its `patch_curdoc` (the document's change callbacks are gone), and that
    context manager has no `finally`: the closed document would stay on Bokeh's stack of
    current documents (a stale entry there is what holoviz/panel#3225 reports), and every later
    page build (Panel's `run_app`) would make it Bokeh's global current document, which keeps
    the closed page alive until the next such race. In the reward-model soak this kept one page
    (1.3 to 2 MB) in every 400 to 800 visits.
    """
    session = doc.session_context
    if session is None or session.destroyed:
        LOG.debug("An update for a closed session was dropped")
        return
    doc.add_next_tick_callback(partial(in_document, doc, callback))


def in_document(doc, callback: Callable[[], None]) -> None:
    """Run `callback` (a next-tick callback of `doc`) with `doc` as Panel's current document.

    Bokeh runs next-tick callbacks without telling Panel whose they are, and Panel keeps
    each document's stylesheet models in a cache keyed by its current document: updating a
    pane there could hand one session's stylesheet to another ("Models must be owned by
    only a single document"), seen when thirty sessions streamed at once.
    """
    with set_curdoc(doc):
        callback()


def _close(snapshots) -> None:
    """Close a generator left at a yield now, so that its `finally` (files, a queue place) runs on this thread."""
    close = getattr(snapshots, "close", None)
    if close is None:
        return
    try:
        close()
    except Exception:
        LOG.exception("Closing a job's generator failed")


class ControlledRun(pn.viewable.Viewer):
    """A StreamingRun and its RunControls kept in step: running while a job runs, progress 1.0 when one finishes.

    `apply(snapshot)` is the run's (StreamingRun); `on_start()` is what the Start button does,
    the page's method that makes a generator and hands it to `start`; the Stop button is `stop`.
    `completed()`, if given, says whether a job that reached its end did its work (a job that
    ends on a message has not): only then is its progress shown full. A page places the job as
    one piece, its controls with the run's notice under them (`view`), so no page can show the
    buttons and leave out the sentence that says why a job waits or stopped.
    """

    def __init__(self, apply: Callable[[object], None], on_start: Callable[[], None], seed: param.Integer | None = None,
                 time_limit: float | None = None, completed: Callable[[], bool] | None = None):
        super().__init__()
        self.completed = completed
        self.run = StreamingRun(apply, self.done, time_limit=time_limit)
        self.controls = RunControls(on_start, self.stop, seed=seed)

    def view(self, *beside: pn.viewable.Viewable) -> pn.Column:
        """The job's controls, after `beside` (its other inputs) on one row, and the run's notice under them."""
        controls = pn.Row(*beside, self.controls) if beside else self.controls
        return pn.Column(controls, self.run.notice, sizing_mode="stretch_width")

    def __panel__(self) -> pn.Column:
        return self.view()

    def start(self, steps: Callable[[], Iterator]) -> None:
        """Show the controls running from 0 and walk `steps()`, replacing any job under way."""
        self.controls.param.update(running=True, progress=0.0)
        self.run.start(steps)

    def stop(self) -> None:
        self.run.stop()
        self.controls.running = False

    def done(self, finished: bool) -> None:
        """The job ended (`finished`: it ran to its end), or a result was shown without one."""
        self.controls.running = False
        if finished and (self.completed is None or self.completed()):
            self.controls.progress = 1.0


class StreamingCurve(pn.viewable.Viewer):
    """A line plot fed by a streaming run, with Start/Stop, progress and an optional seed.

    `to_data(snapshot)` returns the plot's columns (`x` and every key of `lines`);
    `lines` maps a column to its legend label; `steps()` makes a fresh generator;
    `progress(snapshot)` gives the fraction done, 0 to 1; `time_limit` is the run's (StreamingRun).
    """

    data = param.Dict(default={}, doc="The columns last drawn, by name.")

    def __init__(
        self,
        steps: Callable[[], Iterator],
        to_data: Callable[[object], dict],
        x: str,
        lines: dict[str, str],
        x_label: str,
        y_label: str,
        progress: Callable[[object], float] | None = None,
        seed: param.Integer | None = None,
        y_range: tuple[float, float] | None = None,
        name: str = "curve",
        time_limit: float | None = None,
        **params,
    ):
        super().__init__(**params)
        self.steps, self.to_data, self.progress_of = steps, to_data, progress
        self.source = ColumnDataSource({x: [], **{col: [] for col in lines}}, name=name)
        self._plot = (x, lines, x_label, y_label, y_range, name)
        self.job = ControlledRun(self._apply, self.start, seed=seed, time_limit=time_limit)
        self.run, self.controls = self.job.run, self.job.controls

    @cached_property
    def figure(self):
        """The plot, built when the curve is first shown (a page section not opened yet costs no figure)."""
        x, lines, x_label, y_label, y_range, _ = self._plot
        fig = plot(x_label, y_label, y_range=y_range)
        for col, colour in zip(lines, OKABE_ITO.values()):
            fig.line(x, col, source=self.source, color=colour, line_width=2, legend_label=lines[col])
        fig.legend.location = "bottom_right"
        return fig

    @cached_property
    def _layout(self) -> pn.Column:
        name = self._plot[-1]
        return pn.Column(self.job.view(), plot_with_downloads(self.figure, {name: self.source}), sizing_mode="stretch_width")

    def start(self) -> None:
        """Start a fresh run, replacing any run under way (a newer setting cancels stale work)."""
        self.job.start(self.steps)

    def stop(self) -> None:
        self.job.stop()

    def _apply(self, snapshot) -> None:
        data = self.to_data(snapshot)
        self.source.data = data
        self.data = data
        if self.progress_of is not None:
            self.controls.progress = min(max(float(self.progress_of(snapshot)), 0.0), 1.0)

    def __panel__(self):
        return self._layout
