"""The scheduler's upkeep: what it keeps of finished jobs is bounded, and a local cluster's scheduler runs in a process of its own that exits with its web process.

A preload module: the local cluster starts its scheduler with it (`SchedulerProcess`, app/jobs/cluster.py), and a
department's scheduler takes it with `dask scheduler --preload app.jobs.scheduler_upkeep`. A scheduler
serves a class for weeks, and a job is submitted whenever a learner trains a reward model or starts
a run. Four of the scheduler's records of past work grew with every job
(`python -m bench.soak --pages reward-model`, whose every visit trains a reward model for a moment;
tracemalloc over 150 visits of a server whose scheduler then ran in the web process, 2026-12-05):

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
  They are configuration, read when the scheduler starts: the local cluster passes them on; a
  department's scheduler takes them from its environment (README, deploy/compose.yaml).
- Dask's cache of split task keys keeps the last 100,000 keys (found later, by tracemalloc in the
  scheduler's own process under `python -m bench.scheduler_memory`'s jobs): `forget_key_names`
  empties it every `KEY_NAMES_MS` (and each worker after every job, `app.jobs.cluster.run_job`).
- Dask's computations (the jobs submitted while it was busy, grouped; deprecated in favour of spans)
  keep the last 100, each with its TaskGroups, long after the scheduler forgot them (dask/distributed#7977's
  note; found by tracemalloc in the scheduler's process during the reward-model soak, where a visit after
  a quiet moment opened one): `ForgetFinishedComputations` drops a computation once the scheduler has
  forgotten all its task groups.

A job's stream (the Dask Queue its snapshots go through, app/jobs/cluster.py) is created by the web
process that submits the job and by the job's task as it starts, and dropped once both have
closed it. A web process that dies while its job still waits for the device never closes its
share, and the task, forgotten with the process's client, never starts: `ForgetOrphanedStreams`
drops such a queue once the scheduler has not known its job for two of its looks, `ORPHANS_MS` apart.

With `--exit-with-parent` (the local cluster's), the scheduler closes once the process that started it
is gone: a web process killed with kill -9 leaves no scheduler behind, and its worker processes, whose
nanny lived in the web process, exit by themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import click
from distributed.deploy.subprocess import SubprocessScheduler
from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from app.freed_memory import trim_freed_memory

HISTORY = 100
"""Entries each of the scheduler's histories keeps (Dask's defaults: 1,000 and 10,000)."""
HISTORY_SETTINGS = {"distributed.admin.low-level-log-length": HISTORY, "distributed.admin.log-length": HISTORY}
SPAN_GRACE_SECONDS = 120.0
"""Seconds a finished span is kept after its last task group was forgotten."""
START_SECONDS = 60
"""Longest wait for a local cluster's scheduler process to listen."""
PARENT_CHECK_MS = 1000
"""Milliseconds between a local scheduler's looks at whether its web process is still there."""
KEY_NAMES_MS = 60_000
"""Milliseconds between the scheduler's clearings of the cache of split task keys (`forget_key_names`)."""
ORPHANS_MS = 60_000
"""Milliseconds between the scheduler's looks for the streams of jobs it no longer knows (`ForgetOrphanedStreams`)."""
STREAM_SUFFIX = "|stream"
"""A job's stream is the Dask Queue named its task's key and this."""


@click.command()
@click.option("--exit-with-parent", is_flag=True, help="close the scheduler once the process that started it has gone")
def dask_setup(scheduler, exit_with_parent: bool) -> None:
    """The preload's entry point (Dask calls it as the scheduler starts): install the upkeep below, return freed
    memory to the system every few seconds as the web process does, and watch the parent."""
    scheduler.add_plugin(ForgetFinishedSpans())
    scheduler.add_plugin(ForgetFinishedComputations())
    trim_freed_memory()
    scheduler.periodic_callbacks["feedback-lab-forget-key-names"] = PeriodicCallback(forget_key_names, KEY_NAMES_MS)
    orphans = ForgetOrphanedStreams()
    scheduler.periodic_callbacks["feedback-lab-forget-orphaned-streams"] = PeriodicCallback(lambda: orphans.forget(scheduler), ORPHANS_MS)
    if exit_with_parent:
        parent = os.getppid()

        def close_if_orphaned() -> None:
            if os.getppid() != parent and scheduler.status.name == "running":  # adopted by init: the web process died
                asyncio.ensure_future(scheduler.close(reason="its web process exited"))

        # Started by the scheduler with its own periodic callbacks, right after the preloads.
        scheduler.periodic_callbacks["feedback-lab-exit-with-parent"] = PeriodicCallback(close_if_orphaned, PARENT_CHECK_MS)


def forget_key_names() -> None:
    """Empty `dask.utils.key_split`'s cache, which keeps the last 100,000 task keys it split.

    The scheduler splits every task's key, a worker every key it runs, and each job's key is new: the
    cache held on to them all, about 0.2 kB a job (tracemalloc in the scheduler's process, 2026-12-05).
    Splitting a key again costs microseconds.
    """
    from dask.utils import key_split

    key_split.cache_clear()


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
            if any(_known(scheduler, group) for group in span.traverse_groups()):
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


class ForgetFinishedComputations(SchedulerPlugin):
    """Drops the computations whose task groups the scheduler has all forgotten.

    A Computation is Dask's record of the work submitted while the scheduler was busy: a job submitted
    to an idle scheduler opens one, and jobs submitted while it runs join it. The scheduler keeps the
    last 100 (`distributed.diagnostics.computations.max-history`), each with its TaskGroups, after it has
    forgotten them; nothing in Dask reads a computation but the next submission, which joins the newest
    while the scheduler is busy (then its groups are known, and it is kept). In the reward-model soak
    about one visit in eight opened one, and the scheduler's traced memory grew with each
    (tracemalloc in the scheduler's process, 2026-12-05). Looked at when a job is submitted, as spans are.
    """

    name = "feedback-lab-forget-finished-computations"

    def update_graph(self, scheduler, **kwargs) -> None:
        self.forget(scheduler)

    def forget(self, scheduler) -> int:
        """Drop the computations none of whose task groups the scheduler knows; how many."""
        finished = [c for c in scheduler.computations if not any(_known(scheduler, group) for group in c.groups)]
        for computation in finished:
            scheduler.computations.remove(computation)
        return len(finished)


class ForgetOrphanedStreams:
    """Drops the stream of a job whose task the scheduler no longer knows, at its second look that finds it so.

    A living reader closes its share within seconds of its job's end or stop (app.jobs.cluster.Job.snapshots),
    and a job's task closes its own as it ends: a stream still there a look later, its job unknown
    both times, has nobody left to read or to write it (its web process died while the job waited).
    The second look spares a stream whose job is being submitted, created a moment before its task.
    """

    def __init__(self):
        self._unknown: set[str] = set()  # streams whose job the scheduler did not know at the last look

    def forget(self, scheduler) -> list[str]:
        """Drop the streams whose job was unknown at this look and the last; their names."""
        queues = scheduler.extensions["queues"]
        unknown = {name for name in queues.queues if name.endswith(STREAM_SUFFIX) and name[:-len(STREAM_SUFFIX)] not in scheduler.tasks}
        dropped = sorted(unknown & self._unknown)
        for name in dropped:
            queues.client_refcount[name] = 1  # every holder's share at once: Dask's release drops the queue at zero
            queues.release(name=name)
        self._unknown = unknown - set(dropped)
        return dropped


class SchedulerProcess(SubprocessScheduler):
    """A local cluster's Dask scheduler, in a process of its own (`python -m dask spec`), given this process's Dask
    configuration, with this module preloaded and `--exit-with-parent`.

    Its own process, not the web process's event loop: a scheduler records every job (task groups, spans,
    transitions, messages), and in the web process those records and the churn of their allocations grew
    the server's resident memory in steps that never came back down (+20 +- 4 kB per reward-model visit over
    400, `python -m bench.soak --pages reward-model`; README), besides taking its interpreter lock for
    every message. Distributed's own SubprocessScheduler passes no configuration and reads the scheduler's
    log only on failure, from a pipe a busy scheduler would fill: the start is done here instead.
    """

    def __init__(self, host: str):
        # dashboard_address: the scheduler's HTTP server (health and metrics, even without a dashboard) on a free port,
        # not Dask's 8787, which the second server of a machine found taken, with a warning.
        super().__init__({"host": host, "port": 0, "dashboard": False, "dashboard_address": f"{host}:0", "preload": [__name__],
                          "preload_argv": ["--exit-with-parent"]}, timeout=START_SECONDS)

    async def _start(self) -> None:
        import dask

        settings = dask.config.merge(dask.config.global_config, {"logging": {"distributed": "warning"}})
        spec = json.dumps({"cls": "distributed.Scheduler", "opts": self.scheduler_kwargs})
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "dask", "spec", "--spec", spec,
            env={**os.environ, "DASK_INTERNAL_INHERIT_CONFIG": dask.config.serialize(settings)},
            # A session of its own: a terminal's Ctrl-C, which reaches every process of its foreground group, stops
            # the server, which then closes its cluster, scheduler last. Reached by the Ctrl-C too, the scheduler was
            # gone before the cluster asked it to retire the workers, and that close waited on it (40 s to minutes).
            # (--exit-with-parent still ends it with a server killed with kill -9.)
            start_new_session=True)
        identity = self.scheduler_kwargs["scheduler_file"]  # written by the scheduler once it listens
        deadline = time.monotonic() + self.timeout
        while self.process.returncode is None and time.monotonic() < deadline:
            try:
                with open(identity) as file:
                    self.address = json.load(file)["address"]
                return
            except (OSError, ValueError):  # not written yet, or half written
                await asyncio.sleep(0.1)
        raise RuntimeError(f"The cluster's scheduler did not start within {self.timeout} s "
                           f"(exit status {self.process.returncode}); its log is above.")


def _known(scheduler, group) -> bool:
    """Whether the scheduler still knows this task group (it makes a new one of the same name once it forgot the old)."""
    return scheduler.task_groups.get(group.name) is group


def _remove(index: dict, key, span) -> None:
    """Take `span` out of the list `index[key]`, and the key with its list once empty."""
    index[key].remove(span)
    if not index[key]:
        del index[key]
