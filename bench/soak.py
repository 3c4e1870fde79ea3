"""Open and close every page many times: the server's resident memory before and after.

    python -m bench.soak [--cycles 50] [--warmup 30] [--every 10] [--pages ROUTE ...] [--json]

starts `python -m app.cli serve` on a free localhost port with room for many sessions,
closed sessions dropped after 1 s and collected every 2 s (`--max-sessions 1000 --unused-session-seconds 1
--collect-seconds 2`), then
soaks one page at a time, the index first: `--warmup` open-and-close cycles of the page to warm
up (imports, caches, first allocations: on the bandit and toy-target pages memory still climbed
through the first ten cycles, on the live-run page through the first twenty, then stayed flat), the server's resident memory, `--cycles`
more cycles with the resident memory read again after every `--every` of them, each reading taken
once the closed sessions have been dropped, collected (app.serving.server.collect_on_a_timer) and their
freed memory handed back (app.freed_memory.trim_freed_memory), and once the server has been nearly idle
for two seconds (the sessions it builds ahead, app/serving/ready_pages.py, all built again); the local
cluster's scheduler, a process of its own, is read at the same moments (its growth printed apart). Two readings alone cannot tell a leak from the allocator's noise,
so the growth per cycle is the least-squares slope of the readings against the cycle, with its
standard error: a leak is a slope several standard errors above zero. Each reading is the whole
resident memory (VmRSS) and its part the process allocated (RssAnon), each with its own slope: the rest
is pages of mapped files, mostly shared libraries' code, read in the first time a path runs and not a
leak, and a step in the whole with none in the allocated part is such a page-in.
A cycle loads the page as a browser does (bench/load_test.py's PageSession: the GET, the
websocket, the document, the document-ready event that starts the page's onload work), moves
one of its sliders if it has one, waits until the server has sent nothing for half a second
(at most 5 s), and closes the page. Printed: the growth per page over its cycles and per cycle,
and in total from the first reading to the last; and the server log's tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np

from app.freed_memory import TRIM_SECONDS
from app.pages import available_pages
from bench.load_test import PageSession, resident_mb, server_log_problems, settled
from bench.servers import Server, start_server, stop_server

COLLECT_SECONDS = 2.0
"""The soaked server's period of full garbage collections (`--collect-seconds`; a lesson's server waits longer): what a
reading should show is what survives them."""
DROPPED_AFTER = 2.5 + COLLECT_SECONDS + TRIM_SECONDS
"""Seconds after a close before memory is read: the 1 s lifetime, the 1 s between Bokeh's looks for expired
sessions, one period of the server's full garbage collections (a closed page is cyclic garbage) and one of its
return of freed memory."""


MOVE_TIMEOUT = 10.0
"""Seconds to wait for a slider's answer; a slider that changes only text has none, and the cycle goes on."""


async def cycle(base: str, route: str) -> bool:
    """One open-and-close cycle; whether its slider move changed a plot (True too on a page without sliders)."""
    session = await PageSession.open(base, route, timeout=120)
    try:
        await session.settle()
        movable = session.movable()
        if not movable:
            return True
        try:
            await session.move(movable[0], 0, MOVE_TIMEOUT)
        except asyncio.TimeoutError:
            return False
        await session.settle()
        return True
    finally:
        await session.close()


def slope(cycles: list[int], mb: list[float]) -> tuple[float, float]:
    """MB per cycle: the least-squares slope of `mb` against `cycles`, and its standard error (nan with fewer than three readings)."""
    x, y = np.asarray(cycles, float), np.asarray(mb, float)
    if x.size < 3:
        return (float((y[-1] - y[0]) / (x[-1] - x[0])) if x.size == 2 else float("nan")), float("nan")
    b, a = np.polyfit(x, y, 1)
    residuals = y - (a + b * x)
    se = np.sqrt(residuals @ residuals / (x.size - 2) / ((x - x.mean()) @ (x - x.mean())))
    return float(b), float(se)


def scheduler_pid(server: Server) -> int | None:
    """The process id of the server's local Dask scheduler (a child process of its own), None if it has none."""
    import psutil

    for child in psutil.Process(server.process.pid).children():
        if child.cmdline()[1:4] == ["-m", "dask", "spec"]:
            return child.pid
    return None


READ = {"VmRSS": "", "RssAnon": "anon_"}
"""What a reading keeps of a process's resident memory (bench.load_test.resident_mb), the whole and the part it
allocated, and the prefix of each one's figures in the report."""


async def dropped_memory(server: Server) -> tuple[dict[str, float], dict[str, float]]:
    """The resident memory in MB of the server and of its scheduler's process (zeros if none), whole (VmRSS) and
    allocated (RssAnon), once the sessions closed so far have been dropped, collected and their memory returned, and
    the pages built ahead built again."""
    await asyncio.sleep(DROPPED_AFTER)
    await settled(server)
    scheduler = scheduler_pid(server)
    return resident_mb(server.process.pid), resident_mb(scheduler) if scheduler else dict.fromkeys(READ, 0.0)


def growth(prefix: str, readings: list[tuple[int, dict[str, float]]]) -> dict:
    """One process's readings over the cycles, the whole and the allocated part, each with its slope in MB per cycle."""
    cycles = [c for c, _ in readings]
    report = {}
    for key, name in READ.items():
        mb = [values[key] for _, values in readings]
        per_cycle, se = slope(cycles, mb)
        report |= {f"{prefix}{name}readings": list(zip(cycles, mb)), f"{prefix}{name}mb_per_cycle": per_cycle,
                   f"{prefix}{name}mb_per_cycle_se": se}
    return report


async def soak_page(server: Server, route: str, cycles: int, warmup: int, every: int) -> dict:
    for _ in range(warmup):
        await cycle(server.url, route)
    both = [(0, *await dropped_memory(server))]
    unanswered, cycling = 0, 0.0
    for done in range(1, cycles + 1):
        started = time.monotonic()
        unanswered += not await cycle(server.url, route)
        cycling += time.monotonic() - started
        if done % every == 0 or done == cycles:
            both.append((done, *await dropped_memory(server)))
    before, after = both[0][1]["VmRSS"], both[-1][1]["VmRSS"]
    return {"route": route, "before_mb": before, "after_mb": after, "growth_mb": after - before,
            **growth("", [(c, web) for c, web, _ in both]), **growth("scheduler_", [(c, scheduler) for c, _, scheduler in both]),
            "unanswered_moves": unanswered, "seconds_per_cycle": cycling / cycles}


async def soak(server: Server, cycles: int, warmup: int, every: int, routes: list[str]) -> dict:
    pages = [await soak_page(server, route, cycles, warmup, every) for route in routes]
    return {"cycles": cycles, "warmup": warmup, "every": every, "pages": pages, "first_mb": pages[0]["before_mb"], "last_mb": pages[-1]["after_mb"],
            "total_growth_mb": pages[-1]["after_mb"] - pages[0]["before_mb"], "peak_mb": resident_mb(server.process.pid)["VmHWM"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=50, help="open-and-close cycles of each page after its warm-up (default: 50)")
    parser.add_argument("--warmup", type=int, default=30, help="open-and-close cycles of each page before the first reading (default: 30)")
    parser.add_argument("--every", type=int, default=10, help="cycles between two readings of the server's memory (default: 10)")
    parser.add_argument("--pages", nargs="+", metavar="ROUTE", help="soak only these routes ('' is the index; default: the index and every page)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.cycles < 1 or args.warmup < 0 or args.every < 1:
        parser.error("--cycles and --every must be at least 1, --warmup not negative")
    routes = args.pages if args.pages is not None else [""] + [p.route for p in available_pages()]
    server = start_server("--max-sessions", "1000", "--unused-session-seconds", "1", "--collect-seconds", str(COLLECT_SECONDS),
                          env={"OMP_NUM_THREADS": "1"})
    try:
        report = asyncio.run(soak(server, args.cycles, args.warmup, args.every, routes))
        report["server_log_problems"] = server_log_problems(server.log())
        report["server_log"] = str(server.log_path)
    finally:
        stop_server(server)
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"memory soak: {args.cycles} open-and-close cycles of each page after {args.warmup} to warm up; server resident memory (VmRSS), "
          f"read every {args.every} cycles")
    for page in report["pages"]:
        print(f"  /{page['route']}: {page['before_mb']:.1f} MB -> {page['after_mb']:.1f} MB ({page['growth_mb']:+.1f} MB), "
              f"{page['mb_per_cycle'] * 1000:+.0f} ± {page['mb_per_cycle_se'] * 1000:.0f} kB per cycle (slope ± standard error), "
              f"{page['seconds_per_cycle']:.2f} s per cycle" + (f", {page['unanswered_moves']} moves without a plot change" if page["unanswered_moves"] else ""))
        print(f"    allocated (RssAnon): {page['anon_mb_per_cycle'] * 1000:+.2f} ± {page['anon_mb_per_cycle_se'] * 1000:.2f} kB per cycle")
        (_, first), (_, last) = page["scheduler_readings"][0], page["scheduler_readings"][-1]
        print(f"    its scheduler's process: {first:.1f} MB -> {last:.1f} MB, {page['scheduler_mb_per_cycle'] * 1000:+.0f} ± "
              f"{page['scheduler_mb_per_cycle_se'] * 1000:.0f} kB per cycle; allocated {page['scheduler_anon_mb_per_cycle'] * 1000:+.2f} ± "
              f"{page['scheduler_anon_mb_per_cycle_se'] * 1000:.2f} kB per cycle")
    print(f"total: {report['first_mb']:.1f} MB -> {report['last_mb']:.1f} MB ({report['total_growth_mb']:+.1f} MB); peak {report['peak_mb']:.1f} MB")
    problems = report["server_log_problems"]
    print(f"server log ({report['server_log']}): {len(problems)} tracebacks or error lines" + "".join(f"\n  {p}" for p in problems[:10]))


if __name__ == "__main__":
    main()
