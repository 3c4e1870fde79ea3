"""What the sessions share: one queue of model jobs per device, and the loaded models and results.

Every browser tab has its own page, its own runs and its own run folders. What the tabs
share is the machine, and two objects hold that shared, mutable state (nothing else does):

- `RunQueue`: at most `slots` jobs at a time on each device (one by default: two runs on one
  CPU or one GPU only slow each other down). A job is a language-model run of /live-run, or
  the model work of another page (sampling pairs, training a reward model, sampling a
  frontier), walked through `on_device`. The others wait in line, first come first served,
  and can see their place. A waiting job that leaves (its owner pressed Stop, or its tab
  closed) is taken out of the line; a running job that leaves frees its slot for the next.
- `ModelCache`: each model is loaded from disk (or downloaded) once, by whichever session asks
  first; the others wait for that load instead of starting their own. Runs train copies.
  It also keeps the newest few results that sessions computed (pair sets, trained reward
  models) under the settings that made them, so that a second learner asking for the same
  computation gets it at once instead of queueing for the device again.

Both are thread-safe: runs live on worker threads, pages on the server's thread. Neither
imports torch: the cache is handed its loader, so the light pages never pay for torch.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

SLOTS_VARIABLE = "FEEDBACK_LAB_RUNS_PER_DEVICE"
"""Environment variable: how many language-model runs may train at once on one device (default 1)."""
POLL_SECONDS = 0.25
"""Seconds between looks at a waiting job's place in line (or at a paused run's Resume): a Stop is seen within this time."""
RESULTS_KEPT = 8
"""Computed results (pair sets, trained reward models) the model cache keeps, the newest."""


@dataclass(eq=False)
class Ticket:
    """One run's place in the queue of its device."""

    device: str
    """The device the run trains on, as torch names it: 'cpu', 'cuda', 'cuda:1'."""
    label: str
    """What the queue shows for this run, e.g. 'embedded · vader · β 0.05'."""
    run_id: str | None = None
    """The run's folder name, once it has one (set by `RunQueue.set_run_id`)."""
    granted: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set when the run may start."""


@dataclass(frozen=True)
class DeviceQueue:
    """What one device is doing: the labels of its running and of its waiting runs, in order."""

    device: str
    running: tuple[str, ...]
    waiting: tuple[str, ...]


class RunQueue:
    """First come, first served, at most `slots` running tickets per device."""

    def __init__(self, slots: int = 1):
        if not (isinstance(slots, int) and slots >= 1):
            raise ValueError(f"slots must be a whole number >= 1, got {slots!r}.")
        self.slots = slots
        self._lock = threading.Lock()
        self._running: dict[str, list[Ticket]] = {}
        self._waiting: dict[str, list[Ticket]] = {}
        self._listeners: list[Callable[[], None]] = []

    def join(self, device: str, label: str) -> Ticket:
        """Queue a run on `device`; it starts at once when a slot is free (`ticket.granted` is set)."""
        ticket = Ticket(device, label)
        with self._lock:
            self._waiting.setdefault(device, []).append(ticket)
            self._promote(device)
        self._notify()
        return ticket

    def wait(self, ticket: Ticket, timeout: float | None = None) -> bool:
        """Block until `ticket` may run (True), or for at most `timeout` seconds (False if still waiting)."""
        return ticket.granted.wait(timeout)

    def leave(self, ticket: Ticket) -> None:
        """Take `ticket` out, waiting or running; the next in line starts. Leaving twice is harmless."""
        with self._lock:
            for table in (self._waiting, self._running):
                line = table.get(ticket.device, [])
                if ticket in line:
                    line.remove(ticket)
            self._promote(ticket.device)
        self._notify()

    def places(self, ticket: Ticket, poll: float = POLL_SECONDS) -> Iterator[int | None]:
        """Yield `ticket`'s place in line (1 = next) every `poll` seconds until it may run."""
        while not self.wait(ticket, poll):
            yield self.position(ticket)

    def position(self, ticket: Ticket) -> int | None:
        """0 while running, k for the k-th place in line (1 = next), None once it has left."""
        with self._lock:
            if ticket in self._running.get(ticket.device, []):
                return 0
            line = self._waiting.get(ticket.device, [])
            return line.index(ticket) + 1 if ticket in line else None

    def set_run_id(self, ticket: Ticket, run_id: str) -> None:
        """Record the folder a running ticket writes, so run lists can mark it as running."""
        with self._lock:
            ticket.run_id = run_id
        self._notify()

    def running_ids(self) -> set[str]:
        """The folder names of the runs training now, on every device."""
        with self._lock:
            return {t.run_id for line in self._running.values() for t in line if t.run_id is not None}

    def overview(self) -> list[DeviceQueue]:
        """Every device with a run running or waiting, in the order devices were first used."""
        with self._lock:
            devices = list(dict.fromkeys([*self._running, *self._waiting]))
            queues = [
                DeviceQueue(d, tuple(t.label for t in self._running.get(d, [])), tuple(t.label for t in self._waiting.get(d, [])))
                for d in devices
            ]
        return [q for q in queues if q.running or q.waiting]

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` (from whichever thread changed the queue) after every change; returns the unsubscribe function."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _promote(self, device: str) -> None:
        """Start waiting tickets while `device` has a free slot (the lock is held)."""
        running, waiting = self._running.setdefault(device, []), self._waiting.setdefault(device, [])
        while waiting and len(running) < self.slots:
            ticket = waiting.pop(0)
            running.append(ticket)
            ticket.granted.set()

    def _notify(self) -> None:
        # Outside the lock: a listener may read the queue.
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()


@dataclass(frozen=True)
class Queued:
    """A snapshot of a job still waiting for its device."""

    device: str
    """The device it waits for."""
    position: int | None
    """Its place in line: 1 = next."""

    def sentence(self, what: str) -> str:
        """One sentence for the page: `what` waits, and where."""
        ahead = "" if self.position is None else f" (place {self.position} in line)"
        return (f"{what} waits for the {self.device}{ahead}: this server trains one job at a time on it, and the "
                "live-run page lists what is running.")


def told_waiting(run, snapshot, what: str) -> bool:
    """Whether `snapshot` is Queued: if so, `run` (a widgets.streaming.StreamingRun) tells where `what` waits;
    any other snapshot clears that sentence."""
    queued = isinstance(snapshot, Queued)
    run.tell(snapshot.sentence(what) if queued else "")
    return queued


def on_device(queue: RunQueue, device: str, label: str, work: Iterator, poll: float = POLL_SECONDS) -> Iterator:
    """Walk the generator `work` holding a place on `device`: `Queued` snapshots while in line, then its own.

    The place is left however `work` ends: finished, failed, or closed at a yield (the tab
    closed or Stop was pressed; the page's StreamingRun closes the generator).
    """
    ticket = queue.join(device, label)
    try:
        for position in queue.places(ticket, poll):
            yield Queued(device, position)
        yield from work
    finally:
        queue.leave(ticket)


class ModelCache:
    """Objects loaded once per key and kept: `get(key, load)` calls `load()` only for the first caller.

    Concurrent callers of one key wait for the first load rather than loading again; callers
    of other keys do not wait. A load that raises is not kept, so the next caller tries again
    (a model that was missing may have been copied in since). Results a session computed are
    handed in with `keep(key, value)` and read with `result(key)`; the newest `results` stay.
    """

    def __init__(self, results: int = RESULTS_KEPT):
        self._lock = threading.Lock()
        self._items: dict[Hashable, object] = {}
        self._loading: dict[Hashable, threading.Lock] = {}
        self._results: OrderedDict[Hashable, object] = OrderedDict()
        self.results = results

    def keep(self, key: Hashable, value: object) -> None:
        """Keep a computed result under `key` (the settings that made it), dropping the oldest beyond `results`."""
        with self._lock:
            self._results[key] = value
            self._results.move_to_end(key)
            while len(self._results) > self.results:
                self._results.popitem(last=False)

    def result(self, key: Hashable):
        """The result kept under `key`, or None."""
        with self._lock:
            return self._results.get(key)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: Hashable, load: Callable[[], object]):
        with self._lock:
            if key in self._items:
                return self._items[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:
                    return self._items[key]
            value = load()
            with self._lock:
                self._items[key] = value
                self._loading.pop(key, None)
            return value

    def model(self, name: str, device, source: str | None = None):
        """(model, tokenizer) of causal LM `name` on `device`, loaded once, from `source` if given (a downloaded folder)."""
        from engines.lm.models import load_causal_lm

        return self.get(("model", name, str(device)), lambda: load_causal_lm(source or name, device))

    def reward(self, name: str, device, source: str | None = None):
        """The reward `name` on `device`, loaded once, from `source` if given (a downloaded classifier's folder)."""
        from engines.lm.rewards import load_reward

        return self.get(("reward", name, str(device)), lambda: load_reward(source or name, device))


def slots_from_environment() -> int:
    """FEEDBACK_LAB_RUNS_PER_DEVICE as a whole number >= 1 (default 1)."""
    text = os.environ.get(SLOTS_VARIABLE, "1").strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{SLOTS_VARIABLE} must be a whole number >= 1, got {text!r}.")
    return int(text)


QUEUE = RunQueue(slots_from_environment())
"""The queue of model jobs every page of this server uses."""
MODELS = ModelCache()
"""The models (and reward classifiers) every page of this server shares, by (kind, name, device), and the newest results."""
