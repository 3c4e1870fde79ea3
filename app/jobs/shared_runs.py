"""A class's live runs: one computation per distinct run, however many learners ask for it.

A live run's numbers are a function of what it is given: the model and the reward (their files),
every setting, the seed and the device's kind. On the CPU, with one torch thread per run
(app.jobs.model_jobs.train_on_worker), two runs of the same settings give the same metrics and
replies to the last digit (tests/app/test_shared_runs.py), so when thirty learners press Start
on the page's defaults the server trains one run and all thirty watch it:

- `run_key` names a run by all of that; a GPU run is never shared (its kernels are not
  bitwise reproducible), so it gets no key.
- `ClassRuns.watch` joins a learner to the run of that key watched in this web process; else,
  through the cluster's registry of runs (app.jobs.run_registry), to the run another web
  process of the cluster trains (`FollowedRun`, from its files), else starts it (`SharedRun`).
  Every learner's page walks `follow`: the run so far at once, then each new step.
- A learner's Stop (or closed tab) leaves the run; the computation stops when no learner of any
  web process is left on it, since on a class server the cores are what every other run waits
  for. The folder keeps every step done, listed as interrupted.
- Pause holds the learner's own view; the computation holds only when every learner on it, in
  every web process, has paused (then it keeps its device, as a paused run always has), so no
  learner can freeze a run another one watches. Resume shows the newest step.
- `finished_run` finds a run of the same key that already ran to its end in the runs folder
  (whatever web process trained it, and after a restart); `replay` shows it from its files, at
  once or at the pace it trained.
- `Learner` is one learner's tab among them: `start` checks the settings and finds what to show
  for them (a finished run's files, or the class's run, joined or started), `open` a run of the
  room's list; pause, resume and leave go to the run it
  watches. The page walks what it is handed (`Watching.states`) and words how it came to it.
- `start_estimate` says when a run waiting for its device should start, from the steps the
  runs ahead of it have left and how fast they go.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from importlib import metadata
from pathlib import Path

import numpy as np

from app.jobs.cluster import POLL_SECONDS, Cluster, job_device
from app.jobs.model_jobs import LiveRun, LiveState, live_snapshots, run_steps
from app.jobs.run_registry import Registry, Seen
from app.jobs.runs import (
    Run,
    eval_result_from_record,
    lesson_began,
    read_config,
    read_run,
    sample_from_record,
    started_at,
    wall_pace,
)
from engines.lm.settings import EMBEDDED, EMBEDDED_DIR, PACKAGED, REWARD_PREFIX, LMSettings, is_folder

LOG = logging.getLogger("feedback_lab")
KEY_FORMAT = 1
"""Bumped when what fixes a run's numbers changes, so that runs of an older recipe are not served as new ones."""
PACE_STEPS = 30
"""The newest steps of a running run whose wall-clock pace an estimate and its page's status line give (a few
evaluations' worth of steps and waits for the cores)."""
WARM_UP_STEPS = 5
"""A run's first steps, left out of its pace: runs that start together go slowly while their first evaluations
(a few seconds each) take the cores, and an estimate made from them said 37 to 45% too long (docs/performance.md)."""
ESTIMATE_SECONDS = 2.0
"""Seconds between two estimates of a waiting run's start."""
REPLAY_SPEED = 1.0
"""A finished run replayed at its pace: seconds shown per second it trained."""


# ----------------------------------------------------------------------------- naming a run


def _files_stamp(path: Path) -> list:
    """(name, size, modification time) of a file, or of each file in a folder: what identifies local weights."""
    path = Path(path)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files if p.exists()]


def source_stamp(name: str) -> list | str:
    """What identifies a model or reward by name: its files for the embedded model, a folder or a saved reward
    model; the cached revision of a hub id (the name alone before it is downloaded); a package's version."""
    if name == EMBEDDED:
        return _files_stamp(EMBEDDED_DIR)
    if name.startswith(REWARD_PREFIX):
        return _files_stamp(Path(name[len(REWARD_PREFIX):]))
    if name == "vader":
        return f"vaderSentiment {metadata.version('vaderSentiment')}"
    if name in PACKAGED:
        return f"{PACKAGED[name].distribution} {PACKAGED[name].version}"
    if is_folder(name):
        folder = Path(name).expanduser()
        return _files_stamp(folder) if folder.is_dir() else name
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a hub id at all: the run itself will say so
        return name
    return Path(cached).parent.name if isinstance(cached, str) else name  # snapshots/REVISION/config.json


def run_key(settings: LMSettings, device: str) -> str | None:
    """The name of everything that fixes a run's numbers (`settings` with the device the cluster chose), or None
    for a run that is not shared (any device but the CPU)."""
    if device != "cpu":
        return None
    named = {
        "format": KEY_FORMAT, "settings": dataclasses.asdict(replace(settings, device=device)),
        "model": source_stamp(settings.model), "reward": source_stamp(settings.reward),
        "versions": [metadata.version(p) for p in ("feedback-lab", "torch", "transformers")],
    }
    return hashlib.sha256(json.dumps(named, sort_keys=True, default=str).encode()).hexdigest()[:20]


# ----------------------------------------------------------------------------- one computation, many learners


class Watched:
    """One live run as the learners of this web process watch it: each learner's page walks `follow(viewer)` on its
    own stream thread, the newest state first. `viewer` is any object that stands for one learner's page.

    `SharedRun` trains the run here; `FollowedRun` follows a run another web process of the cluster trains.
    Their learners are counted across every process (app.jobs.run_registry): `elsewhere` is how many
    watch it in the other processes, and of them paused, as the registry last said.
    """

    def __init__(self, key: str | None, settings: LMSettings, runs_dir: Path, cluster: Cluster, on_end=None):
        self.key, self.settings, self.runs_dir, self.cluster = key, settings, Path(runs_dir), cluster
        self._thread = threading.Thread(target=self._drive, name=f"feedback-lab-{type(self).__name__}", daemon=True)
        self.state = LiveState("loading", settings)
        self.ended = False
        self.stopping = False
        """Set when the last learner left: the run ends here, and nobody joins it."""
        self.elsewhere = (0, 0)
        self._version = 0
        self._watchers: set = set()
        self._paused: set = set()
        self._changed = threading.Condition()
        self._on_end = on_end

    def start(self, viewer) -> None:
        """Start following the run (training it, for a SharedRun) with `viewer` its first learner here."""
        self.join(viewer)
        self._thread.start()

    def _drive(self) -> None:
        """The thread that publishes the run's states."""
        raise NotImplementedError

    @property
    def watchers(self) -> int:
        """Learners on the run in every web process."""
        return len(self._watchers) + self.elsewhere[0]

    @property
    def joinable(self) -> bool:
        return not (self.ended or self.stopping)

    def counts(self) -> tuple[int, int]:
        """(learners watching, of them paused) in this web process."""
        with self._changed:
            return len(self._watchers), len(self._paused)

    def _publish(self, state: LiveState) -> None:
        with self._changed:
            self.state = state
            self._version += 1
            self._changed.notify_all()

    def _end(self) -> None:
        with self._changed:
            self.ended = True
            self._version += 1
            self._changed.notify_all()
        if self._on_end is not None:
            self._on_end(self)

    def join(self, viewer) -> None:
        with self._changed:
            self._watchers.add(viewer)
        self.hold_if_all_paused()

    def pause(self, viewer) -> None:
        """Hold `viewer`'s view at the step it shows; the run holds too once every learner on it has paused."""
        with self._changed:
            if viewer in self._watchers:
                self._paused.add(viewer)
        self.hold_if_all_paused()

    def resume(self, viewer) -> None:
        with self._changed:
            self._paused.discard(viewer)
            self._changed.notify_all()
        self.hold_if_all_paused()

    def hold_if_all_paused(self) -> None:
        """The run holds when every learner on it, in every process, has paused (its trainer's concern)."""

    def follow(self, viewer) -> Iterator[LiveState]:
        """The run's newest state at once, then each new one until the run ends or `viewer` leaves; nothing new
        while `viewer` is paused (the same state every POLL_SECONDS, so that the reader can stop meanwhile)."""
        seen, state = -1, self.state
        while True:
            with self._changed:
                if viewer not in self._watchers:
                    return
                if self._version == seen or viewer in self._paused:
                    self._changed.wait(POLL_SECONDS)
                if viewer in self._paused:
                    state = replace(state, phase="paused")  # the step this learner saw last, held
                else:
                    state, seen = self.state, self._version
                ended = self.ended and seen == self._version
            yield state
            if ended:
                return


class SharedRun(Watched):
    """One live run's computation, trained by this web process for the learners of every process.

    A thread walks the run's LiveRun.states() and keeps the newest state.
    """

    def __init__(self, key: str | None, settings: LMSettings, runs_dir: Path, cluster: Cluster, on_end=None,
                 last_elsewhere: Callable[[], bool] = lambda: True, release: Callable[[], None] = lambda: None,
                 download_problem: Callable[[object], str] | None = None):
        super().__init__(key, settings, runs_dir, cluster, on_end)
        self.live = LiveRun(settings, runs_dir, cluster, key=key, download_problem=download_problem)
        self._held = False
        self._last_elsewhere = last_elsewhere
        """Asked when the last learner of this process leaves: whether no learner of another process watches it."""
        self.release = release
        """Tells the cluster's registry that the run is no longer one to join (it stops or ended)."""

    def _drive(self) -> None:
        estimated_at, states = -math.inf, self.live.states()
        try:
            for state in states:
                if self.stopping and self.live.job is None:
                    break  # left while loading or downloading: closing the states stops a download too
                if state.phase == "queued" and self.live.job is not None:
                    if time.monotonic() - estimated_at > ESTIMATE_SECONDS:  # it reads run folders: not at every poll
                        estimated_at, starts_in = time.monotonic(), estimate_start(self.live.cluster, self.live.job.key,
                                                                                   self.live.runs_dir)
                    state = replace(state, starts_in=starts_in)
                self._publish(state)
        except Exception as error:  # a bug of one run must not leave its learners waiting forever
            LOG.exception("A live run failed")
            self._publish(replace(self.state, phase="error", message=f"The run stopped on an unexpected error ({type(error).__name__})."))
        finally:
            states.close()
            self._end()

    def leave(self, viewer) -> None:
        """`viewer` leaves (Stop, its tab closed). The last one of the cluster to leave stops the computation and
        stays on it to the end, so that it sees the step in flight written."""
        with self._changed:
            if viewer not in self._watchers:
                return
            self._paused.discard(viewer)
            last = self._watchers == {viewer} and not self.ended
            if not last:
                self._watchers.discard(viewer)
            self._changed.notify_all()
        if last and self._last_elsewhere():
            self.stop()
        else:
            if last:
                with self._changed:
                    self._watchers.discard(viewer)
            self.hold_if_all_paused()

    def stop(self) -> None:
        """Stop the computation after its step in flight: nobody watches it any more."""
        with self._changed:
            self.stopping = True
            self._changed.notify_all()
        self.release()
        self.live.stop()

    def hold_if_all_paused(self) -> None:
        """Pause the job when every learner on it, in every process, has paused; resume it when one has not. Only on
        a change, since each is a call to the scheduler."""
        with self._changed:
            watching, paused = len(self._watchers) + self.elsewhere[0], len(self._paused) + self.elsewhere[1]
            hold = watching > 0 and paused == watching
            changed, self._held = hold != self._held, hold
        if changed:
            (self.live.pause if hold else self.live.resume)()


class FollowedRun(Watched):
    """A run another web process of the cluster trains, watched here from its files: read every POLL_SECONDS while
    they grow, until the registry says the run no longer trains (it ended, stopped, or its process left). Its
    learners count for the run in the registry, so it trains on while any watches it."""

    def __init__(self, key: str, settings: LMSettings, runs_dir: Path, cluster: Cluster, seen: Callable[[], object],
                 on_end=None):
        super().__init__(key, settings, runs_dir, cluster, on_end)
        self._seen = seen
        """The registry's last word on the run (app.jobs.run_registry.Seen), None once it no longer trains."""

    def _drive(self) -> None:
        read_at = None
        try:
            while not self.stopping:
                seen = self._seen()
                folder = self.runs_dir / seen.folder if seen is not None and seen.folder else self.state.folder
                if folder is None:
                    if seen is None:
                        break
                    if seen.phase != self.state.phase:
                        self._publish(LiveState(seen.phase, self.settings))
                else:
                    stamp = (folder / "metrics.jsonl").stat().st_mtime_ns if (folder / "metrics.jsonl").exists() else None
                    if stamp != read_at or seen is None:
                        read_at = stamp
                        *_, state = replay(read_run(folder))
                        self._publish(replace(state, folder=folder))
                    if seen is None:
                        break
                time.sleep(POLL_SECONDS)
        except Exception as error:
            LOG.exception("Following a run of another web process failed")
            self._publish(replace(self.state, phase="error", message=f"The run stopped on an unexpected error ({type(error).__name__})."))
        finally:
            self._end()

    def leave(self, viewer) -> None:
        """`viewer` leaves; when none is left here, this process no longer counts on the run."""
        with self._changed:
            self._watchers.discard(viewer)
            self._paused.discard(viewer)
            if not self._watchers:
                self.stopping = True
            self._changed.notify_all()


class ClassRuns:
    """The live runs of this web process by key: who starts one, who joins one, which are watched here; and, through
    the cluster's registry (app.jobs.run_registry), the same for every web process of the cluster."""

    def __init__(self):
        self._lock = threading.RLock()
        self._runs: list[Watched] = []
        self._registries: dict[Cluster, Registry] = {}
        self._seen: dict[Cluster, dict[str, Seen | None]] = {}
        """The registry's last word on each run followed here, by the cluster (one in a server; a test plays two)."""

    def registry(self, cluster: Cluster) -> Registry:
        with self._lock:
            if cluster not in self._registries:
                self._registries[cluster] = Registry(lambda: cluster.client)
                self._registries[cluster].keep_in_step(partial(self._sync, cluster))
            return self._registries[cluster]

    def watch(self, key: str | None, settings: LMSettings, device: str, runs_dir: Path, cluster: Cluster,
              viewer, download_problem: Callable[[object], str] | None = None) -> tuple[Watched, bool]:
        """The run `viewer` watches for `settings` on `device` (named `key`, run_key's), and whether another learner
        started it (joined): one of this process, else one another process trains, else a new one trained here,
        which checks a download with `download_problem` (LiveRun's)."""
        runs_dir = Path(runs_dir)
        settings = replace(settings, device=device)
        with self._lock:
            for run in self._runs:
                if key is not None and run.key == key and run.runs_dir == runs_dir and run.joinable:
                    run.join(viewer)
                    return run, True
            registry = self.registry(cluster) if key is not None else None
            seen = registry.claim(key) if registry is not None else None
            elsewhere = seen is not None and seen.owner != registry.process
            if elsewhere:
                self._seen.setdefault(cluster, {})[key] = seen
                run = FollowedRun(key, settings, runs_dir, cluster, partial(self.seen, cluster, key), on_end=self._ended)
            else:
                release = partial(registry.release, key, seen.run) if seen is not None else lambda: None
                run = SharedRun(key, settings, runs_dir, cluster, on_end=self._ended,
                                last_elsewhere=partial(self._nobody_elsewhere, cluster, key), release=release,
                                download_problem=download_problem)
            self._runs.append(run)
        run.start(viewer)
        return run, elsewhere

    def open(self, folder_name: str, key: str | None, settings: LMSettings, runs_dir: Path, cluster: Cluster,
             viewer) -> Watched | None:
        """Join the run training into `runs_dir`/`folder_name` (named `key`, trained with `settings`), here or in
        another web process."""
        runs_dir = Path(runs_dir)
        with self._lock:
            for run in self._runs:
                folder = run.state.folder
                if folder is not None and folder.name == folder_name and run.runs_dir == runs_dir and run.joinable:
                    run.join(viewer)
                    return run
            if key is None or any(run.key == key and run.joinable for run in self._runs):
                return None
            seen = self.registry(cluster).claim(key, create=False)
            if seen is None or seen.folder != folder_name:
                return None
            self._seen.setdefault(cluster, {})[key] = seen
            run = FollowedRun(key, settings, runs_dir, cluster, partial(self.seen, cluster, key), on_end=self._ended)
            self._runs.append(run)
        run.start(viewer)
        return run

    def seen(self, cluster: Cluster, key: str) -> Seen | None:
        """The registry of `cluster`'s last word on the run `key` (None: it no longer trains)."""
        with self._lock:
            return self._seen.get(cluster, {}).get(key)

    def _ended(self, run: Watched) -> None:
        with self._lock:
            if run in self._runs:
                self._runs.remove(run)
        if isinstance(run, SharedRun):
            run.release()

    def _nobody_elsewhere(self, cluster: Cluster, key: str | None) -> bool:
        """Whether no learner of another web process watches the run `key` trained here, as the registry says now."""
        if key is None:
            return True
        try:
            seen = self.registry(cluster).sync({key: {"watching": 0, "paused": 0}}, every=False).get(key)
        except Exception:  # no word from the scheduler: nobody elsewhere can be seen either
            LOG.debug("Asking the registry about a run failed", exc_info=True)
            return True
        return seen is None or seen.watching == 0

    def _sync(self, cluster: Cluster) -> None:
        """One look at the registry (on its thread): send this process's learners on each run, read the other
        processes'; a run trained here that nobody watches any more stops, one every learner paused holds."""
        with self._lock:
            runs = [r for r in self._runs if r.key is not None and r.joinable and r.cluster is cluster]
            if not runs and not self._seen.get(cluster):
                return  # nothing here to count, and nothing counted last time to take back
        mine = {}
        for run in runs:
            watching, paused = run.counts()
            mine[run.key] = {"watching": watching, "paused": paused}
            if isinstance(run, SharedRun):
                mine[run.key] |= {"folder": run.state.folder.name if run.state.folder else None, "phase": run.state.phase}
        seen = self.registry(cluster).sync(mine)
        with self._lock:
            held = {r.key for r in self._runs if r.cluster is cluster}
            kept = {key: found for key, found in self._seen.get(cluster, {}).items() if key in held}
            self._seen[cluster] = kept | {key: seen.get(key) for key in mine}
        for run in runs:
            entry = seen.get(run.key)
            watching, paused = mine[run.key]["watching"], mine[run.key]["paused"]
            run.elsewhere = (entry.watching - watching, entry.paused - paused) if entry is not None else (0, 0)
            if isinstance(run, SharedRun):
                if watching == 0 and run.elsewhere[0] == 0 and run.joinable:
                    run.stop()
                else:
                    run.hold_if_all_paused()

    def training(self, runs_dir: Path) -> list[Watched]:
        """The runs of `runs_dir` watched in this web process, oldest first."""
        with self._lock:
            return [run for run in self._runs if run.runs_dir == Path(runs_dir)]

    def watchers(self, runs_dir: Path, cluster: Cluster | None = None) -> dict[str, int]:
        """Run folder name -> learners on it in every web process of `cluster` (in this one without it)."""
        here = {run.state.folder.name: run.watchers for run in self.training(runs_dir) if run.state.folder is not None}
        if cluster is None or not cluster.connected:
            return here
        return self.registry(cluster).overview() | here


CLASS_RUNS = ClassRuns()
"""This web process's live runs."""


# ----------------------------------------------------------------------------- finished runs


def finished_run(key: str | None, runs_dir: Path, since: float | None = None) -> Run | None:
    """The newest run folder of `runs_dir` that ran to its end under `key`, started at `since` (Unix seconds) or
    later where given, or None."""
    if key is None or not Path(runs_dir).is_dir():
        return None
    # Only config.json is read of every folder: a class's runs folder holds many runs, each of thousands of lines.
    named = [f for f in sorted(Path(runs_dir).iterdir()) if read_config(f / "config.json").get("run_key") == key
             and (since is None or started_at(f) >= since)]
    for folder in reversed(named):
        run = read_run(folder)
        if run.finished:
            return run
    return None


def settings_of(run: Run) -> LMSettings:
    """The settings a run folder was trained with (ValueError with one sentence if its config.json has none usable)."""
    try:
        return LMSettings(**run.config["settings"])
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"The run {run.id} has no readable settings in its config.json ({error}).") from None


def replay(run: Run, at_pace: bool = False) -> Iterator[LiveState]:
    """A run folder as the live page's states: everything at once, or step by step at the pace it trained.

    The evaluations read back keep the worked example of their first reply (eval.jsonl keeps
    that one, token by token).
    """
    settings = settings_of(run)
    folder, device = run.folder, run.config.get("device", settings.device)
    evals = [eval_result_from_record(e) for e in run.evals]
    samples = {s["step"]: tuple(sample_from_record(x) for x in s["samples"]) for s in run.samples}

    def upto(step: int) -> LiveState:
        metrics = tuple(m for m in run.metrics if m["step"] <= step)
        shown = tuple(i for i, e in enumerate(run.evals) if e["step"] <= step)
        return LiveState("running", settings, device=device, folder=folder, metrics=metrics, step=step,
                         evals=tuple(run.evals[i] for i in shown), eval_results=tuple(evals[i] for i in shown),
                         samples=samples.get(step, ()))

    if not at_pace:
        yield upto(run.metrics[-1]["step"] if run.metrics else 0)
        return
    yield upto(0)
    written = [m.get("time") for m in run.metrics]
    for i, m in enumerate(run.metrics):
        # The seconds between its lines as written (evaluations and waits for the cores included), else its own time.
        gap = written[i] - written[i - 1] if i and None not in (written[i], written[i - 1]) else m.get("step_time", 0.0)
        time.sleep(max(float(gap), 0.0) / REPLAY_SPEED)
        yield upto(m["step"])


def follow_folder(folder: Path, training, every: float = 1.0) -> Iterator[LiveState]:
    """A run another web process trains, from its files: the run so far every `every` seconds while `training()`
    says it trains, then as it ended. Its life is its own process's: it stops when the learners there have left."""
    while True:
        still = training()
        yield from replay(read_run(folder))
        if not still:
            return
        time.sleep(every)


def trains(cluster: Cluster, name: str) -> bool:
    """Whether the run folder `name` is being written by a job of the cluster now."""
    return any(running and run_id == name for _, running, _, run_id in cluster.jobs())


def find_run(name: str, runs_dir: Path) -> Run:
    """The run folder `name` of `runs_dir` (ValueError with one sentence for a name that is not one of its runs)."""
    runs_dir = Path(runs_dir)
    folder = runs_dir / name
    if not name or "/" in name or "\\" in name or name in (".", "..") or not (folder / "config.json").is_file():
        raise ValueError(f"There is no run named {name[:80]!r} on this server; the runs it has are listed under 'The room's runs'.")
    return read_run(folder)


# ----------------------------------------------------------------------------- one learner


@dataclass(frozen=True)
class Watching:
    """What a learner's page walks for the run it asked for, and how it came to that run (the page words it)."""

    states: Callable[[], Iterator[LiveState]]
    """The run's LiveStates, for the page's StreamingRun to walk."""
    settings: LMSettings
    """The run's settings (the page's own, or those of the run opened)."""
    how: str
    """'started' (a new run), 'joined' (another learner's run with the same settings), 'finished' (the same
    settings already ran to their end: shown from its files), 'opened' (a run of the room's list, as it trains),
    or 'files' (a run of the room's list that no longer trains: shown from its files)."""
    elsewhere: bool = False
    """Whether another web process trains the run joined or opened: its files are followed as they grow."""
    run_id: str = ""
    """The run folder's name, for a run shown from its files ('finished', 'files')."""

    def snapshots(self) -> Iterator:
        """The run's states as the jobs' snapshots, for the page's job view (app.jobs.model_jobs.live_snapshots)."""
        return live_snapshots(self.states())


class Learner:
    """One learner's tab among the class's runs: the run of this web process it watches, and leaving it.

    It is the watcher a SharedRun counts, so that a learner is one watcher whatever the page does. The server's
    policy comes from the page: the settings it lets start (app.serving.offered.start_problem) and its word on a
    download (`download_problem`, LiveRun's)."""

    def __init__(self, runs_dir: Path | str, cluster: Cluster, download_problem: Callable[[object], str] | None = None,
                 class_runs: ClassRuns | None = None):
        self.runs_dir, self.cluster, self.download_problem = Path(runs_dir), cluster, download_problem
        self.class_runs = class_runs or CLASS_RUNS
        """The runs of this learner's web process."""
        self.run: Watched | None = None
        """The run watched (or left, until `ended` is told); None for a run shown from its files."""

    def start(self, settings: LMSettings, at_pace: bool = False) -> tuple[Watching | None, str]:
        """(what to show, '') for `settings`, which the server allows, or (None, the one sentence why no run starts: no
        worker of the cluster offers their device)."""
        try:
            device = self.cluster.device_for(settings.device)
        except ValueError as error:
            return None, str(error)
        return self.watch(settings, device, at_pace), ""

    def watch(self, settings: LMSettings, device: str, at_pace: bool = False) -> Watching:
        """The run of `settings` on `device`: one that already ran to its end on this server in the current lesson (its
        files, at once; or `at_pace`, which also replays one from before the lesson), one another web process trains (its files as they grow), else the one of this web process, joined
        or started (it may wait for its device)."""
        self._let_go()
        key = run_key(settings, device)
        # A lesson's Start trains afresh rather than show a run finished before it, unless the learner asks to replay.
        done = finished_run(key, self.runs_dir, since=None if at_pace else lesson_began(self.runs_dir))
        if done is not None:
            return Watching(partial(replay, done, at_pace), settings, "finished", run_id=done.id)
        self.run, joined = self.class_runs.watch(key, settings, device, self.runs_dir, self.cluster, self, self.download_problem)
        return Watching(partial(self.run.follow, self), settings, "joined" if joined else "started",
                        elsewhere=isinstance(self.run, FollowedRun))

    def open(self, found: Run) -> Watching:
        """The room's run `found` (find_run's): joined where it trains in this web process, followed from its files
        where another one trains it, else shown from its files."""
        settings = settings_of(found)
        self._let_go()
        self.run = self.class_runs.open(found.id, found.config.get("run_key"), settings, self.runs_dir, self.cluster, self)
        if self.run is not None:
            return Watching(partial(self.run.follow, self), settings, "opened", elsewhere=isinstance(self.run, FollowedRun))
        if trains(self.cluster, found.id):
            return self._follow_files(found.id, settings, "opened")
        return Watching(partial(replay, found), settings, "files", run_id=found.id)

    def _follow_files(self, name: str, settings: LMSettings, how: str) -> Watching:
        states = partial(follow_folder, self.runs_dir / name, partial(trains, self.cluster, name))
        return Watching(states, settings, how, elsewhere=True)

    def pause(self) -> None:
        """Hold this learner's view after the step shown; the run holds too if no other learner watches it."""
        if self.run is not None:
            self.run.pause(self)

    def resume(self) -> None:
        if self.run is not None:
            self.run.resume(self)

    def leave(self) -> bool:
        """Leave the run watched: it stops after its step in flight (its files stay) if no other learner watches it,
        else it trains on for them. False if this learner watches no run of this process (a run shown from files)."""
        if self.run is None:
            return False
        self.run.leave(self)
        return True

    def _let_go(self) -> None:
        self.leave()
        self.run = None

    def ended(self) -> int | None:
        """The page has shown the end of what it watched: how many learners the run trains on for if this learner
        left it while it went on, else None."""
        run, self.run = self.run, None
        return run.watchers if run is not None and run.joinable else None


# ----------------------------------------------------------------------------- waiting


def newest_steps(folder: Path, last: int = 10) -> list[dict]:
    """The newest `last` records of a run folder's metrics.jsonl, read from its end (a long run's file is long)."""
    try:
        with open(folder / "metrics.jsonl", "rb") as handle:
            handle.seek(max(handle.seek(0, 2) - 400 * (last + 1), 0))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()[1:]  # the first may be cut
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # the line being written
    return [r for r in records if isinstance(r, dict) and isinstance(r.get("step"), int)][-last:]


_device_lines: dict[tuple, tuple[float, object]] = {}
_device_lines_lock = threading.Lock()


def device_line(cluster: Cluster, device: str, runs_dir: Path) -> tuple[list[str], list[tuple[int, int, float]], int]:
    """(the waiting jobs' keys in order, (steps done, steps, seconds a step) of each running job, the device's slots),
    at most ESTIMATE_SECONDS old: every waiting run of this process reads the same line."""
    now = time.monotonic()
    with _device_lines_lock:
        kept = _device_lines.get((cluster, device, runs_dir))
        if kept is not None and now - kept[0] < ESTIMATE_SECONDS:
            return kept[1]
    jobs = sorted((j for j in cluster.jobs() if job_device(j[0]) == device), key=lambda j: j[2])
    running = []
    for key, is_running, _, run_id in jobs:
        if is_running:
            newest = newest_steps(Path(runs_dir) / run_id, PACE_STEPS) if run_id else []
            steps = read_config(Path(runs_dir) / run_id / "config.json").get("settings", {}).get("steps") if run_id else None
            steady = [m for m in newest if m["step"] > WARM_UP_STEPS]
            pace = wall_pace(steady) if len(steady) >= PACE_STEPS // 3 else None
            running.append((newest[-1]["step"] if newest else 0, steps or run_steps(key) or 0, pace or 0.0))
    line = ([k for k, is_running, _, _ in jobs if not is_running], running, cluster.capacity(device))
    with _device_lines_lock:
        _device_lines[(cluster, device, runs_dir)] = (now, line)
    return line


def estimate_start(cluster: Cluster, key: str, runs_dir: Path) -> float | None:
    """Seconds until the waiting job `key` should start (None while no worker holds it yet or no pace is known),
    from the cluster's line for its device and the run folders in `runs_dir` of the runs training on it.

    A job ahead that is not a live run (a reward model's training, say) counts as a run of as
    many steps as this one.
    """
    waiting, running, slots = device_line(cluster, job_device(key), Path(runs_dir))
    if key not in waiting:
        return None
    ahead = [run_steps(k) or run_steps(key) for k in waiting[: waiting.index(key)]]
    return start_estimate(waiting.index(key) + 1, slots, running, ahead)


def start_estimate(position: int, slots: int, running: list[tuple[int, int, float]], waiting: list[int],
                   load_seconds: float = 2.0) -> float | None:
    """Seconds until the run at `position` (1 = next) in its device's line starts (None before any run's pace is known).

    `running`: (steps done, steps in all, seconds per step) of each run training on the device;
    `waiting`: the steps of each run ahead in line. A run that finishes frees its slot for the
    next in line; a run whose pace is not known yet, and every waiting run, is taken to go at the
    median pace of those training (the device as loaded as now), plus `load_seconds` to load.
    """
    paces = [pace for _, _, pace in running if pace > 0]
    if not paces:
        return None  # nothing trains at a known pace yet
    pace = float(np.median(paces))
    left = [max(total - done, 0) * (p if p > 0 else pace) for done, total, p in running]
    free = sorted(left + [0.0] * max(slots - len(running), 0))[:max(slots, 1)]
    for steps in waiting[: max(position - 1, 0)]:
        t = free.pop(0)
        free.append(t + load_seconds + steps * pace)
        free.sort()
    return free[0]
