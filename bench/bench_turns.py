"""Several live runs in one worker process: all computing at once, or taking turns for the cores.

    python -m bench.bench_turns [--runs 6] [--steps 8]

A worker runs a class's distinct live runs on its threads, one torch thread each. This trains
`--runs` REINFORCE runs of the embedded model (the seed's batch, 16 x 4 x 24) side by side in
threads of this process, twice: every run stepping whenever it likes, then with
app.jobs.cluster.COMPUTE_TURNS's rule (as many steps computed at once as the process has cores, the
other runs waiting between their steps, first come first served); and, for the ceiling, as many
runs as cores alone. It prints the steps per second of all the runs together, each way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time

import torch

from app.jobs.cluster import TakeTurns
from engines.lm.models import transformers_classes
from engines.lm.reinforce import LMRun
from engines.lm.settings import LMSettings


def steps_per_second(runs: int, steps: int, turns) -> float:
    """All runs' training steps a second, `runs` runs stepping in threads, each step taken inside `turns()`."""
    started = [LMRun(LMSettings(steps=steps, seed=i, device="cpu", eval_every=10_000, eval_prompts=1, eval_replies=1)).steps()
               for i in range(runs)]
    for run in started:
        next(run)  # the evaluation at step 0
    ready = threading.Barrier(runs + 1)

    def train(run) -> None:
        ready.wait()
        for _ in range(steps):
            with turns():
                next(run)

    threads = [threading.Thread(target=train, args=(run,)) for run in started]
    for t in threads:
        t.start()
    ready.wait()
    begun = time.perf_counter()
    for t in threads:
        t.join()
    return runs * steps / (time.perf_counter() - begun)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="runs side by side (default: 6)")
    parser.add_argument("--steps", type=int, default=8, help="timed steps of each run (default: 8)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    transformers_classes("AutoModelForCausalLM")  # imported before the threads start
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    shared = TakeTurns(cores)
    free = steps_per_second(args.runs, args.steps, contextlib.nullcontext)
    taking_turns = steps_per_second(args.runs, args.steps, lambda: shared)
    alone = steps_per_second(cores, args.steps, contextlib.nullcontext)
    print(f"{args.runs} runs, {args.steps} steps each, one torch thread each, {cores} cores:")
    print(f"  all computing at once:      {free:.2f} steps/s in all")
    print(f"  taking turns for the cores: {taking_turns:.2f} steps/s in all ({taking_turns / free:.2f}x)")
    print(f"  {cores} runs alone:              {alone:.2f} steps/s in all")


if __name__ == "__main__":
    main()
