"""The local cluster's scheduler under many small jobs: its resident memory every few hundred jobs.

    python -m bench.scheduler_memory [--jobs 1000] [--every 200] [--warmup 150] [--churn] [--snapshot-bytes 0]
                                     [--argument-bytes 0] [--stop]

Starts the local cluster `feedback-lab serve` starts (app.jobs.cluster: the scheduler in a process of
its own, preloaded with app.jobs.scheduler_upkeep, one CPU worker), runs `--warmup` jobs, then
`--jobs` more, one after another, each a generator of five snapshots (small numbers, or
`--snapshot-bytes` bytes each) read to its end as a page reads a job; with `--argument-bytes`, the job
carries that many bytes, unread, as a reward-model training carries its pairs (the bundled 2,000 pickle
to 3.5 MB); with `--stop`, its snapshots come 0.05 s apart and the job is stopped after the first, as a
reward-model visit's training is when its slider moves or its tab closes. The scheduler's resident
memory (VmRSS) is read before them and after every `--every`, once it has collected and handed its
freed memory back (`gc.collect()`, glibc's `malloc_trim(0)`), with the bytes glibc's heap has in use
(`mallinfo2`) and the memory blocks Python has allocated (`sys.getallocatedblocks()`): growth in
the resident memory that neither of those shows is the allocator's, not objects kept.
The scheduler drops a finished job's span two minutes after it ended; here that grace is 2 s, so
that a reading counts what stays after the spans are gone.

With `--churn`, the scheduler first interns and frees a million strings: the table of interned
strings grows to the size it settles at under churn (bench/interned_strings.py), and a step in
the readings without `--churn` that is missing with it is that table's one doubling.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import cloudpickle

from bench.interned_strings import glibc_in_use_kb, returned_mb

CHURNED_STRINGS = 1_000_000
STOPPED_SNAPSHOT_SECONDS = 0.05
"""With `--stop`: seconds between a job's snapshots, so that the stop lands while it runs."""


def five_snapshots(size: int, argument: bytes = b"", seconds: float = 0.0):
    """A job: five snapshots `seconds` apart: 0 to 4, or `size` bytes each. `argument` rides along unread."""
    for i in range(5):
        time.sleep(seconds)
        yield bytes(size) if size else i


def heap_reading() -> tuple[float, float, int]:
    """Run on the scheduler: its resident MB once collected and trimmed, the kB glibc's heap has in use, and Python's
    allocated blocks."""
    return returned_mb(), glibc_in_use_kb(), sys.getallocatedblocks()


def churn_interned_strings() -> None:
    """Run on the scheduler: intern CHURNED_STRINGS new strings, each freed at once."""
    for i in range(CHURNED_STRINGS):
        sys.intern(f"churned-{i}")


def short_span_grace() -> None:
    """Run on the scheduler: drop finished spans 2 s after their tasks, not two minutes."""
    import app.jobs.scheduler_upkeep

    app.jobs.scheduler_upkeep.SPAN_GRACE_SECONDS = 2.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs after the warm-up (default: 1000)")
    parser.add_argument("--every", type=int, default=200, help="jobs between two readings (default: 200)")
    parser.add_argument("--warmup", type=int, default=150, help="jobs before the first reading (default: 150)")
    parser.add_argument("--churn", action="store_true", help="intern and free a million strings in the scheduler first")
    parser.add_argument("--snapshot-bytes", type=int, default=0, help="bytes in each of a job's snapshots (default: 0, small numbers)")
    parser.add_argument("--argument-bytes", type=int, default=0, help="bytes each job is given (default: 0)")
    parser.add_argument("--stop", action="store_true", help="stop each job after its first snapshot")
    args = parser.parse_args(argv)

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker runs this module's job by value
    from app.jobs.cluster import Cluster, Queued, Started

    cluster = Cluster()
    run_on_scheduler = cluster.client.run_on_scheduler
    argument = os.urandom(args.argument_bytes)  # random, as pairs are to Dask's compression (zeros would travel as almost nothing)
    seconds = STOPPED_SNAPSHOT_SECONDS if args.stop else 0.0

    def one_job() -> None:
        snapshots = cluster.submit("cpu", "bench", five_snapshots, args.snapshot_bytes, argument, seconds).snapshots()
        for snapshot in snapshots:
            if args.stop and not isinstance(snapshot, (Queued, Started)):
                break
        snapshots.close()  # stops the job if it still runs, as a page does when Stop is pressed or its tab closes

    run_on_scheduler(short_span_grace)
    for _ in range(args.warmup):
        one_job()
    if args.churn:
        before = run_on_scheduler(returned_mb)
        run_on_scheduler(churn_interned_strings)
        print(f"churned {CHURNED_STRINGS:,} interned strings: {before:.2f} -> {run_on_scheduler(returned_mb):.2f} MB")
    readings = []
    for done in range(0, args.jobs + 1, args.every):
        if done:
            for _ in range(args.every):
                one_job()
        time.sleep(3)
        one_job()  # looks at the finished spans, which the grace has let go by now
        time.sleep(1)  # a stopped job's task is let go of once its snapshot in flight is done: not read with it
        mb, in_use_kb, blocks = run_on_scheduler(heap_reading)
        readings.append((done, mb))
        print(f"  {done:>6,} jobs: {mb:.2f} MB; glibc's heap {in_use_kb:,.0f} kB in use, Python {blocks:,} blocks", flush=True)
    cluster.close()
    steps = [f"{b - a:+.2f}" for (_, a), (_, b) in zip(readings, readings[1:])]
    print(f"scheduler {readings[0][1]:.2f} -> {readings[-1][1]:.2f} MB over {args.jobs:,} jobs; per {args.every}: {', '.join(steps)} MB")


if __name__ == "__main__":
    main()
