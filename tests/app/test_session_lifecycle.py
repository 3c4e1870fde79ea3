"""Sessions come and go without a trace: resident memory after many open-and-close cycles, no shared page objects."""

import os

import pytest

from app.pages import available_pages

CYCLES = int(os.environ.get("FEEDBACK_LAB_SOAK_CYCLES", "0"))
"""Open-and-close cycles of every page after the warm-up; the soak is 50 (set the variable).

A few cycles cannot tell a leak from the allocator settling (3 cycles grew 2.7 and 7.4 MB in
two runs), so the soak runs by hand only: FEEDBACK_LAB_SOAK_CYCLES=50 python -m pytest this file."""
ROUTES = [""] + [p.route for p in available_pages()]


def resident_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.skipif(CYCLES < 20, reason="the memory soak runs by hand: FEEDBACK_LAB_SOAK_CYCLES=50")
def test_memory_does_not_grow_over_open_and_close_cycles(roomy_server):
    import time

    for route in ROUTES * 2:  # warm-up: imports, caches, first allocations
        roomy_server.open_session(route)
    time.sleep(2.5)  # closed sessions dropped after 1 s
    before = resident_mb(roomy_server.process.pid)
    for _ in range(CYCLES):
        for route in ROUTES:
            roomy_server.open_session(route)
    time.sleep(2.5)
    after = resident_mb(roomy_server.process.pid)
    print(f"resident memory {before:.1f} MB -> {after:.1f} MB over {CYCLES} cycles of {len(ROUTES)} pages")
    assert after - before < 5, (before, after)  # "a few MB" over the whole soak
    assert "Traceback" not in roomy_server.log()


def test_two_sessions_get_distinct_page_objects_sharing_no_mutable_state():
    for info in available_pages():
        first, second = info.module.page(), info.module.page()
        assert first is not second
        shared = [
            name for name, value in vars(first).items()
            if isinstance(value, (list, dict, set)) and value and vars(second).get(name) is value
        ]
        assert not shared, (info.name, shared)
        for close in (getattr(first, "close", None), getattr(second, "close", None)):
            if close:
                close()
