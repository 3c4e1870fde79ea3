"""The baselines page's plot built the HoloViews way beside the Bokeh way: visit cost and move cost.

    python -m bench.bench_holoviews [--repeats 5] [--moves 20]

Both draw the same thing: the two estimate lines and their mean over b (three curves), the two
dots at the current b and the crossing point, from `engines.two_action`. The Bokeh way is the
page's own figure (`BaselinesPage._figure`, data in ColumnDataSources replaced in place); the
HoloViews way is an overlay of `hv.Curve` and `hv.Scatter` elements in DynamicMaps fed by
`hv.streams.Pipe`, shown in `pn.pane.HoloViews`. For each: the server CPU of one visit (the plot
in a Panel column, its Bokeh document and that document as JSON; median of `--repeats` after one
to warm up), its Bokeh model count, and the CPU per move of b (the new data sent and the
document patch serialised; median and p95 of `--moves`). The import of HoloViews is timed apart.
The app does not depend on HoloViews (these figures decided it): `pip install holoviews` first.
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

from app.pages.baselines import BaselinesPage
from app.pages.baselines.figures import B_GRID
from engines.two_action import R1, R2, two_action_estimates


def bokeh_way():
    """The page's figure and a function moving b."""
    page = BaselinesPage(query={})

    def move(b: float) -> None:
        page.b = b

    return pn.Column(pn.pane.Bokeh(page.figure, sizing_mode="stretch_width")), move


def holoviews_way():
    """The same plot as a HoloViews overlay updated through Pipe streams, and a function moving b."""
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401 (registers the Bokeh backend and its options)

    hv.Store.set_current_backend("bokeh")

    p = 0.5
    s = two_action_estimates(p, B_GRID, R1, R2)
    lines = hv.Curve((B_GRID, s.g1), "b", "g", label="estimate if action 1 is sampled") * \
        hv.Curve((B_GRID, s.g2), "b", "g", label="estimate if action 2 is sampled") * \
        hv.Curve((B_GRID, s.mean), "b", "g", label="mean of the estimate (the true gradient)")

    def at(b: float) -> dict:
        e = two_action_estimates(p, b, R1, R2)
        return {"dots": (np.array([b, b]), np.array([float(e.g1), float(e.g2)])), "cross": (np.array([float(e.cross)]), np.array([float(e.mean)]))}

    start = at(0.0)
    dots, cross = hv.streams.Pipe(data=start["dots"]), hv.streams.Pipe(data=start["cross"])
    overlay = lines * hv.DynamicMap(lambda data: hv.Scatter(data, "b", "g").opts(size=10), streams=[dots]) * \
        hv.DynamicMap(lambda data: hv.Scatter(data, "b", "g", label="where the lines cross").opts(marker="diamond", size=14),
                      streams=[cross])
    overlay = overlay.opts(hv.opts.Overlay(responsive=True, height=380, xlim=(0, 15), ylim=(-10, 11), legend_position="bottom",
                                           tools=["save"]))

    def move(b: float) -> None:
        data = at(b)
        dots.send(data["dots"])
        cross.send(data["cross"])

    return pn.Column(pn.pane.HoloViews(overlay, backend="bokeh", sizing_mode="stretch_width")), move


def visit(way) -> tuple[float, int, Document, object, object]:
    doc = Document()
    with set_curdoc(doc):
        start = time.process_time()
        view, move = way()
        view.server_doc(doc)
        doc.to_json()
        return time.process_time() - start, len(list(doc.models)), doc, view, move


def move_costs(way, moves: int) -> list[float]:
    _, _, doc, view, move = visit(way)
    protocol, events, costs = Protocol(), [], []
    doc.on_change(events.append)
    # As a session's document once its browser has connected: Panel then keeps a step's changes held for
    # the event loop's next tick (taken below, as that tick would), where it drops them for a document
    # nobody is connected to.
    state._connected[doc] = True
    with set_curdoc(doc):
        for k in range(moves):
            events.clear()
            start = time.process_time()
            move(round(0.1 * (k + 1), 1))
            events += doc.callbacks._held_events
            doc.callbacks._held_events = []
            patches = [e for e in events if hasattr(e, "to_serializable")]
            if not patches:
                raise RuntimeError("a move of b changed nothing in the document")
            protocol.create("PATCH-DOC", patches).content_json  # noqa: B018
            costs.append(time.process_time() - start)
    return costs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--moves", type=int, default=20)
    args = parser.parse_args(argv)
    start = time.process_time()
    try:
        import holoviews  # noqa: F401
    except ImportError:
        parser.exit(1, "HoloViews is not installed (the app does not use it): pip install holoviews, then run this again.\n")
    print(f"import holoviews (after panel and bokeh): {time.process_time() - start:.2f} s of CPU, once per process")
    for name, way in (("bokeh", bokeh_way), ("holoviews", holoviews_way)):
        visit(way)
        visits = [visit(way)[:2] for _ in range(args.repeats)]
        costs = move_costs(way, args.moves + 1)[1:]
        print(f"  {name}: visit {statistics.median(v[0] for v in visits) * 1000:.0f} ms, {visits[-1][1]} Bokeh models; "
              f"move of b: median {statistics.median(costs) * 1000:.1f} ms, p95 {float(np.percentile(costs, 95)) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
