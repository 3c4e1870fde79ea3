"""Python's table of interned strings under churn: the resident memory steps once, then stays flat.

    python -m bench.interned_strings [--strings 2000000] [--every 100000]

Imports what the web process imports (every page, the cluster's client, torch, transformers),
then interns `--strings` new strings, each freed at once (a mortal interned string, as Python
3.11 makes for an attribute name built at run time), and reads the resident memory (VmRSS)
after every `--every` of them, once freed memory has been collected and handed back
(`gc.collect()` and glibc's `malloc_trim(0)`, as the server does on its timers).

Why: the live-run page's soak grew in one step of 3.7 MB at about the 380th visit of a fresh
server, which tracemalloc traced to this table doubling from 2^18 to 2^19 slots. CPython
resizes the table when its free slots run out, freed strings' slots included, to the size the
strings alive then need, so a process whose imports keep more than 87,381 interned strings
alive doubles it once on enough churn and then reuses it: a step, not a per-visit growth.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import sys


def returned_mb() -> float:
    """This process's resident memory in MB once freed objects are collected and the heap's free pages handed back.

    Light to import (bench/scheduler_memory.py runs it in the scheduler's process, whose size is what it reads)."""
    import psutil

    from app.freed_memory import glibc_malloc_trim

    gc.collect()
    malloc_trim = glibc_malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)
    return psutil.Process().memory_info().rss / 2**20


class MallInfo2(ctypes.Structure):
    """glibc's `struct mallinfo2` (glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def glibc_in_use_kb() -> float:
    """The kB glibc's allocator has handed out and not had back (heap and mmapped blocks); nan where libc is not
    glibc 2.33 or later."""
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return float("nan")
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return (info.uordblks + info.hblkhd) / 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strings", type=int, default=2_000_000, help="new strings to intern and free (default: 2,000,000)")
    parser.add_argument("--every", type=int, default=100_000, help="strings between two readings (default: 100,000)")
    args = parser.parse_args(argv)

    import distributed  # noqa: F401 (the imports of the web process are the point)
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import app.jobs.cluster  # noqa: F401
    import app.jobs.model_jobs  # noqa: F401
    from app.pages import available_pages

    available_pages()  # imports every page module
    readings = [(0, returned_mb())]
    for done in range(args.every, args.strings + 1, args.every):
        for i in range(done - args.every, done):
            sys.intern(f"churned-{i}")  # interned, then freed as the call returns
        readings.append((done, returned_mb()))
    print(f"interned strings made and freed, and the resident memory after them (Python {sys.version.split()[0]}):")
    for done, mb in readings:
        print(f"  {done:>9,}: {mb:.1f} MB")
    steps = [(done, mb - before) for (_, before), (done, mb) in zip(readings, readings[1:]) if abs(mb - before) >= 0.5]
    print("steps of 0.5 MB or more: " + (", ".join(f"{d:,} strings {s:+.1f} MB" for d, s in steps) or "none"))


if __name__ == "__main__":
    main()
