"""Seconds a step and memory of the packaged model smollm2-135m's live run: its CPU recipe against the levers it was
chosen from, side by side in one process, and the GPU preset's 300 steps.

    python -m bench.bench_smollm2                 # CPU: the memory of runs side by side, then each setting's median step
    python -m bench.bench_smollm2 --cuda          # a CUDA GPU: 300 steps of the GPU preset (the seed's batch, every weight)
    python -m bench.bench_smollm2 --table RUN...  # the held-out figures and replies of finished runs, as docs/models.md has them

Memory: the process's resident set after loading the model once, then after each of `--runs` runs (a worker's:
each a `trainable_copy` of the loaded model) has trained two steps, the growth per run being what one more
learner's distinct run costs a worker. Then each setting trains its own copy of the model from the same start,
`--steps` timed steps after one untimed; the settings take turns step by step, so the machine's load falls on all
alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

import numpy as np
import psutil
import torch

from engines.lm.frozen_trunk import trainable_copy
from engines.lm.models import load_causal_lm
from engines.lm.reinforce import LMRun
from engines.lm.settings import SMOLLM2, LMSettings

LEVERS = ({}, {"trained_blocks": 0}, {"trained_blocks": 4}, {"replies": 4}, {"T": 12}, {"T": 24})
"""The settings timed: the recipe ({}), then the others as changes to it."""


def lever_name(settings: LMSettings, change: dict) -> str:
    trained = f"top {settings.trained_blocks} blocks" if settings.trained_blocks else "every weight"
    return f"{'' if change else 'recipe: '}{trained}, {settings.prompts} x {settings.replies} x {settings.T}"


def mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.0f} MB"


def time_levers(model, tokenizer, steps: int, threads: int) -> None:
    torch.set_num_threads(threads)
    recipe = LMSettings.of_model(SMOLLM2.name, device="cpu", eval_prompts=1, eval_replies=1)
    settings = [(dataclasses.replace(recipe, **change), change) for change in LEVERS]
    runs = {lever_name(s, change): LMRun(s, policy=trainable_copy(model, s.trained_blocks), tokenizer=tokenizer)
            for s, change in settings}
    times = {name: [] for name in runs}
    generators = {name: (np.random.default_rng(0), torch.Generator().manual_seed(0)) for name in runs}
    for step in range(steps + 1):
        for name, run in runs.items():
            started = time.perf_counter()
            run.step(step + 1, *generators[name])
            if step:  # the first step of each warms its caches up
                times[name].append(time.perf_counter() - started)
    print(f"\n{threads} torch thread(s), {steps} timed steps each, median s a step (min - max):")
    for name, ts in times.items():
        run = runs[name]
        print(f"  {name:34s} {statistics.median(ts):5.2f} s  ({min(ts):.2f} - {max(ts):.2f})   "
              f"{run.trained_parameters / 1e6:.1f}M of {run.parameters / 1e6:.1f}M weights trained")


def memory(model, tokenizer, n_runs: int) -> None:
    process = psutil.Process()
    base = process.memory_info().rss
    print(f"\nthe loaded model (a worker's shared copy): resident {mb(base)}")
    recipe = LMSettings.of_model(SMOLLM2.name, device="cpu", eval_prompts=1, eval_replies=1)
    runs, last = [], base
    for k in range(1, n_runs + 1):
        run = LMRun(recipe, policy=trainable_copy(model, recipe.trained_blocks), tokenizer=tokenizer)
        for step in (1, 2):
            run.step(step, np.random.default_rng(step), torch.Generator().manual_seed(step))
        runs.append(run)
        now = process.memory_info().rss
        print(f"  {k} run(s) side by side, each two steps in: resident {mb(now)} (+{mb(now - last)} for this one)")
        last = now
    print(f"  per run: {mb((last - base) / n_runs)} on average")


def gpu_preset(steps: int) -> None:
    settings = LMSettings.of_model(SMOLLM2.name, "cuda", device="cuda", steps=steps, eval_every=steps)
    run = LMRun(settings)
    started, times = time.perf_counter(), []
    for result in run.steps():
        if hasattr(result, "step_time") and result.step > 1:
            times.append(result.step_time)
    torch.cuda.synchronize()
    print(f"{steps} steps of the GPU preset ({settings.prompts} x {settings.replies} x {settings.T}, every weight) on "
          f"{torch.cuda.get_device_name()}: median {statistics.median(times):.3f} s a step, {time.perf_counter() - started:.0f} s "
          f"in all with its evaluations; peak GPU memory {mb(torch.cuda.max_memory_allocated())}")


TABLE_STEPS = (0, 50, 100, 200, 300)
"""The evaluations docs/models.md shows of each run."""


def table(folders: list[Path], replies: int = 3) -> None:
    """Markdown: each run's held-out reward, KL, distinct-1 and -2 at TABLE_STEPS, its median seconds a step and
    `replies` held-out replies (to different prompts) at each of those steps."""
    from app.jobs.runs import read_run

    for folder in folders:
        run = read_run(folder)
        s = run.config["settings"]
        evals = {e["step"]: e for e in run.evals}
        seconds = statistics.median(m["step_time"] for m in run.metrics)
        print(f"\n**beta = {s['beta']:g}** ({s['prompts']} prompts x {s['replies']} replies x {s['T']} tokens, top "
              f"{s['trained_blocks']} blocks, lr {run.config['learning_rate']:g}; median {seconds:.2f} s a step):\n")
        print("| step | reward | KL (nats) | distinct-1 | distinct-2 | three held-out replies |")
        print("|---|---|---|---|---|---|")
        for step in TABLE_STEPS:
            if step in evals:
                e = evals[step]
                shown = [sample["reply"] for sample in e["samples"][::2][:replies]]  # one reply each of the first prompts
                quoted = "<br>".join(f"“{text.strip()}”".replace("|", "\\|") for text in shown)
                print(f"| {step} | {e['reward']:+.2f} | {e['kl']:.1f} | {e['distinct_1']:.3f} | {e['distinct_2']:.3f} | {quoted} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="timed steps of each setting (default: 4)")
    parser.add_argument("--runs", type=int, default=6, help="runs side by side for the memory figures (default: 6)")
    parser.add_argument("--cuda", action="store_true", help="time the GPU preset's 300 steps instead")
    parser.add_argument("--table", type=Path, nargs="+", help="print the figures of these finished runs' folders instead")
    args = parser.parse_args(argv)
    if args.table:
        table(args.table)
        return
    if args.cuda:
        gpu_preset(300)
        return
    model, tokenizer = load_causal_lm(SMOLLM2.name, torch.device("cpu"))
    memory(model, tokenizer, args.runs)  # first: memory the levers' runs freed would hide what a new run costs
    for threads in (2, 1):
        time_levers(model, tokenizer, args.steps, threads)


if __name__ == "__main__":
    main()
