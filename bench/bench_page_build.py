"""What one page visit costs the server: building the page and its Bokeh document, in one process.

    python -m bench.bench_page_build [--repeats 3] [--pages ROUTE ...] [--revealed] [--calls]

For the index, each page and the teacher's room view: the page in its template (`app.serving.server.build_page`), the
template's Bokeh document (`server_doc`, which creates every Bokeh model), and that document as
JSON (what the browser is sent), in CPU seconds of the thread that serves the visit (work a page
hands to a worker thread, such as a training run it starts, is not counted); the median of
`--repeats` visits after one to warm up, and the number of Bokeh models. Each visit is built with its document as Panel's current document, as a
server session is (Panel then shares one stylesheet model per document instead of one per
component). A first visit opens with the guided prompts on and nothing answered; `--revealed`
times the page with every prediction card answered too (a learner who comes back: its guarded
parts are then built as well). The live-run and reward-model pages are timed too: their model work
runs on the Dask cluster's worker processes (a local cluster, started by the first visit), so what
is timed is what their visit costs the web process. `--calls` counts the Python function calls of one visit as well:
a measure of its work that does not move with the machine's load, for comparing two checkouts.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from contextlib import contextmanager

from bokeh.document import Document
from panel.io.state import set_curdoc

from app.pages import available_pages
from app.serving.room import ROUTE as ROOM
from app.serving.server import build_index, build_page, framed_room, route_link
from widgets.predict import Guide


@contextmanager
def prompts(on: bool):
    """Every Guide made inside starts with its prompts `on` or off (off: every guarded part is shown, as once answered)."""
    before = Guide.prompts
    Guide.prompts = on
    try:
        yield
    finally:
        Guide.prompts = before


def visit(build, revealed: bool = False) -> tuple[float, float, float, int]:
    """Seconds of this thread's CPU to build the page, to build its document and to serialise it; the document's model count."""
    doc = Document()
    with set_curdoc(doc), prompts(not revealed):
        start = time.thread_time()
        template = build()
        built = time.thread_time()
        template.server_doc(doc)
        documented = time.thread_time()
        doc.to_json()
        done = time.thread_time()
    return built - start, documented - built, done - documented, len(list(doc.models))


def measure(build, repeats: int, revealed: bool = False) -> tuple[float, float, float, int]:
    """The median of `repeats` visits after one to warm up, and the model count."""
    visit(build, revealed)
    times = [visit(build, revealed) for _ in range(repeats)]
    build_s, document_s, serialise_s = (statistics.median(t[i] for t in times) for i in range(3))
    return build_s, document_s, serialise_s, times[-1][3]


def calls(build, revealed: bool = False) -> int:
    """Python function calls of one visit (after one to warm up): the visit's work counted, unlike its seconds, the same
    from run to run and machine to machine, so two checkouts compare within a percent where their timings cannot."""
    visit(build, revealed)
    profile = cProfile.Profile()
    profile.runcall(visit, build, revealed)
    return pstats.Stats(profile, stream=io.StringIO()).total_calls


def builders(routes: list[str] | None = None) -> dict[str, object]:
    """Route -> a function building one visit of it ("" is the index), every page."""
    pages = available_pages()
    table = {"": lambda: build_index(pages, route_link)}
    for info in pages:
        table[info.route] = lambda info=info: build_page(info, pages, route_link)
    table[ROOM] = lambda: framed_room(pages, route_link)  # the teacher's room view (its token checked before)
    return {route: build for route, build in table.items() if routes is None or route in routes}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed visits of each page (default: 3)")
    parser.add_argument("--pages", nargs="*", default=None, help="routes to time (default: the index and every page; '' is the index)")
    parser.add_argument("--revealed", action="store_true", help="time each page with every prediction card answered")
    parser.add_argument("--calls", action="store_true", help="count the Python function calls of a visit too")
    args = parser.parse_args(argv)
    print("page visit, server CPU: build the page / its Bokeh document / the document as JSON (median)")
    for route, build in builders(args.pages).items():
        build_s, document_s, serialise_s, models = measure(build, args.repeats, args.revealed)
        counted = f", {calls(build, args.revealed):,} function calls" if args.calls else ""
        print(f"  /{route}: {build_s * 1000:.0f} / {document_s * 1000:.0f} / {serialise_s * 1000:.0f} ms, "
              f"total {(build_s + document_s + serialise_s):.2f} s, {models} Bokeh models{counted}")
    stop_model_jobs()


def stop_model_jobs() -> None:
    """Close the local cluster the visits connected to (the model pages' jobs, the live-run page's watch of the line),
    before the interpreter's exit has shut down the threads Dask sends with: otherwise it fails mid-message as the
    process ends."""
    from app.jobs.cluster import current

    current().close()


if __name__ == "__main__":
    main()
