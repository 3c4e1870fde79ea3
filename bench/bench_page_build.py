"""What one page visit costs the server: building the page and its Bokeh document, in one process.

    python -m bench.bench_page_build [--repeats 3]

For each analytic page: the page in its template (`app.server.build_page`), the template's
Bokeh document (`server_doc`, which creates every Bokeh model), and that document as JSON (what
the browser is sent); the median of `--repeats` visits after one to warm up, and the number of
Bokeh models. The live-run and reward-model pages are left out: their visits start model work.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bokeh.document import Document

from app.pages import available_pages
from app.server import build_page, route_link

SKIPPED = ("live-run", "reward-model")
"""Pages whose visit starts model work, which would be timed with the page."""


def visit(info, pages) -> tuple[float, float, float, int]:
    """Seconds to build the page, to build its document and to serialise it; the document's model count."""
    doc = Document()
    start = time.perf_counter()
    template = build_page(info, pages, route_link)
    built = time.perf_counter()
    template.server_doc(doc)
    documented = time.perf_counter()
    doc.to_json()
    return built - start, documented - built, time.perf_counter() - documented, len(list(doc.models))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed visits of each page (default: 3)")
    args = parser.parse_args(argv)
    pages = available_pages()
    print("page visit, server CPU: build the page / its Bokeh document / the document as JSON (median)")
    for info in pages:
        if info.route in SKIPPED:
            continue
        visit(info, pages)
        times = [visit(info, pages) for _ in range(args.repeats)]
        build, document, serialise = (statistics.median(t[i] for t in times) for i in range(3))
        print(f"  /{info.route}: {build * 1000:.0f} / {document * 1000:.0f} / {serialise * 1000:.0f} ms, "
              f"total {(build + document + serialise):.2f} s, {times[-1][3]} Bokeh models")


if __name__ == "__main__":
    main()
