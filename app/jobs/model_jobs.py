"""Every model job from request to end: limits, download, queue, submission, streaming, stop, run files.

Pages only ask for a job and walk its snapshots (on a widgets.streaming.StreamingRun thread of
the web process); what happens on the device happens here, in functions a Dask worker runs
(app/jobs/cluster.py). The jobs:

- `LiveRun`: a live REINFORCE run of /live-run (seed 000 sections 6.11 and 6.12). The web
  process checks the settings against the server's limits and downloads a hub model with
  progress, one download at a time and only where the disk and memory have room for it
  (app/serving/offered.py); the worker loads the models (once per worker process), makes the run folder
  and writes every result to it, flushed, before sending it (app/jobs/runs.py).
- `generate_pairs`, `train_reward_model`, `sweep_tau`: the reward-model page's sampling,
  training and tau_label sweep (seed 001 sections 6 to 8). The web process keeps the newest
  results under the settings that made them (MODELS), so a second learner asking for the same
  gets it at once.
- `frontier_progress`, `frontier_views`: the KL page's sampled frontier (seed 000 section 6.12),
  and the live runs it is drawn against (`live_runs`).

Every worker-side function is a generator of picklable snapshots, handed to `Cluster.submit`.
"""

from __future__ import annotations

import copy
import html
import itertools
import logging
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import app.jobs.runs
from app.jobs.cluster import (
    POLL_SECONDS,
    Cluster,
    Job,
    Paused,
    Queued,
    Started,
    WorkerDied,
    current,
    job_label,
)
from app.jobs.model_cache import MODELS, ModelCache
from app.jobs.runs import (
    RunWriter,
    eval_record,
    new_run_id,
    read_jsonl,
    run_config,
    step_record,
)
from engines.kl_optimal import SampledFrontier, sampled_frontier
from engines.lm.results import EvalResult, Sample, StepResult
from engines.lm.settings import EMBEDDED, LMFrontierSettings, LMSettings, is_classifier
from engines.snapshots import Failed, Waiting

LOG = logging.getLogger("feedback_lab")
TRAINING_DEVICE = "cpu"
"""Where reward models train: a small transformer on short texts, quicker on the CPU than a GPU round trip."""


# ----------------------------------------------------------------------------- the live run


@dataclass(frozen=True)
class LiveState:
    """A snapshot of one learner's run, as the page draws it."""

    phase: str
    """'loading', 'downloading', 'queued', 'running', 'paused' or 'error'."""
    settings: LMSettings
    message: str = ""
    """The error's sentence (phase 'error'), or why a download waits (phase 'downloading')."""
    position: int | None = None
    """Place in the device's line (phase 'queued'), 1 = next."""
    device: str = ""
    folder: Path | None = None
    """The run folder being written, once the run has started."""
    metrics: tuple[dict, ...] = ()
    """metrics.jsonl's records so far."""
    evals: tuple[dict, ...] = ()
    """eval.jsonl's records so far."""
    eval_results: tuple[EvalResult, ...] = ()
    """The held-out evaluations themselves, every reply (the newest one feeds the worked example)."""
    step: int = 0
    samples: tuple[Sample, ...] = ()
    """The newest step's kept replies."""
    download: tuple[str, int, int] | None = None
    """(hub id, bytes done, bytes in all) while a model or classifier downloads (phase 'downloading')."""
    starts_in: float | None = None
    """Estimated seconds until a waiting run starts (phase 'queued'; None while unknown)."""


def live_snapshots(states: Iterator[LiveState]) -> Iterator[LiveState | Waiting | Failed]:
    """A live run's states as the jobs' snapshots (engines.snapshots): a waiting run's state inside a Waiting that says
    its place in line, an error's inside a Failed with its sentence, each carrying the state for the page to draw."""
    for state in states:
        if state.phase == "queued":
            yield Queued(state.device, state.position).waiting("Your run", state.starts_in, state)
        elif state.phase == "error":
            yield Failed(state.message, state)
        else:
            yield state


@dataclass(frozen=True)
class RunFolder:
    """The worker's first word of a run: the folder it writes and the device it trains on."""

    folder: Path
    device: str

    @property
    def run_id(self) -> str:
        """The folder's name (the cluster lists it as running)."""
        return self.folder.name


def advance(state: LiveState, result: StepResult | EvalResult) -> LiveState:
    """The snapshot after one more result of the engine."""
    if isinstance(result, StepResult):
        return replace(state, phase="running", metrics=state.metrics + (step_record(result),), step=result.step, samples=result.samples)
    return replace(state, phase="running", evals=state.evals + (eval_record(result),), eval_results=state.eval_results + (result,))


def run_label(settings: LMSettings) -> str:
    """A run as the device queue shows it."""
    return f"{settings.model} · {settings.reward} · β {settings.beta:g} · {settings.steps} steps"


def run_steps(key: str) -> int | None:
    """The training steps of the live run whose job's task key is `key` (read from its run_label), None for other jobs."""
    found = re.search(r" · β [^·]+ · (\d+) steps$", job_label(key))
    return int(found.group(1)) if found else None


def new_run_folder(root: Path, settings: LMSettings) -> Path:
    """A fresh folder root/ID (ID from new_run_id, with -2, -3, ... if two runs start in one second)."""
    base = new_run_id(settings)
    for n in itertools.count(1):
        folder = root / (base if n == 1 else f"{base}-{n}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue


def train_on_worker(settings: LMSettings, runs_dir: str, sources: dict[str, str], key: str | None = None) -> Iterator:
    """On the worker: RunFolder, then every StepResult and EvalResult, each written to the run folder first.

    `settings.device` is the device the cluster chose ('cpu', 'cuda', 'mps'). The models are
    loaded once per worker process (from `sources`: the name, or the folder a download went to);
    the run trains copies. On the CPU it computes on one thread: the worker's runs take turns
    for its cores (app.jobs.cluster.COMPUTE_TURNS), and with one thread a run's numbers depend on its
    settings alone, which is what lets a class share it (app/jobs/shared_runs.py; `key` is its name
    there, written to config.json). Closing this generator (a stop) closes the files after the step done.
    """
    import torch

    from engines.lm.frozen_trunk import trainable_copy
    from engines.lm.models import resolve_device
    from engines.lm.reinforce import LMRun

    device = resolve_device(settings.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    policy, tokenizer = MODELS.model(settings.model, device, sources["model"])
    reward = MODELS.reward(settings.reward, device, sources["reward"])
    lm = LMRun(settings, policy=trainable_copy(policy, settings.trained_blocks), tokenizer=copy.deepcopy(tokenizer),
               reward=copy.deepcopy(reward))
    folder = new_run_folder(Path(runs_dir), settings)
    yield RunFolder(folder, str(device))
    with RunWriter(folder, run_config(settings, lm) | {"run_key": key}) as writer:
        for result in lm.steps():
            writer.write(result)
            yield result


def warm_up_on_worker(model: str) -> Iterator:
    """On the worker: load `model` and VADER onto the job's device, so that a class's first run starts without
    waiting for torch, transformers and the weights to load (two to three seconds on a CPU)."""
    from engines.lm.models import resolve_device

    device = resolve_device("auto")
    MODELS.model(model, device)
    MODELS.reward("vader", device)
    yield str(device)


def warm_up(model: str, cluster: Cluster | None = None) -> threading.Thread:
    """Load `model` (a model on this machine) on one worker of every device, on a thread of this process."""
    cluster = cluster or current()

    def each_device() -> None:
        for device in cluster.devices():
            try:
                for _ in cluster.submit(device, f"loading {model}", warm_up_on_worker, model).snapshots():
                    pass
            except Exception:  # the first run loads it instead: nothing is lost but its seconds
                LOG.warning("Loading %s on the %s ahead of the first run failed", model, device, exc_info=True)

    thread = threading.Thread(target=each_device, name="feedback-lab-warm-up", daemon=True)
    thread.start()
    return thread


class LiveRun:
    """One learner's live run, from the settings to its end: `states()` is walked by the page's StreamingRun.

    `download_problem(download)` is the server's word on a model the run would download (one sentence if there is
    no room for it, app.serving.offered.download_problem); without it nothing is checked, as for the embedded model.
    """

    def __init__(self, settings: LMSettings, runs_dir: Path, cluster: Cluster | None = None, key: str | None = None,
                 download_problem: Callable[[object], str] | None = None):
        self.settings, self.runs_dir, self.key = settings, Path(runs_dir), key
        self.download_problem = download_problem
        self.cluster = cluster or current()
        self.job: Job | None = None
        self._stopped = False

    def pause(self) -> None:
        if self.job is not None:
            self.job.pause()

    def resume(self) -> None:
        if self.job is not None:
            self.job.resume()

    def stop(self) -> None:
        """Stop after the step in flight (a waiting run leaves the line); any thread may call it."""
        self._stopped = True
        if self.job is not None:
            self.job.stop()

    def downloads(self) -> list[tuple]:
        """(what, engines.lm.models.Download or None) for the model and the reward: only hub ids not yet cached download."""
        from engines.lm.models import download_size

        return [(what, download_size(name, kind) if kind else None) for what, name, kind in model_files(self.settings)]

    def states(self) -> Iterator[LiveState]:
        """Download, submit, wait for the device, train: a LiveState after every change."""
        from engines.lm.models import ModelNotAvailable

        settings = self.settings
        state = LiveState("loading", settings)
        try:
            device = self.cluster.device_for(settings.device)
            state = replace(state, device=device)
            yield state
            sources = {"model": settings.model, "reward": settings.reward}
            for what, download in self.downloads():
                if download is not None:
                    sources[what] = yield from fetching(state, download, self.download_problem)
                    yield state
        except (ModelNotAvailable, ValueError, OSError, RuntimeError) as error:
            yield replace(state, phase="error", message=str(error))
            return
        if self._stopped:
            return
        self.job = self.cluster.submit(device, run_label(settings), train_on_worker, replace(settings, device=device),
                                       str(self.runs_dir), sources, self.key)
        try:
            for snapshot in self.job.snapshots(idle=True):
                if snapshot is None:
                    pass  # the step computes: the same state again, so the page's stream hands over what it held back
                elif isinstance(snapshot, Queued):
                    state = replace(state, phase="queued", position=snapshot.position)
                elif isinstance(snapshot, Started):
                    state = replace(state, phase="loading")
                elif isinstance(snapshot, RunFolder):
                    state = replace(state, phase="running", folder=snapshot.folder, device=snapshot.device)
                elif isinstance(snapshot, Paused):
                    state = replace(state, phase="paused")
                else:
                    state = advance(state, snapshot)
                yield state
        except WorkerDied as error:
            if state.folder is None:
                yield replace(state, phase="error", message=f"{error} before the run started.")
                return
            # The folder may hold one step more than was shown: the worker writes a step before it sends it.
            written = read_jsonl(state.folder / "metrics.jsonl")
            step = written[-1]["step"] if written else 0
            yield replace(state, phase="error",
                          message=f"{error}: the run stopped at step {step}; the run {state.folder.name} holds every step done.")
        except (ModelNotAvailable, ValueError, OSError, RuntimeError) as error:  # e.g. out of memory: the files keep the steps done
            yield replace(state, phase="error", message=str(error) if state.folder is None else f"The run stopped: {error}")


def model_files(settings) -> list[tuple[str, str, str]]:
    """(what, name, kind) of the model and the reward of `settings`; kind is '' for a reward that reads no model files
    (VADER, a saved reward model), else 'model' or 'reward classifier'."""
    return [("model", settings.model, "model"), ("reward", settings.reward, "reward classifier" if is_classifier(settings.reward) else "")]


ONE_DOWNLOAD = threading.Lock()
"""Held while a download runs: one at a time per server, so that two downloads never pass the disk check together."""


def fetching(state: LiveState, download, download_problem: Callable[[object], str] | None) -> Iterator[LiveState]:
    """Wait for the server's other download, check the room for this one (`download_problem`), download it on a helper
    thread, yielding its progress every POLL_SECONDS seconds; returns the folder.

    A Stop closes this generator at a yield: the helper thread is told to stop, the hub client's
    threads end at their next piece received and the lock is released; the files fully fetched stay
    in this machine's Hugging Face cache (which the local cluster's workers share).
    """
    from engines.lm.models import ModelNotAvailable, fetch

    waiting = replace(state, phase="downloading", download=(download.name, 0, download.size),
                      message="Another download on this server comes first; this one starts when it ends.")
    while not ONE_DOWNLOAD.acquire(timeout=POLL_SECONDS):
        yield waiting
    done, outcome, stopped = [0], {}, threading.Event()

    def work():
        try:
            outcome["folder"] = fetch(download, progress=lambda n, _total: done.__setitem__(0, n), stopped=stopped)
        except ModelNotAvailable as error:
            outcome["error"] = error
        finally:
            ONE_DOWNLOAD.release()

    try:
        problem = download_problem(download) if download_problem is not None else ""
    except BaseException:
        ONE_DOWNLOAD.release()
        raise
    if problem:
        ONE_DOWNLOAD.release()
        raise ModelNotAvailable(problem)
    worker = threading.Thread(target=work, daemon=True, name=f"feedback-lab-download-{download.name}")
    worker.start()
    try:
        while worker.is_alive():
            yield replace(state, phase="downloading", download=(download.name, done[0], download.size))
            worker.join(POLL_SECONDS)
    finally:
        stopped.set()  # closed at a yield (a Stop, a closed tab): the download ends too
    if "error" in outcome:
        raise outcome["error"]
    return outcome["folder"]


# ----------------------------------------------------------------------------- the reward-model page's jobs


@dataclass(frozen=True, eq=False)
class TrainingView:
    """The live curves of one reward-model training so far."""

    pairs: object
    """The PreferencePairs trained on (None as sent by the worker: the page has them)."""
    settings: object
    """The RewardModelSettings."""
    curve: dict
    """Columns step, loss, accuracy."""
    acc_star: float
    """Acc* of the held-out pairs."""
    progress: float
    trained: object = None
    """The TrainedRewardModel, with the last view."""
    probe: tuple = ()
    """The probe rows (dicts), with the trained model."""


@dataclass(frozen=True, eq=False)
class SweepView:
    """The tau_label stretch so far: one row per finished tau_label."""

    pairs: object
    rows: tuple
    """TauSweepRow per finished tau_label."""
    progress: float

    def columns(self) -> dict:
        """Per finished tau_label: the held-out accuracy with its ± 1 SE band, Acc*, and the readings against g."""
        e = [r.evaluation for r in self.rows]
        acc = np.array([x.heldout_accuracy for x in e])
        se = np.array([x.heldout_se for x in e])
        return {
            "tau_label": [r.tau_label for r in self.rows], "accuracy": acc, "low": acc - se, "high": acc + se,
            "acc_star": [x.acc_star for x in e], "gold_order_accuracy": [x.gold_order_accuracy for x in e],
            "spearman": [x.spearman for x in e],
        }


def pairs_key(settings) -> tuple:
    """What a generated pair set is kept under: the settings that make its responses."""
    return ("pairs", settings.pairs, settings.seed)


def sample_pairs_on_worker(settings) -> Iterator:
    """On the worker: `iter_make_pairs`'s PairProgress reports with the embedded model on the job's device."""
    from engines.lm.models import resolve_device
    from engines.lm.preferences import iter_make_pairs

    policy, tokenizer = MODELS.model(EMBEDDED, resolve_device("auto"))
    yield from iter_make_pairs(settings, policy, tokenizer)


def generate_pairs(settings, cluster: Cluster | None = None, models: ModelCache = MODELS) -> Iterator:
    """The responses of `settings`: the bundled set (BUNDLED_PAIRS), one the server kept, or sampled on the cluster.

    Sampling waits for its device (Waiting snapshots), then yields PairProgress reports and the
    server keeps the result; Failed with one sentence if the model cannot be loaded.
    """
    from engines.lm.models import ModelNotAvailable
    from engines.lm.preferences import BUNDLED_PAIRS, PairSettings, load_pairs

    key = pairs_key(settings)
    if key == pairs_key(PairSettings()) and BUNDLED_PAIRS.is_file():
        yield models.get(key, lambda: load_pairs(BUNDLED_PAIRS))
        return
    kept = models.result(key)
    if kept is not None:
        yield kept
        return
    cluster = cluster or current()
    try:
        job = cluster.submit(cluster.device_for("auto"), f"reward models · {settings.pairs} pairs", sample_pairs_on_worker, settings)
        for progress in job.snapshots():
            if isinstance(progress, Started):
                continue
            if isinstance(progress, Queued):
                yield progress.waiting("Sampling the pairs")
                continue
            if getattr(progress, "pairs", None) is not None:
                models.keep(key, progress.pairs)
            yield progress
    except (ModelNotAvailable, ValueError, OSError, WorkerDied) as error:
        yield Failed(f"The pairs could not be generated: {error}")


def training_views(pairs, settings) -> Iterator[TrainingView]:
    """On the worker: `iter_train_reward_model`'s reports as points of the curves (the pairs left out); the probe at the end."""
    import numpy as np

    from engines.lm.reward_model import iter_train_reward_model, probe_rows

    steps, loss, accuracy = [], [], []
    for report in iter_train_reward_model(pairs, settings):
        steps.append(report.step)
        loss.append(report.loss)
        accuracy.append(report.heldout_accuracy)
        curve = {"step": np.array(steps), "loss": np.array(loss), "accuracy": np.array(accuracy)}
        probe = tuple(probe_rows(report.trained)) if report.trained is not None else ()
        yield TrainingView(None, settings, curve, report.acc_star, report.step / report.steps, report.trained, probe)


def train_reward_model(pairs, settings, key: tuple | None, cluster: Cluster | None = None,
                       models: ModelCache = MODELS) -> Iterator:
    """`training_views` on the cluster's CPU, each with `pairs`; the finished view is kept under `key` (unless None).

    A learner who waited in line behind another's training of the same pairs and settings
    gets that one's result when the turn comes instead of training it again.
    """
    cluster = cluster or current()
    job = cluster.submit(TRAINING_DEVICE, f"reward models · training {settings.steps} steps", training_views, pairs, settings)
    step = 0
    try:
        for view in job.snapshots():
            # Trained by another session while this one waited (or is just starting): take that one instead.
            kept = None if key is None or isinstance(view, Queued) else models.result(key)
            if kept is not None:
                job.stop()
                yield replace(kept, pairs=pairs)
                return
            if isinstance(view, Started):
                continue
            if isinstance(view, Queued):
                yield view.waiting("The training")
                continue
            if isinstance(view, TrainingView):
                view = replace(view, pairs=pairs)
                step = int(view.curve["step"][-1])
                if key is not None and view.trained is not None:
                    models.keep(key, view)
            yield view
    except WorkerDied as error:
        yield Failed(f"{error}: the training stopped at step {step} of {settings.steps}; press Start to train it again.")


def sweep_on_worker(pairs, taus, settings, label_seed: int) -> Iterator[SweepView]:
    """On the worker: relabel at each tau_label and retrain, reported after every training report (Stop acts within one)."""
    from engines.lm.preferences import relabel
    from engines.lm.reward_model import TauSweepRow, iter_train_reward_model

    rows = []
    for i, tau in enumerate(taus):
        for report in iter_train_reward_model(relabel(pairs, float(tau), label_seed), settings):
            yield SweepView(None, tuple(rows), (i + report.step / report.steps) / len(taus))
        rows.append(TauSweepRow(tau_label=float(tau), evaluation=report.trained.evaluation))
    yield SweepView(None, tuple(rows), 1.0)


def sweep_tau(pairs, taus, settings, label_seed: int, cluster: Cluster | None = None) -> Iterator:
    """`sweep_on_worker` on the cluster's CPU, each view with `pairs`."""
    cluster = cluster or current()
    label = f"reward models · τ_label sweep, {len(taus)} trainings"
    finished = 0
    try:
        for view in cluster.submit(TRAINING_DEVICE, label, sweep_on_worker, pairs, tuple(taus), settings, label_seed).snapshots():
            if isinstance(view, SweepView):
                finished = len(view.rows)
                yield replace(view, pairs=pairs)
            elif isinstance(view, Queued):
                yield view.waiting("The sweep")
    except WorkerDied as error:
        yield Failed(f"{error}: the sweep stopped after {finished} of {len(taus)} trainings; press Start to sweep again.")


# ----------------------------------------------------------------------------- the KL page's sampled frontier


def frontier_on_worker(settings) -> Iterator:
    """On the worker: engines.lm.frontier's FrontierProgress per batch of prompts, the models loaded once per worker."""
    from engines.lm.frontier import LMFrontier
    from engines.lm.models import ModelNotAvailable, is_local, resolve_device

    for _, name, kind in model_files(settings):
        if kind and not is_local(name):  # a download belongs to a live run, with its progress, bound and checks
            raise ModelNotAvailable(f"The {kind} '{name}' is not on this machine yet: a live run of it downloads it, "
                                    "then its frontier can be sampled.")
    device = resolve_device(settings.device)
    model, tokenizer = MODELS.model(settings.model, device)
    reward = MODELS.reward(settings.reward, device)
    yield from LMFrontier(settings, model=model, tokenizer=tokenizer, reward=reward).steps()


def frontier_progress(settings, cluster: Cluster | None = None) -> Iterator:
    """Queued while the sampling waits for its device, then FrontierProgress per batch (errors raise, in one sentence)."""
    cluster = cluster or current()
    device = cluster.device_for(settings.device)
    label = f"KL page · frontier, {settings.prompts} prompts × {settings.samples} replies"
    for progress in cluster.submit(device, label, frontier_on_worker, replace(settings, device=device)).snapshots():
        if not isinstance(progress, Started):
            yield progress


FRONTIER_DEFAULTS = LMFrontierSettings()
"""The sampled frontier's defaults: the live run's model, reward and replies, M prompts, m replies, the seed."""
SOURCE_KEYS = ("model", "reward", "T", "prompt_tokens", "prompt_set")
"""The run settings a frontier depends on: runs that share them are drawn over the same frontier."""
LM_SOURCE = {key: getattr(FRONTIER_DEFAULTS, key) for key in SOURCE_KEYS}
"""The default source: the live run's default model, reward and replies."""
LM_BETAS = np.geomspace(1e-3, 1e3, 301)
"""The beta sweep of the sampled frontier: from pi* on the best sample (KL near log m) to the reference (KL near 0)."""


def run_source(run) -> dict:
    """What a run's frontier depends on, from its config.json (defaults for settings an older run lacks)."""
    settings = run.config.get("settings", {})
    return {key: settings.get(key, LM_SOURCE[key]) for key in SOURCE_KEYS}


def live_runs(root: Path | str | None = None):
    """The run folders under `root` (default: the live-run page's) that have held-out evaluations, oldest first."""
    return [run for run in app.jobs.runs.list_runs(app.jobs.runs.RUNS_DIR if root is None else root)
            if any("kl_exact" in e for e in run.evals)]


@dataclass(frozen=True)
class FrontierView:
    """What the sampled-frontier worker reports: progress, the frontier so far, or a failure."""

    done: int = 0
    """Prompts sampled and scored."""
    total: int = 0
    """Prompts asked for."""
    samples: int = 0
    """Replies m per prompt."""
    seconds: float = 0.0
    """Seconds spent sampling and scoring."""
    frontier: SampledFrontier | None = None
    """The frontier of the prompts done, or None while loading."""
    best_reply: str = ""
    """The best sample for the first prompt (pi* as beta -> 0), with its prompt."""


def frontier_views(source: dict, prompts: int, samples: int, seed: int, cluster: Cluster | None = None) -> Iterator:
    """Wait for the device on the cluster (Waiting snapshots), then sample and score there (the worker loads the
    model and the reward once): a FrontierView per batch, or Failed with one sentence. Torch is never imported in
    this process. Whether the server offers the source's model and reward is its caller's to check."""
    yield FrontierView(total=prompts, samples=samples)
    try:
        settings = LMFrontierSettings(prompts=prompts, samples=samples, seed=seed, **source)
        for progress in frontier_progress(settings, cluster):
            if isinstance(progress, Queued):
                yield progress.waiting("The sampling")
                continue
            yield FrontierView(
                done=len(progress.prompts), total=prompts, samples=samples, seconds=progress.seconds,
                frontier=sampled_frontier(progress.rewards, LM_BETAS),
                best_reply=f"{html.escape(progress.prompts[0])}<b>{html.escape(progress.best_replies[0])}</b>",
            )
    except (ValueError, OSError, RuntimeError) as error:  # a model that cannot be loaded (ModelNotAvailable), a dead worker
        yield Failed(str(error))
