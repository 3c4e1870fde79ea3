"""The room's costs: where web processes share their counts, and what one update of the room view costs.

    python -m bench.bench_room [--repeats 300]

1. The shared place. On a Dask scheduler in a process of its own (the local cluster `feedback-lab
   serve` starts, app.jobs.cluster), for a web process's board entry of realistic size (every card of the
   app with four choices, nine pages): the round trip of the scheduler's metadata (`set_metadata`
   then `get_metadata` of the whole board, what a web process does at each look), of a Dask
   `Variable` (`set`, then `get`), and the latency of Dask's events from one client to another
   (`Client.log_event` until a `subscribe_topic` handler has it: Dask's publish-subscribe); wall seconds p50 and p95, and this process's CPU
   seconds per operation (its client's threads included).
2. One update of the room view: `RoomView.show_counts` with new counts, in a document as a
   session's, and the changed values serialised as Bokeh sends them; CPU seconds of this thread, median.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np
from bokeh.core.serialization import Serializer
from bokeh.document import Document
from panel.io.state import set_curdoc

from app.pages import available_pages
from app.serving.room import BOARD_KEY, Counts, LocalBoard, Room


def board_entry(rng: np.random.Generator) -> dict:
    """A web process's entry as it publishes it: thirty learners over the pages and the cards."""
    pages = {p.route: int(rng.integers(0, 6)) for p in available_pages()}
    votes = {spec.key: {round_: {value: int(rng.integers(0, 10)) for value, _ in spec.choices} for round_ in ("1", "2")}
             for p in available_pages() for spec in getattr(p.module, "CARDS", ())}
    return {"beat": time.time_ns(), "pages": pages, "votes": votes}


def timed(operation, repeats: int) -> dict[str, float]:
    """Wall seconds of `operation()` p50 and p95 over `repeats`, and this process's CPU seconds per call."""
    walls, cpu = [], time.process_time()
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        walls.append(time.perf_counter() - start)
    return {"p50": float(np.percentile(walls, 50)), "p95": float(np.percentile(walls, 95)),
            "cpu": (time.process_time() - cpu) / repeats}


def event_latency(client, other, repeats: int) -> dict[str, float]:
    """Seconds from `client.log_event(topic, entry)` to `other`'s handler of the topic receiving it (Dask's events,
    its publish-subscribe since Pub/Sub was removed), p50 and p95; this process's CPU per message."""
    received: list[float] = []
    arrived = threading.Event()

    def handler(_event) -> None:
        received.append(time.perf_counter())
        arrived.set()

    other.subscribe_topic("feedback-lab-bench", handler)
    time.sleep(0.5)  # the subscription has reached the scheduler
    lags, cpu = [], time.process_time()
    entry = board_entry(np.random.default_rng(0))
    for _ in range(repeats):
        arrived.clear()
        start = time.perf_counter()
        client.log_event("feedback-lab-bench", entry)
        if arrived.wait(5):
            lags.append(received[-1] - start)
    cpu = (time.process_time() - cpu) / repeats
    other.unsubscribe_topic("feedback-lab-bench")
    return {"p50": float(np.percentile(lags, 50)), "p95": float(np.percentile(lags, 95)), "cpu": cpu}


def shared_places(repeats: int) -> dict[str, dict[str, float]]:
    from distributed import Client, Variable

    from app.jobs.cluster import Cluster

    cluster = Cluster(slots=1)
    client = cluster.client
    other = Client(client.scheduler.address, set_as_default=False)
    rng = np.random.default_rng(0)
    entry = board_entry(rng)
    variable = Variable("feedback-lab-bench", client=client)
    try:
        return {
            "metadata: set this process's entry": timed(lambda: client.set_metadata([BOARD_KEY, "processes", "bench"], entry), repeats),
            "metadata: get the whole board": timed(lambda: client.get_metadata([BOARD_KEY], default=None), repeats),
            "Variable: set": timed(lambda: variable.set(entry), repeats),
            "Variable: get": timed(lambda: variable.get(timeout=5), repeats),
            "events (publish-subscribe): log_event to another client's handler": event_latency(client, other, repeats),
        }
    finally:
        other.close()
        cluster.close()


def update_cost(repeats: int) -> float:
    """Median CPU seconds of one update of the room view: `show_counts` (Panel's parameters into the Bokeh models of
    a session's document) and the new counts serialised as Bokeh serialises a change for the browser."""
    from app.pages.room import RoomView

    doc = Document()
    rng = np.random.default_rng(1)
    with set_curdoc(doc):
        view = RoomView(room=Room(LocalBoard()))
        view.__panel__().server_doc(doc)
        times = []
        for _ in range(repeats):
            entry = board_entry(rng)
            counts = Counts(entry["pages"], entry["votes"])
            start = time.thread_time()
            view.show_counts(counts)
            Serializer().encode(view.tally.counts)
            Serializer().encode(view.learners.object)
            times.append(time.thread_time() - start)
        view.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300, help="operations timed of each kind (default: 300)")
    args = parser.parse_args(argv)
    print(f"the shared place, on a local cluster's scheduler process ({args.repeats} each): wall p50 / p95, this process's CPU per op")
    for name, figures in shared_places(args.repeats).items():
        print(f"  {name}: {1000 * figures['p50']:.2f} / {1000 * figures['p95']:.2f} ms, CPU {1000 * figures['cpu']:.2f} ms")
    print(f"one update of the room view (new counts, serialised): {1000 * update_cost(min(args.repeats, 100)):.1f} ms CPU (median)")


if __name__ == "__main__":
    main()
