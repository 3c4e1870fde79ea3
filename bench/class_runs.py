"""A class presses Start: N learners start live runs within seconds of each other, with the same or K distinct settings.

    python -m bench.class_runs [--learners 30] [--distinct 1] [--steps 300] [--within 10] [--with-load] [--web-processes N] [--cold] [--json]
    python -m bench.class_runs --distinct 6          # beta 0, 0.05, 0.2 x seed 0, 1
    python -m bench.class_runs --distinct 8 --runs-per-device 6   # two runs wait: their estimated start is checked

starts `python -m app.cli serve` on a free localhost port (run folders in a temporary folder),
waits until it has settled (its web processes started, its worker's default model loaded; `--cold`: not),
then N learners, spread evenly over `--within` seconds, open /live-run with the seed's batch and
`--steps` steps and press Start. Learner k asks for the k-th of the K settings (in turn): beta
0.05, 0, 0.2 with seed 0, then the same with seed 1, ... (`--distinct 1`: the page's defaults).
A learner is a Bokeh websocket client as in bench/load_test.py; it reads its page's status line
as the page writes it. Printed: each learner's seconds from pressing Start to the first step on
their page (p50, p95, last), each run's steps per second and the seconds until every page showed
its last step, how many runs the server trained (run folders), and, for a learner whose run
waited for its device, the start the page estimated against the real one. With `--with-load`,
thirty more learners go round the analytic pages meanwhile (bench/load_test.py's learners), and
their slider and page-load figures are printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tornado.httpclient import AsyncHTTPClient

from bench.load_test import (
    ANALYTIC,
    KINDS,
    Figures,
    PageSession,
    by_minute,
    cpu_seconds,
    learner,
    probe,
    server_log_problems,
    settled,
    summary,
)
from bench.servers import start_server, stop_server

BETAS = (0.05, 0.0, 0.2)
"""The betas of the distinct settings, in the order learners take them (the page's default first)."""
RUNNING = re.compile(r"Running on \w+: (\d+) of (\d+) steps done")
FINISHED = re.compile(r"Finished: all (\d+) steps")
WAIT = re.compile(r"should start in about (?:(\d+) min)? ?(?:(\d+) s)?\.")


def settings_query(k: int, distinct: int, steps: int) -> str:
    """The link of learner k's page: the k-th of the `distinct` settings, in turn."""
    j = k % distinct
    beta, seed = BETAS[j % len(BETAS)], j // len(BETAS)
    return f"?steps={steps}&beta={beta:g}&seed={seed}"


@dataclass
class Watcher:
    """One learner's view of their run: when Start was pressed, the first and the last step shown, the estimate."""

    query: str
    pressed: float = 0.0
    first_step: float | None = None
    last_step: float | None = None
    steps_seen: int = 0
    estimate: tuple[float, float] | None = None
    """(when it was first shown, the start it promised), for a run that waited for its device."""
    timeline: list[tuple[float, int]] = field(default_factory=list)
    """(time, step) whenever the page showed a new step."""
    texts: list[str] = field(default_factory=list)
    """The last few texts the page wrote (its status line, the job's alert): what a learner who saw no step was shown."""


class RunPage(PageSession):
    """A live-run page whose status line is read as it changes."""

    watcher: Watcher

    def _patched(self, events: list[dict]) -> None:
        super()._patched(events)
        now = time.perf_counter()
        for event in events:
            text = event.get("new") if event.get("attr") == "text" else None
            if not isinstance(text, str):
                continue
            w = self.watcher
            w.texts = [*w.texts[-3:], re.sub(r"<[^>]+>", "", text)[:300]]
            found = RUNNING.search(text) or FINISHED.search(text)
            if found and int(found.group(1)) > w.steps_seen:
                w.steps_seen = int(found.group(1))
                w.timeline.append((now, w.steps_seen))
                w.first_step = w.first_step or now
                w.last_step = now
            wait = WAIT.search(text)
            if wait and w.estimate is None and w.first_step is None:
                w.estimate = (now, now + 60 * int(wait.group(1) or 0) + int(wait.group(2) or 0))


async def press_start(base: str, k: int, query: str, at: float, steps: int, timeout: float) -> tuple[RunPage, Watcher]:
    """Learner k: open the page with `query`, press Start at time `at`, and watch until the run's last step."""
    await asyncio.sleep(max(at - time.perf_counter(), 0.0))
    page = await RunPage.open(base, "live-run", query, timeout=timeout)
    page.watcher = Watcher(query)
    await page.settle(quiet=0.3, longest=3.0)
    page.watcher.pressed = time.perf_counter()
    await page.click("Start")
    return page, page.watcher


def process_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of the server's web processes (`pid`'s own, or those it started with --web-processes N) and
    of its other processes (the local cluster's scheduler and workers; nginx)."""
    import psutil

    children = [c for c in psutil.Process(pid).children(recursive=True) if c.is_running()]
    web = [c.pid for c in children if "serve" in c.cmdline()] or [pid]
    return {"web": sum(map(cpu_seconds, web)), "cluster": sum(cpu_seconds(c.pid) for c in children if c.pid not in web)}


async def class_presses_start(base: str, learners: int, distinct: int, steps: int, within: float, timeout: float,
                              with_load: bool, longest: float, server_pid: int | None = None) -> dict:
    AsyncHTTPClient.configure(None, max_clients=4 * (learners + 30))
    cpu_before, client_before = process_cpu(server_pid) if server_pid else None, time.process_time()
    figures = Figures()
    answered = await probe(base, ANALYTIC, timeout) if with_load else {}
    started = time.perf_counter()
    load = None
    if with_load:
        load = asyncio.gather(*(learner(k, base, answered, time.monotonic() + longest, 15, 3.0, timeout, figures)
                                for k in range(30)))
    pages = await asyncio.gather(*(press_start(base, k, settings_query(k, distinct, steps), started + within * k / learners,
                                               steps, timeout) for k in range(learners)))
    deadline = started + longest
    while time.perf_counter() < deadline and not all(w.steps_seen >= steps for _, w in pages):
        await asyncio.sleep(0.5)
    done = time.perf_counter()
    if load is not None:
        load.cancel()
        await asyncio.gather(load, return_exceptions=True)
    for page, _ in pages:
        await page.close()
    watchers = [w for _, w in pages]
    first = [w.first_step - w.pressed for w in watchers if w.first_step is not None]
    by_run: dict[str, list[Watcher]] = {}
    for w in watchers:
        by_run.setdefault(w.query, []).append(w)
    runs = {}
    for query, ws in by_run.items():
        timeline = sorted(t for w in ws for t in w.timeline)
        pace = (timeline[-1][1] - timeline[0][1]) / (timeline[-1][0] - timeline[0][0]) if len(timeline) > 1 else None
        ends = [w.last_step - started for w in ws if w.steps_seen >= steps]
        runs[query] = {"learners": len(ws), "steps_per_s": pace, "all_pages_at_last_step_s": max(ends) if len(ends) == len(ws) else None}
    estimates = [{"waited_s": w.first_step - w.estimate[0], "estimated_s": w.estimate[1] - w.estimate[0],
                  "error": (w.estimate[1] - w.first_step) / (w.first_step - w.estimate[0])}
                 for w in watchers if w.estimate is not None and w.first_step is not None]
    report = {"learners": learners, "distinct": distinct, "steps": steps, "within_s": within,
              "first_step_s": summary(first) | {"last": max(first) if first else None, "missing": learners - len(first)},
              "runs": runs, "every_page_done_s": done - started if all(w.steps_seen >= steps for w in watchers) else None,
              "estimates": estimates,
              "shown_to_those_who_saw_no_step": [w.texts for w in watchers if w.first_step is None]}
    wall = done - started
    report["wall_s"], report["cpu_s"] = wall, {"learners (this process)": time.process_time() - client_before}
    if cpu_before is not None:
        cpu_after = process_cpu(server_pid)
        report["cpu_s"] |= {f"server {k}": cpu_after[k] - cpu_before[k] for k in cpu_after}
    if with_load:
        for kinds in KINDS.values():
            by_page = getattr(figures, kinds)
            report[kinds] = {"all": summary([x for v in by_page.values() for x in v])}
        report["load_errors"] = len(figures.errors)
        report["by_minute"] = by_minute(figures.timeline)
    return report


def report_text(r: dict) -> str:
    f, lines = r["first_step_s"], []
    lines.append(f"{r['learners']} learners pressed Start within {r['within_s']:g} s, {r['distinct']} distinct settings, "
                 f"{r['steps']} steps each, " + ("as soon as the server answered" if r.get("settled_after_s") is None else
                                                  f"once the server had settled ({r['settled_after_s']:.0f} s after it answered)"))
    lines.append(f"press to first step: p50 {f.get('p50', float('nan')):.1f} s, p95 {f.get('p95', float('nan')):.1f} s, "
                 f"last {f['last'] or float('nan'):.1f} s; {f['missing']} learners saw none")
    for query, run in r["runs"].items():
        pace = f"{run['steps_per_s']:.2f} steps/s" if run["steps_per_s"] else "no pace"
        end = run["all_pages_at_last_step_s"]
        lines.append(f"  {query}: {run['learners']} learners, {pace}, every page at its last step "
                     f"{f'{end:.0f} s' if end is not None else 'not reached'} after the first press")
    done = r["every_page_done_s"]
    lines.append(f"run folders written: {r['run_folders']}; " +
                 (f"every page at its last step {done:.0f} s after the first press" if done else "not every page finished"))
    for e in r["estimates"]:
        lines.append(f"  waited {e['waited_s']:.0f} s for the device, estimated {e['estimated_s']:.0f} s ({e['error']:+.0%})")
    if "moves" in r:
        lines.append(f"analytic pages meanwhile: slider p95 {r['moves']['all'].get('p95', float('nan')) * 1000:.0f} ms "
                     f"({r['moves']['all']['n']} moves), page-load p95 {r['loads']['all'].get('p95', float('nan')):.2f} s, "
                     f"{r['load_errors']} errors")
        for m in r["by_minute"]:
            moves, loads = m["moves"], m["loads"]
            lines.append(f"  minute {m['minute']}: slider p95 {moves.get('p95', float('nan')) * 1000:.0f} ms, "
                         f"page-load p95 {loads.get('p95', float('nan')):.2f} s ({loads['n']} loads)")
    lines.append(f"CPU seconds in the {r['wall_s']:.0f} s: " + ", ".join(f"{k} {v:.0f}" for k, v in r["cpu_s"].items()) +
                 f" (the machine has {os.cpu_count()} cores)")
    lines.append(f"server log: {len(r['server_log_problems'])} tracebacks or error lines" +
                 "".join(f"\n  {line}" for line in r["server_log_problems"][:10]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=30, help="learners who press Start (default: 30)")
    parser.add_argument("--distinct", type=int, default=1, help="distinct settings among them (default: 1)")
    parser.add_argument("--steps", type=int, default=300, help="training steps of each run (default: 300, the seed's)")
    parser.add_argument("--within", type=float, default=10.0, help="seconds over which the presses are spread (default: 10)")
    parser.add_argument("--with-load", action="store_true", help="thirty more learners on the analytic pages meanwhile")
    parser.add_argument("--runs-per-device", type=int, default=None, help="the server's --max-runs-per-device (default: its own)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a page load is an error (default: 30)")
    parser.add_argument("--longest", type=float, default=1200.0, help="seconds before the test gives up (default: 1200)")
    parser.add_argument("--web-processes", type=int, default=1, metavar="N",
                        help="the server's web processes, behind nginx; each learner a new browser (default: 1)")
    parser.add_argument("--cold", action="store_true",
                        help="press Start as soon as the server answers, while it starts up (default: once it has settled)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.learners < 1 or not 1 <= args.distinct <= args.learners or args.steps < 1 or args.web_processes < 1:
        parser.error("--learners and --steps must be at least 1, and --distinct between 1 and --learners")
    runs = Path(tempfile.mkdtemp(prefix="fl-class-runs-"))
    options = ("--max-runs-per-device", str(args.runs_per_device)) if args.runs_per_device else ()
    server = start_server("--max-sessions", "200", "--web-processes", str(args.web_processes), *options,
                          env={"FEEDBACK_LAB_RUNS": str(runs)}, up_seconds=300)
    try:
        waited = 0.0 if args.cold else asyncio.run(settled(server, longest=300))
        report = asyncio.run(class_presses_start(server.url, args.learners, args.distinct, args.steps, args.within,
                                                 args.timeout, args.with_load, args.longest, server.process.pid))
        report["settled_after_s"] = None if args.cold else waited
    finally:
        stop_server(server)
    report["run_folders"] = len(list(runs.glob("*/config.json")))
    report["server_log_problems"] = server_log_problems(server.log())
    print(json.dumps(report, indent=1) if args.json else report_text(report))


if __name__ == "__main__":
    main()
