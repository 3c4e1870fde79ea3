"""How many cores torch takes in the processes of a server, set before the model jobs' workers start."""

from __future__ import annotations

import os
import sys


def share_cores() -> int:
    """Give torch half the machine's cores (at least one) unless OMP_NUM_THREADS says otherwise; return its thread count.

    The language-model work (a live run, a frontier, preference pairs) shares the process with
    every learner's analytic pages. torch's default of one thread per core lets one run take
    them all, and two concurrent torch jobs on a 2-core machine then ran 7x slower per step
    (5.5 s against 0.8 s) than with one thread each. Before torch is imported the variable is
    enough; after, torch is told directly.
    """
    threads = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not threads.isdigit() or int(threads) < 1:
        threads = str(max(1, (os.cpu_count() or 2) // 2))
        os.environ["OMP_NUM_THREADS"] = threads
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(threads))
    return int(threads)
