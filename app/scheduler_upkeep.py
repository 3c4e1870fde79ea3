"""What the local cluster's scheduler keeps of finished jobs: bounded, since it lives in the web process.

A local cluster's Dask scheduler runs inside the web process, which serves a class for weeks and
submits a job whenever a learner trains a reward model or starts a run. Two of the scheduler's
records of past work grew with every job, and with them the web process's memory
(`python -m bench.soak --pages reward-model`, whose every visit trains a reward model for a moment;
tracemalloc over 150 visits, 2026-12-05):

- Dask's spans extension keeps every span it made, and with it every TaskGroup of the span, for
  the scheduler's whole life (dask/distributed#7977, open): a job submitted after a quiet moment
  opens a new default span. `ForgetFinishedSpans` drops a span once none of its task groups has
  been known to the scheduler for `SPAN_GRACE_SECONDS` (its tasks all forgotten; a worker's
  heartbeat reports metrics by span for a few seconds after a task ends, and the extension looks
  the span up then).
- Its histories (the transition log, the events of each topic, the recent messages of each
  connection, the log records of each Dask node) hold up to 1,000 or 10,000 entries each, which
  jobs add to a few at a time: they fill over thousands of jobs. `HISTORY_SETTINGS` bound
  them to `HISTORY` entries; the app reads none of them but the events of a job's own client.
"""

from __future__ import annotations

import time

from distributed.diagnostics.plugin import SchedulerPlugin

HISTORY = 100
"""Entries each of the scheduler's histories keeps (Dask's defaults: 1,000 and 10,000)."""
HISTORY_SETTINGS = {"distributed.admin.low-level-log-length": HISTORY, "distributed.admin.log-length": HISTORY}
SPAN_GRACE_SECONDS = 120.0
"""Seconds a finished span is kept after its last task group was forgotten."""


class ForgetFinishedSpans(SchedulerPlugin):
    """Drops the spans whose task groups the scheduler has all forgotten, `SPAN_GRACE_SECONDS` after it did.

    Looked at when a job is submitted (the only time spans are added), so an idle scheduler does nothing.
    """

    name = "feedback-lab-forget-finished-spans"

    def __init__(self):
        self._finished_since: dict[str, float] = {}  # span id -> when none of its task groups was alive any more

    def update_graph(self, scheduler, **kwargs) -> None:
        self.forget(scheduler, time.monotonic())

    def forget(self, scheduler, now: float) -> list[str]:
        """Drop the root spans (with their sub-spans) finished for the grace period; their ids."""
        spans = scheduler.extensions["spans"]
        dropped = []
        for span in list(spans.root_spans):
            if any(scheduler.task_groups.get(group.name) is group for group in span.traverse_groups()):
                self._finished_since.pop(span.id, None)
                continue
            if now - self._finished_since.setdefault(span.id, now) >= SPAN_GRACE_SECONDS:
                for sub in list(span.traverse_spans()):
                    del spans.spans[sub.id]
                    _remove(spans.spans_search_by_name, sub.name, sub)
                    for tag in sub.name:
                        _remove(spans.spans_search_by_tag, tag, sub)
                spans.root_spans.remove(span)
                del self._finished_since[span.id]
                dropped.append(span.id)
        return dropped


def _remove(index: dict, key, span) -> None:
    """Take `span` out of the list `index[key]`, and the key with its list once empty."""
    index[key].remove(span)
    if not index[key]:
        del index[key]
