"""Run folders of the live REINFORCE run: `runs/ID/` with config.json and three JSON-lines files.

    config.json     the settings, the learning rate and device in force, the model's size
    metrics.jsonl   one line per training step: step, reward, p_positive, kl, entropy, grad_norm, loss, step_time,
                    time (Unix seconds when it was written)
                    (and gold, the mean gold score g, when the reward is a learned reward model)
    samples.jsonl   one line per training step: step and the newest replies with per-token log-ratios
    eval.jsonl      one line per held-out evaluation: step, reward, p_positive, kl_exact, kl, entropy,
                    ref_perplexity, distinct_1, distinct_2, a few replies and the worked example of reply 0
                    (and gold, as in metrics.jsonl)

Every line is flushed as soon as it is written, so a crash or a killed server loses at most
the step in flight; readers skip a last line cut short by such a stop.

Run folders go under runs/ (relative to the working folder), or under the folder named by the
environment variable FEEDBACK_LAB_RUNS (tests point it at a temporary folder).

A lesson (`start_lesson`) sets the runs before it aside: the time of the file `lesson-began` in the runs folder is
when it began, and a Start then trains afresh instead of showing a run that finished before (a rehearsal's), unless
the learner asks to replay one; the earlier runs stay, listed and openable.

`RunsFolder` keeps a runs folder read (re-reading only the runs whose files changed), `runs_frame`
is its table, `zip_runs` its download.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engines.lm.results import EvalResult, Sample, StepResult, worked_example
from engines.lm.settings import REWARD_PREFIX, LMSettings

RUNS_VARIABLE = "FEEDBACK_LAB_RUNS"
RUNS_DIR = Path(os.environ.get(RUNS_VARIABLE) or "runs")
"""Where new run folders go: $FEEDBACK_LAB_RUNS if set, else runs/."""
FILES = ("metrics.jsonl", "samples.jsonl", "eval.jsonl")
EVAL_SAMPLES = 8
"""Held-out replies written to each eval.jsonl line."""
REWARD_MODELS = "reward-models"
"""Subfolder of the runs folder where the reward-models page saves reward models (`reward-model:PATH` rewards)."""
PAIRS_FOLDER = "pairs"
"""Subfolder of the runs folder where the reward-models page saves and finds pairs files."""


def new_run_id(settings: LMSettings) -> str:
    """A sortable, readable folder name: time, model, reward, beta, advantage."""
    name = Path(settings.model).name or settings.model
    model = "".join(c if c.isprintable() and c != "/" else "-" for c in name)  # one folder name, whatever the model's
    reward = settings.reward.replace("/", "-")
    if settings.reward.startswith(REWARD_PREFIX):
        reward = "rm-" + Path(settings.reward[len(REWARD_PREFIX):]).stem  # the model file's name, not its whole path
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{model}-{reward}-beta{settings.beta:g}-{settings.advantage}"


def step_record(result: StepResult) -> dict:
    """The metrics.jsonl line of a step, stamped with the time it was written."""
    record = {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "samples"}
    if record["gold"] is None:
        del record["gold"]  # only a learned reward model has a gold score beside it
    return record | {"time": round(time.time(), 3)}


def wall_pace(records: list[dict]) -> float | None:
    """Seconds a step of wall-clock time over `records` (metrics lines, oldest first): its evaluations and its waits
    for a turn of the cores included, which `step_time` (the step's own computation) leaves out. None with fewer than
    two stamped steps."""
    stamped = [r for r in records if isinstance(r.get("time"), (int, float))]
    if len(stamped) < 2 or stamped[-1]["step"] == stamped[0]["step"]:
        return None
    return (stamped[-1]["time"] - stamped[0]["time"]) / (stamped[-1]["step"] - stamped[0]["step"])


def samples_record(result: StepResult) -> dict:
    """The samples.jsonl line of a step."""
    return {"step": result.step, "samples": [dataclasses.asdict(s) for s in result.samples]}


def eval_record(result: EvalResult) -> dict:
    """The eval.jsonl line of an evaluation: the `[eval]` numbers, a few replies, the worked example."""
    ex = worked_example(result, 0)
    keys = ("step", "reward", "p_positive", "kl_exact", "kl", "entropy", "ref_perplexity", "distinct_1", "distinct_2")
    gold = {} if result.gold is None else {"gold": result.gold}
    return {k: getattr(result, k) for k in keys} | gold | {
        "samples": [{"prompt": p, "reply": y} for p, y in zip(result.prompts[:EVAL_SAMPLES], result.replies[:EVAL_SAMPLES])],
        "worked_example": {
            "prompt": ex.prompt, "R": ex.R, "beta": ex.beta, "tokens": list(ex.tokens),
            **{k: getattr(ex, k).tolist() for k in ("logp", "ref_logp", "log_ratio", "r", "G")},
        },
    }


def sample_from_record(record: dict) -> Sample:
    """A reply of a samples.jsonl line, as the run yielded it."""
    return Sample(record["prompt"], tuple(record["tokens"]), tuple(record["log_ratio"]), record["reward"])


def eval_result_from_record(record: dict) -> EvalResult:
    """An eval.jsonl line as an EvalResult of the one reply it keeps token by token (its worked example's, reply 0):
    the evaluation's numbers are the run's; its replies, the worked example's alone."""
    ex = record["worked_example"]
    keys = ("step", "reward", "p_positive", "kl_exact", "kl", "entropy", "ref_perplexity", "distinct_1", "distinct_2")
    reply = record["samples"][0]["reply"] if record.get("samples") else "".join(ex["tokens"])
    return EvalResult(
        **{k: record[k] for k in keys}, beta=ex["beta"], gold=record.get("gold"),
        prompts=(ex["prompt"],), replies=(reply,), tokens=(tuple(ex["tokens"]),),
        logp=np.array([ex["logp"]]), ref_logp=np.array([ex["ref_logp"]]), R=np.array([ex["R"]]),  # (1, T), (1, T), (1,)
    )


class RunWriter:
    """Writes one run folder: config.json at once, then a line per result, flushed every time."""

    def __init__(self, folder: Path | str, config: dict):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        self.files = {name: open(self.folder / name, "a", encoding="utf-8") for name in FILES}

    def _append(self, name: str, record: dict) -> None:
        handle = self.files[name]
        handle.write(json.dumps(record) + "\n")
        handle.flush()

    def write(self, result: StepResult | EvalResult) -> None:
        if isinstance(result, StepResult):
            self._append("metrics.jsonl", step_record(result))
            self._append("samples.jsonl", samples_record(result))
        else:
            self._append("eval.jsonl", eval_record(result))

    def close(self) -> None:
        for handle in self.files.values():
            handle.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_jsonl(path: Path | str) -> list[dict]:
    """Every complete line of a JSON-lines file that is a record with a step; a missing or unreadable file is
    empty, a cut-short or garbled line is skipped."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # missing, or not a file
        return []
    records = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a stop in mid-write leaves one, as the last line; a damaged file leaves more
        if isinstance(record, dict) and isinstance(record.get("step"), int) and not isinstance(record["step"], bool):
            records.append(record)
    return records


LESSON_FILE = "lesson-began"
"""In a runs folder: the file whose time is when its current lesson began."""


def start_lesson(runs_dir: Path | str) -> float:
    """Begin a new lesson in `runs_dir` now and return when (Unix seconds): the runs before it are set aside, not deleted."""
    root = Path(runs_dir)
    root.mkdir(parents=True, exist_ok=True)
    written = root / f".{LESSON_FILE}.{os.getpid()}"
    written.write_text(f"A lesson began at {time.strftime('%Y-%m-%d %H:%M:%S')}.\n", encoding="utf-8")
    written.replace(root / LESSON_FILE)  # at once for every web process: none reads half a file
    return lesson_began(root)


def lesson_began(runs_dir: Path | str) -> float | None:
    """When the current lesson of `runs_dir` began, or None where none was started: its file's time, from the same
    clock as the runs' (`started_at`)."""
    try:
        return (Path(runs_dir) / LESSON_FILE).stat().st_mtime
    except OSError:
        return None


def started_at(folder: Path | str) -> float:
    """When a run folder's run started: its config.json, written once at the start (0 if it has none)."""
    try:
        return (Path(folder) / "config.json").stat().st_mtime
    except OSError:
        return 0.0


def read_config(path: Path | str) -> dict:
    """config.json as a dict whose "settings", if any, is a dict; an unreadable or garbled file reads as {}."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(config, dict) or not isinstance(config.get("settings", {}), dict):
        return {}
    return config


@dataclass(frozen=True)
class Run:
    """One run folder read back."""

    id: str
    """The folder's name."""
    folder: Path
    config: dict
    metrics: list[dict]
    samples: list[dict]
    evals: list[dict]

    @property
    def label(self) -> str:
        """The run as a legend names it: its folder's name, its β and its advantage."""
        s = self.config.get("settings", {})
        return f"{self.id} (β {s.get('beta', '?')}, {s.get('advantage', LMSettings.advantage)})"

    @property
    def finished(self) -> bool:
        """True when every step asked for was written (never for a run whose config.json is unreadable)."""
        steps = self.config.get("settings", {}).get("steps")
        return bool(self.metrics) and isinstance(steps, int) and self.metrics[-1]["step"] >= steps


def read_run(folder: Path | str) -> Run:
    """Read a run folder (complete, cut short or damaged: what cannot be read is left out)."""
    folder = Path(folder)
    config = read_config(folder / "config.json")
    metrics, samples, evals = (read_jsonl(folder / name) for name in FILES)
    return Run(id=folder.name, folder=folder, config=config, metrics=metrics, samples=samples, evals=evals)


def list_runs(root: Path | str = RUNS_DIR) -> list[Run]:
    """Every run folder under `root` (those with a config.json), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    return [read_run(f) for f in sorted(root.iterdir()) if (f / "config.json").is_file()]


def learned_rewards(root: Path | str | None = None) -> list[str]:
    """'reward-model:PATH' for every reward model saved under ROOT/reward-models (ROOT: the runs folder), by name."""
    folder = Path(RUNS_DIR if root is None else root) / REWARD_MODELS
    return [f"{REWARD_PREFIX}{path}" for path in sorted(folder.glob("*.pt"))] if folder.is_dir() else []


def is_learned(reward: str) -> bool:
    """True for a saved reward model ('reward-model:PATH'), the reward that has a gold score beside it."""
    return reward.startswith(REWARD_PREFIX)


def run_status(run: Run, running: set[str]) -> str:
    """finished (every step written), running (training now in this server), or interrupted."""
    if run.id in running:
        return "running"
    return "finished" if run.finished else "interrupted"


def runs_frame(runs: list[Run], running: set[str], watchers: dict[str, int] | None = None) -> pd.DataFrame:
    """The table of run folders (their names give time, model, reward and beta): how far each got, how many
    learners watch it (`watchers`, by run id), its last held-out evaluation."""
    rows, watchers = [], watchers or {}
    for run in runs:
        s, last = run.config.get("settings", {}), (run.evals[-1] if run.evals else {})
        rows.append({
            "run": run.id,
            "status": run_status(run, running),
            "learners": watchers.get(run.id, 0),
            "β": s.get("beta", math.nan),
            "advantage": s.get("advantage", LMSettings.advantage),
            "steps": f"{run.metrics[-1]['step'] if run.metrics else 0} / {s.get('steps', '?')}",
            "reward": round(last.get("reward", math.nan), 2),
            "P(positive)": round(last.get("p_positive", math.nan), 3),
            "KL": round(last.get("kl_exact", math.nan), 2),
            "distinct-1": round(last.get("distinct_1", math.nan), 3),
            "gold": round(last.get("gold", math.nan), 2),
        })
    columns = ["run", "status", "learners", "β", "advantage", "steps", "reward", "P(positive)", "KL", "distinct-1", "gold"]
    return pd.DataFrame(rows, columns=columns)


def columns_of(records: list[dict], keys: tuple[str, ...]) -> dict[str, list]:
    """Records as plot columns; a key a record lacks (gold, without a learned reward) is NaN there."""
    return {k: [r.get(k, math.nan) for r in records] for k in keys}


def overlay_columns(runs: list[Run]) -> tuple[dict, dict]:
    """Runs drawn over the curves, one list per run: their training steps' columns, and their held-out evaluations'
    (with the exact KL as `kl_xs`, for the reward over the KL)."""
    steps = {"xs": [[m["step"] for m in r.metrics] for r in runs]}
    steps |= {k: [columns_of(r.metrics, (k,))[k] for r in runs] for k in ("reward", "p_positive", "kl", "entropy", "gold")}
    evals = {"xs": [[e["step"] for e in r.evals] for r in runs], "kl_xs": [[e["kl_exact"] for e in r.evals] for r in runs]}
    evals |= {k: [columns_of(r.evals, (k,))[k] for r in runs] for k in ("distinct_1", "distinct_2", "reward", "gold")}
    return steps, evals


def zip_runs(folders: list[Path]) -> io.BytesIO:
    """The run folders' files in one zip, a folder per run."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in folders:
            for name in ("config.json", *FILES):
                if (folder / name).is_file():
                    archive.write(folder / name, f"{folder.name}/{name}")
    buffer.seek(0)
    return buffer


class RunsFolder:
    """The runs of one runs folder, read again on `refresh` only where a file changed (size or time)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._read: dict[str, tuple[tuple, Run]] = {}

    def refresh(self) -> None:
        """Read the folder again: new runs, and the runs whose files changed since the last read."""
        found = {}
        if self.root.is_dir():
            for folder in sorted(self.root.iterdir()):
                if not (folder / "config.json").is_file():
                    continue
                stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None
                              for p in (folder / n for n in ("config.json", *FILES)))
                cached = self._read.get(folder.name)
                found[folder.name] = cached if cached is not None and cached[0] == stamp else (stamp, read_run(folder))
        self._read = found

    def runs(self) -> dict[str, Run]:
        """Run id -> the run as last read, oldest first."""
        return {run_id: run for run_id, (_, run) in self._read.items()}


def run_config(settings: LMSettings, lm) -> dict:
    """config.json of a run (`lm` an engines.lm.reinforce.LMRun): its settings and what it ran on."""
    return {
        "settings": dataclasses.asdict(settings), "learning_rate": settings.learning_rate,
        "device": str(lm.device), "parameters": lm.parameters, "vocabulary": len(lm.tokenizer),
    }


def safe_name(text: str) -> str:
    """Letters, digits, '.', '-' and '_' only: a file name that cannot leave its folder."""
    return "".join(c if c.isalnum() or c in ".-_" else "-" for c in text)


def pairs_files(root: Path) -> dict[str, str]:
    """File name -> path of every pairs file saved under ROOT/pairs (ROOT: the runs folder), by name."""
    folder = Path(root) / PAIRS_FOLDER
    return {f.name: str(f) for f in sorted(folder.glob("*.npz"))} if folder.is_dir() else {}


def pairs_path(root: Path, pairs) -> Path:
    """Where a set of preference pairs is saved under ROOT/pairs: named by its size, tau_label and label seed."""
    return Path(root) / PAIRS_FOLDER / safe_name(f"pairs-{len(pairs)}-tau{pairs.tau_label:g}-seed{pairs.seed}.npz")


def reward_model_path(root: Path, pairs, seed: int) -> Path:
    """Where a reward model trained on `pairs` with training seed `seed` is saved under ROOT/reward-models, stamped now."""
    name = f"rm-{time.strftime('%Y%m%d-%H%M%S')}-{len(pairs)}pairs-tau{pairs.tau_label:g}-seed{seed}.pt"
    return Path(root) / REWARD_MODELS / safe_name(name)


def write_pairs(root: Path, pairs) -> Path:
    """Save `pairs` (engines.lm.preferences.PreferencePairs) under ROOT/pairs (pairs_path); returns the file."""
    from engines.lm.preferences import save_pairs

    path = pairs_path(root, pairs)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_pairs(pairs, path)
    return path


def read_listed_pairs(root: Path, path) -> object:
    """The pairs of `path`, one of the files pairs_files lists (ValueError with one sentence for any other, or a bad file)."""
    from engines.lm.preferences import load_pairs

    folder = Path(root) / PAIRS_FOLDER
    if Path(path).resolve().parent != folder.resolve():
        raise ValueError(f"Only the pairs files listed, in {folder}, can be loaded.")
    return load_pairs(path)


def write_reward_model(root: Path, trained, pairs, seed: int) -> Path:
    """Save a reward model (engines.lm.reward_model.TrainedRewardModel) trained on `pairs` with training seed `seed`,
    with its normaliser, under ROOT/reward-models (reward_model_path), and read it back; returns the file."""
    # engines.lm.reward_model loads torch: only a page that saves a model needs it.
    from engines.lm.reward_model import load_reward_model, save_reward_model

    path = reward_model_path(root, pairs, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_reward_model(trained, path)
    load_reward_model(path)  # the file just written must read back
    return path
