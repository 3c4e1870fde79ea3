"""What one slider move costs the server: the callback, the engine call and the document patch serialised.

    python -m bench.bench_slider_moves [--moves 20] [--pages ROUTE ...]

For each analytic page, one visit is built as a server session builds it (its document as Panel's
current document) with every prediction card answered and every section's tab opened once, so
every plot is shown and updated. Then
each slider of the page is moved `--moves` times, one step at a time in one direction (turning at
an end), as a browser's change arrives (`widget._process_events`), with the process's results
cache (app.serving.results_cache) emptied first: each move asks for values nobody has asked for yet; a move's cost is the CPU time of this
thread from the change to the PATCH-DOC message for the browser serialised as JSON: the page's
callbacks, its engine calls and Bokeh's patch. Work a move hands to a worker thread (a training
run restarted) is not counted. The first move of each slider is printed apart (what a learner's
first move costs; warm-up a page may do at build time shows here), then the median and p95 of
the rest. A page without a slider (the index, the lab, the live run, the room) gives no line. With no browser
session a job's restart after a move (widgets.job_view.JobView.restart_soon) comes at once instead of after 300 ms
of quiet, so each move here also starts the job it restarts, on a thread or on the Dask cluster, not counted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import panel as pn
from bokeh.document import Document
from bokeh.protocol import Protocol
from panel.io.state import set_curdoc, state

from app.serving.results_cache import RESULTS
from bench.bench_page_build import builders, prompts, stop_model_jobs

GOAL_MEDIAN, GOAL_P95 = 0.030, 0.100
"""Seconds of server CPU per move: the goals for every analytic slider."""


def sliders(template) -> list[pn.widgets.Widget]:
    """The page's sliders that a learner can move now: shown and enabled."""
    found = [s for part in template.main for s in part.select(pn.widgets.slider._SliderBase)]
    return [s for s in found if s.visible and not s.disabled and isinstance(s.value, (int, float))]


def next_value(widget, right: bool):
    """One step right (left at the upper end) or left (right at the lower end)."""
    low, high, step = widget.start, widget.end, widget.step
    right = widget.value <= low or (right and widget.value < high)
    value = min(max(round(widget.value + (step if right else -step), 10), low), high)
    return int(value) if isinstance(widget.value, int) and isinstance(step, int) else value


def move_costs(route: str, build, moves: int) -> dict[str, list[float]]:
    """Seconds of CPU per move, by slider label, on one fresh visit of `route`."""
    doc = Document()
    protocol = Protocol()
    events: list = []
    costs: dict[str, list[float]] = {}
    RESULTS.clear()  # every move asks for values nobody has asked for in this process
    with set_curdoc(doc), prompts(False):
        template = build()
        template.server_doc(doc)
        doc.on_change(events.append)
        # As a session's document once its browser has connected: Panel then keeps a step's changes held for
        # the event loop's next tick (taken below, as that tick would), where it drops them for a document
        # nobody is connected to.
        state._connected[doc] = True
        for tabs in (t for part in template.main for t in part.select(pn.Tabs)):
            for i in range(len(tabs)):  # open every section (built on first view), so its sliders are moved too
                tabs.active = i
        for widget in sliders(template):
            label = widget.name or f"slider {len(costs) + 1}"
            right = widget.value < widget.end
            for _ in range(moves):
                if not (widget.visible and not widget.disabled):
                    break
                value = next_value(widget, right)
                right = value > widget.value
                events.clear()
                start = time.thread_time()
                widget._process_events({"value": value})
                events += doc.callbacks._held_events
                doc.callbacks._held_events = []
                patches = [e for e in events if hasattr(e, "to_serializable")]
                if patches:
                    protocol.create("PATCH-DOC", patches).content_json  # noqa: B018 (serialise, as the server does)
                costs.setdefault(label, []).append(time.thread_time() - start)
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=20, help="moves of each slider (default: 20)")
    parser.add_argument("--pages", nargs="*", default=None, help="routes to measure (default: every analytic page)")
    args = parser.parse_args(argv)
    print(f"slider move, server CPU (callback + engine + patch serialised): first move, then median / p95 of the next {args.moves - 1}")
    everything: list[float] = []
    for route, build in builders(args.pages).items():
        if not route:
            continue
        move_costs(route, build, 2)  # warm the process (imports, first engine calls), as a running server is
        for label, costs in move_costs(route, build, args.moves).items():
            rest = costs[1:] or costs
            everything += rest
            median, p95 = statistics.median(rest), float(np.percentile(rest, 95))
            flag = "" if median <= GOAL_MEDIAN and p95 <= GOAL_P95 else "  (over the goal)"
            print(f"  /{route} {label[:40]!r}: first {costs[0] * 1000:.0f} ms, median {median * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms{flag}")
    if everything:
        print(f"all sliders: median {statistics.median(everything) * 1000:.1f} ms, p95 {float(np.percentile(everything, 95)) * 1000:.1f} ms "
              f"(goals {GOAL_MEDIAN * 1000:.0f} and {GOAL_P95 * 1000:.0f} ms)")
    stop_model_jobs()


if __name__ == "__main__":
    main()
