"""The class's live runs across every web process of a cluster: which process trains each run, who watches it.

Several web processes serve one class (app/serving/web_processes.py), and a run of given settings
(its `run_key`) must train once whichever process its learners are on. The registry lives in the
Dask scheduler every process already uses, as a table run_key -> entry:

- `owner`: the web process (its Dask client's id) that trains the run, `run`, the id of its
  claim, and `folder`, the run folder's name once the worker has made it, with the run's `phase`;
- `counts`: process -> (learners watching, learners of them paused).

Each call is a function run on the scheduler's event loop (`Client.run_on_scheduler`), one at a
time, so a claim is atomic: of two processes pressing Start at the same moment on the same
settings, one trains the run and the other follows it. A process that left the cluster (exited,
killed) is dropped from the table at the next call: its counts no longer count, and a run it
trained has no owner (the scheduler let go of its job, which stops after its step in flight).

In a web process, `Registry` holds the last answer and one thread that, every SYNC_SECONDS while
the process has runs, sends its counts for each of them and reads the totals back
(app.jobs.shared_runs.ClassRuns decides what they mean: a run nobody watches stops, a run every
learner paused holds).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

LOG = logging.getLogger("feedback_lab")
SYNC_SECONDS = 0.25
"""Seconds between a web process's looks at the registry: a learner leaving or pausing on another process reaches
the run's owner within about this."""
OVERVIEW_SECONDS = 1.0
"""How old the room's list of every run's watchers may be."""

_TABLES: dict[str, dict[str, dict]] = {}
"""On the scheduler: scheduler id -> run_key -> entry."""


# ----------------------------------------------------------------------------- on the scheduler


def _table(dask_scheduler) -> dict[str, dict]:
    """The scheduler's table, without the processes that have left the cluster."""
    table = _TABLES.setdefault(dask_scheduler.id, {})
    alive = dask_scheduler.clients
    for key in list(table):
        entry = table[key]
        entry["counts"] = {p: c for p, c in entry["counts"].items() if p in alive}
        if entry["owner"] is not None and entry["owner"] not in alive:
            entry["owner"] = None
        if entry["owner"] is None and not entry["counts"]:
            del table[key]
    return table


def _seen(entry: dict) -> dict:
    counts = entry["counts"].values()
    return {"owner": entry["owner"], "run": entry["run"], "folder": entry["folder"], "phase": entry["phase"],
            "watching": sum(c[0] for c in counts), "paused": sum(c[1] for c in counts)}


def claim_on_scheduler(key: str, process: str, create: bool = True, dask_scheduler=None) -> dict | None:
    """The entry of the run `key` that trains now, with `process` counted as one of its learners; else, if `create`,
    a new entry owned by `process` (it starts the run), else None."""
    table = _table(dask_scheduler)
    entry = table.get(key)
    if entry is None or entry["owner"] is None:
        if not create:
            return None
        entry = table[key] = {"owner": process, "run": uuid.uuid4().hex, "folder": None, "phase": "loading", "counts": {}}
    watching, paused = entry["counts"].get(process, (0, 0))
    entry["counts"][process] = (watching + 1, paused)  # until its next sync says how many exactly
    return _seen(entry)


def sync_on_scheduler(process: str, mine: dict[str, dict], every: bool = True, dask_scheduler=None) -> dict[str, dict]:
    """Record `process`'s learners on each run of `mine` (key -> watching, paused, and for a run it trains its folder
    and phase); with `every`, these are all it watches. Returns every entry of `mine` still in the table."""
    table = _table(dask_scheduler)
    for key, entry in table.items():
        if every and key not in mine:
            entry["counts"].pop(process, None)
    for key, held in mine.items():
        entry = table.get(key)
        if entry is None:
            continue  # it ended, or its owner left: its learners here see so
        entry["counts"][process] = (held["watching"], held["paused"])
        if entry["owner"] == process:
            entry["folder"], entry["phase"] = held.get("folder") or entry["folder"], held.get("phase", entry["phase"])
    return {key: _seen(table[key]) for key in mine if key in table}


def release_on_scheduler(key: str, run: str, dask_scheduler=None) -> None:
    """The run `key` claimed as `run` (its claim's id) stops or ends: it is no longer one to join. A later claim of the
    same key (the next Start) is another run, and stays."""
    entry = _TABLES.get(dask_scheduler.id, {}).get(key)
    if entry is not None and entry["run"] == run:
        del _TABLES[dask_scheduler.id][key]


def overview_on_scheduler(dask_scheduler=None) -> dict[str, int]:
    """Run folder name -> learners watching it in every process, for each run that trains and has a folder."""
    return {e["folder"]: _seen(e)["watching"] for e in _table(dask_scheduler).values() if e["owner"] and e["folder"]}


# ----------------------------------------------------------------------------- in a web process


@dataclass(frozen=True)
class Seen:
    """A run's entry, as the registry last answered."""

    owner: str | None
    """The process that trains it (None: it left the cluster, and the run stopped with it)."""
    run: str
    """The id of the claim that started it: one key names one run after another."""
    folder: str | None
    """Its run folder's name, once made."""
    phase: str
    """Its owner's phase ('loading', 'queued', 'running', ...)."""
    watching: int
    """Learners on it in every process."""
    paused: int
    """Of them, those who paused."""


class Registry:
    """This web process's side of the registry, on the scheduler of `client()` (a Dask client)."""

    def __init__(self, client: Callable[[], object]):
        self._client = client
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._overview: tuple[float, dict[str, int]] = (-1.0, {})

    @property
    def process(self) -> str:
        """This process's name in the table: its Dask client's id."""
        return self._client().id

    def _call(self, function, *args):
        return self._client().run_on_scheduler(function, *args)

    def claim(self, key: str, create: bool = True) -> Seen | None:
        """Join the run `key` that trains in some process, or (if `create`) become the process that trains it."""
        seen = self._call(claim_on_scheduler, key, self.process, create)
        return None if seen is None else Seen(**seen)

    def release(self, key: str, run: str) -> None:
        try:
            self._call(release_on_scheduler, key, run)
        except Exception:  # the scheduler went away: its table went with it
            LOG.debug("Releasing a run in the registry failed", exc_info=True)

    def sync(self, mine: dict[str, dict], every: bool = True) -> dict[str, Seen]:
        """Send this process's counts (see sync_on_scheduler), return what the registry holds of each of its runs."""
        return {key: Seen(**seen) for key, seen in self._call(sync_on_scheduler, self.process, mine, every).items()}

    def overview(self) -> dict[str, int]:
        """Run folder name -> learners watching it in every process (at most OVERVIEW_SECONDS old)."""
        with self._lock:
            at, kept = self._overview
        if time.monotonic() - at < OVERVIEW_SECONDS:
            return kept
        try:
            kept = self._call(overview_on_scheduler)
        except Exception:
            LOG.debug("Reading the registry's runs failed", exc_info=True)
        with self._lock:
            self._overview = (time.monotonic(), kept)
        return kept

    def keep_in_step(self, look: Callable[[], None]) -> None:
        """Call `look()` every SYNC_SECONDS, for the life of the process, from a thread of its own (started once)."""
        with self._lock:
            if self._thread is not None:
                return

            def run() -> None:
                while True:
                    try:
                        look()
                    except Exception:  # the scheduler went away a moment: the next look tries again
                        LOG.debug("A look at the registry of runs failed", exc_info=True)
                    time.sleep(SYNC_SECONDS)

            self._thread = threading.Thread(target=run, name="feedback-lab-run-registry", daemon=True)
            self._thread.start()
