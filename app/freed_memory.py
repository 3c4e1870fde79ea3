"""Freed memory handed back to the system: the web process's and the local scheduler's, every few seconds.

Stdlib only, so that the scheduler's process (app/jobs/scheduler_upkeep.py) uses it without the web app's imports.
"""

from __future__ import annotations

import ctypes
import threading
import time

TRIM_SECONDS = 5.0
"""How often the server hands the memory its jobs have freed back to the system (glibc's malloc_trim)."""
TRIM_THREAD = "feedback-lab-trim"


def glibc_malloc_trim():
    """glibc's `malloc_trim`, which hands the heap's free pages back to the system; None where libc is not glibc."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # macOS, musl: nothing to trim this way
        return None


def trim_freed_memory(every: float = TRIM_SECONDS) -> bool:
    """Every `every` seconds, return the heap's free pages to the system; False where libc is not glibc.

    A closed session's jobs free their numpy and torch buffers, but glibc keeps freed heap
    memory for reuse (it also raises its mmap threshold to the largest block freed, so large
    buffers come from the heap): without this, a server's resident memory climbed by 200 MB
    over 50 visits of the reward-model page, with no Python object left behind. malloc_trim(0)
    takes about 9 ms here; trimming every 5 s left a live run's step time unchanged (0.358 s
    against 0.360 and 0.355 s; every 1 s cost 5%), where a fixed 64 KiB mmap threshold instead
    made each REINFORCE step 47% slower. Started once per process, on a daemon thread.
    """
    malloc_trim = glibc_malloc_trim()
    if malloc_trim is None:
        return False
    if any(t.name == TRIM_THREAD for t in threading.enumerate()):
        return True

    def trim() -> None:
        while True:
            time.sleep(every)
            malloc_trim(0)

    threading.Thread(target=trim, name=TRIM_THREAD, daemon=True).start()
    return True
