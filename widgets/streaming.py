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

A page shows a job through its `JobView` (widgets/job_view.py), which owns a `StreamingRun`.
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
from functools import partial

import panel as pn
from panel.io.state import set_curdoc

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
        self.failure_told = False
        """Whether the sentence in `notice` says the job failed: it then stays after the job ends, until a new start."""
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

    def cancel(self) -> None:
        """Stop the job under way and drop what it has yet to deliver, its end included: a new start follows."""
        self._stop.set()
        self._token += 1

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
        pending, finished, message, kind, snapshots, waited = None, False, "", "warning", None, 0.0
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
            message, kind = FAILED.format(kind=type(error).__name__), "danger"
        finally:
            _close(snapshots)
            if pending is not None and not stop.is_set():
                self._deliver(doc, partial(self._apply_current, token, pending), stop)
            self._deliver(doc, partial(self._done_current, token, finished, message, kind), stop)

    def _apply_current(self, token: int, snapshot) -> None:
        if token == self._token:
            self.apply(snapshot)

    def _done_current(self, token: int, finished: bool, message: str, kind: str) -> None:
        if token != self._token:
            return
        if message or not self.failure_told:  # a failure told during the job stays; a wait's sentence goes
            self.tell(message, kind)
        if self.on_done is not None:
            self.on_done(finished)

    def tell(self, message: str, kind: str = "warning") -> None:
        """Show one sentence in `notice` (an empty one hides it): a limit or a wait as a "warning", a failure as "danger"."""
        self.failure_told = bool(message) and kind == "danger"
        self.notice.param.update(object=message, visible=bool(message), alert_type=kind)


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
