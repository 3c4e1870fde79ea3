"""app.freed_memory: the thread that hands freed memory back to the system."""

import ctypes
import threading
import time

from app.freed_memory import TRIM_THREAD, trim_freed_memory


def test_the_server_returns_freed_memory_on_one_thread_however_often_asked():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        assert trim_freed_memory(0.05) is False  # not glibc: nothing started
        return
    assert trim_freed_memory(0.05) is True and trim_freed_memory(0.05) is True
    trimmers = [t for t in threading.enumerate() if t.name == TRIM_THREAD]
    assert len(trimmers) == 1 and trimmers[0].daemon
    time.sleep(0.2)
    assert trimmers[0].is_alive()  # trimming (several times by now) does not end or break the thread
