"""The Dask cluster that runs every model job, and a web process's view of it.

A model job (a live REINFORCE run, sampling preference pairs, training a reward model, the
tau sweep, sampling the KL frontier) is one Dask task. It runs in a worker process, never in
the web process, so the pages keep the web process's interpreter to themselves. Devices are
worker resources: a job asks for one unit of `cpu`, `cuda` or `mps`, and a worker offers as
many units of its device as `--max-runs-per-device`, so at most that many jobs use one device
across every web process and every learner; the others wait on the worker, first come first
served (Dask's task priority is the order of submission).

`feedback-lab serve` starts a local cluster: the scheduler in a process of its own and one
worker process per device, their nannies in the web process (`local_cluster`); with
`--scheduler tcp://HOST:PORT` (or FEEDBACK_LAB_SCHEDULER) it joins an existing one instead,
started with `dask scheduler` and `dask worker --resources cpu=1` (see the README); with
`tls://HOST:PORT`, over TLS with Dask's own TLS settings (docs/tls.md).

A job streams: the task walks an engine generator and puts each snapshot, pickled, on a Dask
`Queue` named for the job, which the web process reads (2 to 5 ms from put to get, measured
on loopback; tailing the run files would cost a poll interval and does not serve the jobs
that write none). Pause is a Dask `Event` the task looks at after every snapshot. Stop (Stop
pressed, the tab closed) cancels the task's future; the task sees itself cancelled after the
snapshot in flight and closes its generator, so its files are complete. If the web process
dies, its client leaves the scheduler, which releases the job's future: the task sees that
in the same way, stops, and gives back the dead reader's hold on the queue. If the worker dies, the scheduler fails the job at once
(`allowed-failures` 0: a run is never started again from scratch behind its owner's back) and
the nanny starts a fresh worker for the next job.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import pickle
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engines.snapshots import Waiting

SCHEDULER_VARIABLE = "FEEDBACK_LAB_SCHEDULER"
"""Environment variable: the address of an existing Dask scheduler to join (default: start a local cluster)."""
SLOTS_VARIABLE = "FEEDBACK_LAB_RUNS_PER_DEVICE"
"""Environment variable: how many model jobs may use one device at once (default RUNS_PER_DEVICE)."""
RUNS_PER_DEVICE = 6
"""Model jobs training at once on one device by default: a class's handful of distinct live runs all step from
the start instead of waiting minutes in line, while on the CPU they take turns for its cores (COMPUTE_TURNS),
so together they go as fast as two would (docs/performance.md, "The class's live runs")."""
JOB_NICENESS = 10
"""Niceness of a job's thread on its worker (Linux): when the jobs and the web process want the same cores, the
kernel gives the web process about nine tenths, so learners' pages stay quick while runs train."""
POLL_SECONDS = 0.25
"""Seconds between looks at a waiting job's place in line, or at a paused job's Resume: a Stop acts within this time."""
STREAM_SECONDS = 0.1
"""Seconds between looks at a job's stream when it was empty: a snapshot reaches the page within about this time."""
STOP_SECONDS = 30.0
"""Longest wait, after a stop, for the job's step in flight and its word that it ended."""
CONNECT_SECONDS = 10.0
"""Seconds to wait for a scheduler given by address before saying it cannot be reached."""
JOB_PREFIX = "feedback-lab-job-"
"""Every model job's task key starts so: JOB_PREFIX + id | device | label."""
DEVICE_ORDER = ("cuda", "mps", "cpu")
"""What 'auto' picks, the first a worker of the cluster offers."""
NO_TRIM_THRESHOLD = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
"""Dask's nanny starts each worker with MALLOC_TRIM_THRESHOLD_=65536, to hand freed memory back to the system at
once. Set at all, it also fixes glibc's mmap threshold at 128 KiB: every tensor above it is mapped and unmapped
afresh, and a REINFORCE step of the embedded model took 0.71 s instead of 0.42 (`bench/bench_lm.py`, this 2-core
machine, one torch thread). None: the worker starts without it (the compose file does the same for its workers)."""
LOOPBACK = "127.0.0.1"
"""Where a local cluster's scheduler and workers listen: only this machine reaches them."""
MONITOR_HISTORY = "distributed.admin.system-monitor.log-length"
MONITOR_SAMPLES = 120
"""Samples of CPU, memory and network a Dask system monitor keeps (one every 0.5 s: a minute; Dask's default is an hour)."""
LOG = logging.getLogger("feedback_lab")
_END = object()


@dataclass(frozen=True)
class Queued:
    """A snapshot of a job still waiting for its device."""

    device: str
    """The device it waits for."""
    position: int | None
    """Its place in line: 1 = next (None while the scheduler has not yet handed it to a worker)."""

    def waiting(self, what: str, starts_in: float | None = None, snapshot: object = None) -> Waiting:
        """The job's word for the page (engines.snapshots): `what` waits, where in line and, once a run ahead has a
        pace (`starts_in` seconds, app.jobs.shared_runs.estimate_start), about when it starts; with `snapshot`, what
        the page draws meanwhile."""
        ahead = "" if self.position is None else f" (place {self.position} in line)"
        when = "" if starts_in is None else f" It should start in about {format_wait(starts_in)}."
        return Waiting(f"{what} waits for the {self.device}{ahead}: every place this server gives jobs on it is taken, "
                       f"and the live-run page lists what is running.{when} Closing this tab takes it out of the line.", snapshot)


def format_wait(seconds: float) -> str:
    """A wait as a person says it: 42 -> '40 s', 151 -> '2 min 30 s', 1000 -> '17 min' (to 5 s, 10 s, a minute)."""
    if seconds < 90:
        return f"{max(round(seconds / 5) * 5, 5)} s"
    if seconds < 600:
        minutes, rest = divmod(round(seconds / 10) * 10, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    return f"{round(seconds / 60)} min"


@dataclass(frozen=True)
class Started:
    """The job's first snapshot: a worker took it and its device is the job's now."""

    worker: str
    """The worker's address."""


@dataclass(frozen=True)
class Paused:
    """Sent when a job stops at a snapshot because its owner pressed Pause; the next snapshot means it resumed."""


@dataclass(frozen=True)
class Ended:
    """The job's last word, sent once its generator is closed (its files too), however it ended."""


@dataclass(frozen=True)
class DeviceQueue:
    """What one device is doing across the cluster: the labels of its running and of its waiting jobs, in order."""

    device: str
    running: tuple[str, ...]
    waiting: tuple[str, ...]


class WorkerDied(RuntimeError):
    """The worker running a job died (killed, or out of memory); the message is the sentence for the page."""


class SchedulerUnreachable(RuntimeError):
    """The scheduler named by --scheduler or FEEDBACK_LAB_SCHEDULER does not answer; the message says so."""


TLS_SETTINGS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")
"""The Dask settings a web process needs to join a scheduler at tls://: the CA that signed the cluster's certificates,
and this process's own certificate (its key appended, or in distributed.comm.tls.client.key). See docs/tls.md."""


def dask_variable(setting: str) -> str:
    """The environment variable of a Dask setting: distributed.comm.tls.ca-file -> DASK_DISTRIBUTED__COMM__TLS__CA_FILE."""
    return "DASK_" + setting.upper().replace(".", "__").replace("-", "_")


def check_tls_settings(address: str) -> None:
    """SchedulerUnreachable, with one sentence, unless Dask's TLS settings name files this process can load.

    Dask itself says only that it got no SSL context when a setting is missing, and that there is no such
    file (not which) when a file is missing.
    """
    import dask
    from distributed.security import Security

    missing = [dask_variable(s) for s in TLS_SETTINGS if not dask.config.get(s, None)]
    if missing:
        raise SchedulerUnreachable(f"The Dask scheduler at {address} cannot be reached: this process lacks TLS "
                                   f"settings (set {' and '.join(missing)}; see docs/tls.md).")
    for setting in (*TLS_SETTINGS, "distributed.comm.tls.client.key"):
        path = dask.config.get(setting, None)
        try:
            if path:
                open(path, "rb").close()
        except OSError as error:
            raise SchedulerUnreachable(f"The Dask scheduler at {address} cannot be reached: the TLS file {path} "
                                       f"({dask_variable(setting)}) cannot be read ({error.strerror}).") from error
    try:
        Security().get_connection_args("client")
    except OSError as error:  # ssl.SSLError: not PEM, or a key that is not the certificate's
        raise SchedulerUnreachable(f"The Dask scheduler at {address} cannot be reached: this process's TLS files "
                                   f"do not load as a PEM certificate and its key ({error}).") from error


def refusal(error: BaseException) -> str:
    """Why a connection to the scheduler failed, in words: Dask's message, or the TLS handshake's failure, which
    Dask words as several sentences, as none, or inside the text of a closed connection."""
    import ssl

    cause = error
    while cause is not None and not isinstance(cause, ssl.SSLError):
        # Tornado keeps the error that closed a stream as its `real_error`, not as a cause.
        cause = cause.__cause__ or cause.__context__ or getattr(cause, "real_error", None)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"its TLS certificate is not signed by this process's CA: {cause.verify_message}"
    # A scheduler that refuses a certificate ends the handshake with an alert, or closes the connection before the
    # client reads the alert (TLS 1.3 judges the client's certificate after the client has finished its part).
    if isinstance(cause, ssl.SSLEOFError) or (isinstance(cause, ssl.SSLError) and "ALERT" in (cause.reason or "")):
        return "it ended the TLS handshake, as it does when its CA did not sign this process's certificate"
    # A scheduler without TLS greets first: its greeting is either in Tornado's stream before the handshake (Tornado's
    # ValueError) or read as the handshake's answer (OpenSSL's wrong version).
    if "cannot convert to SSL" in str(error) or (isinstance(cause, ssl.SSLError) and cause.reason == "WRONG_VERSION_NUMBER"):
        return "it does not speak TLS: a tcp:// scheduler"
    return str(cause if isinstance(cause, ssl.SSLError) else error)


def slots_from_environment() -> int:
    """FEEDBACK_LAB_RUNS_PER_DEVICE as a whole number >= 1 (default RUNS_PER_DEVICE)."""
    text = os.environ.get(SLOTS_VARIABLE, str(RUNS_PER_DEVICE)).strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{SLOTS_VARIABLE} must be a whole number >= 1, got {text!r}.")
    return int(text)


# ----------------------------------------------------------------------------- on the worker

_run_ids: dict[str, str] = {}
"""Task key -> the run folder it writes, for the jobs running in this worker process (read by `_worker_jobs`)."""


class TakeTurns:
    """At most `n` holders at once, the others served first come, first served.

    A thread that lets go and asks again at once queues behind those already waiting (a plain
    Semaphore lets it barge ahead, and one job could starve the rest).
    """

    def __init__(self, n: int):
        self._free, self._line, self._changed = n, collections.deque(), threading.Condition()

    def __enter__(self) -> None:
        ticket = object()
        with self._changed:
            self._line.append(ticket)
            while self._line[0] is not ticket or self._free == 0:
                self._changed.wait()
            self._line.popleft()
            self._free -= 1
            self._changed.notify_all()  # the next in line may find a turn free too

    def __exit__(self, *exc) -> None:
        with self._changed:
            self._free += 1
            self._changed.notify_all()


COMPUTE_TURNS = TakeTurns(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
"""In a worker process: a job computes its next snapshot (a training step) only while it holds a turn, one per core
the process may use. Jobs beyond that wait between their steps instead of all computing at once: six runs of the
embedded model stepping in turns on two cores made 5.50 steps a second in all, against 4.76 when all six computed
at once (threads and the interpreter lock fighting over two cores) and 5.35 for two alone (`python -m
bench.bench_turns`, 2026-12-06)."""


def lower_priority() -> None:
    """Give this thread (a job's, on its worker) JOB_NICENESS on Linux, where a thread has a niceness of its own."""
    if sys.platform == "linux":
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), JOB_NICENESS)
        except OSError:  # a container that forbids it: the job runs at the worker's priority
            LOG.debug("Could not lower a job's priority", exc_info=True)


def _cancelled(worker, key: str) -> bool:
    """True once the scheduler has let go of the task `key`: its future was cancelled, or its owner's client left."""
    task = worker.state.tasks.get(key)
    return task is None or task.state not in ("executing", "long-running")


def _client_left(worker, client: str) -> bool:
    """Whether the scheduler has seen the client `client` leave (its process exited or was killed)."""
    from distributed.utils import sync

    try:
        events = sync(worker.loop, worker.scheduler.events, topic=client)
    except Exception:  # the scheduler is going away too: nothing to tidy there
        LOG.debug("Asking the scheduler about client %s failed", client, exc_info=True)
        return False
    return any(event.get("action") == "remove-client" for _, event in events)


def run_job(work: bytes, stream: str, pause: str, owner: str) -> bool:
    """The Dask task of every model job: walk `make(*args)` (`work` is the pair pickled), put each snapshot (pickled)
    on the Queue `stream`.

    Returns True when the generator ran to its end, False when the job was stopped. Each snapshot
    is computed holding one of the worker's COMPUTE_TURNS, on a thread of lowered priority. After each
    snapshot it holds while the Event `pause` is set, and stops once cancelled; closing the
    generator there runs its `finally` (files closed) on this thread. The queue lives on the
    scheduler while both its reader (the client `owner`) and this task hold it; if the owner's
    process died, this task gives back the reader's hold too, so the queue and the snapshots
    nobody will read are dropped.
    """
    from distributed import Event, Queue, get_worker

    from app.jobs.scheduler_upkeep import forget_key_names

    lower_priority()
    worker = get_worker()
    key = worker.get_current_task()
    out, paused = Queue(stream), Event(pause)
    out.put(pickle.dumps(Started(worker.address)))
    make, args = pickle.loads(work)
    snapshots = make(*args)
    try:
        while True:
            with COMPUTE_TURNS:
                snapshot = next(snapshots, _END)
            if snapshot is _END:
                break
            run_id = getattr(snapshot, "run_id", None)
            if isinstance(run_id, str):
                _run_ids[key] = run_id
            out.put(pickle.dumps(snapshot))
            if paused.is_set():
                out.put(pickle.dumps(Paused()))
                while paused.is_set() and not _cancelled(worker, key):
                    time.sleep(POLL_SECONDS)
            if _cancelled(worker, key):
                return False
        return True
    finally:
        snapshots.close()
        _run_ids.pop(key, None)
        out.put(pickle.dumps(Ended()))
        out.close()  # the scheduler drops the queue once the reader has closed it too
        if _cancelled(worker, key) and _client_left(worker, owner):
            out.close()  # the reader's share: its process is gone
        paused.clear()
        forget_key_names()  # this job's key, split by the worker: see app/jobs/scheduler_upkeep.py


def _worker_jobs(dask_worker) -> list[tuple[str, bool, tuple, str | None]]:
    """(key, running, priority, run folder) of every model job a worker holds: running, or waiting for its device."""
    state = dask_worker.state
    jobs = [(t.key, True, t.priority, _run_ids.get(t.key)) for t in state.executing if str(t.key).startswith(JOB_PREFIX)]
    jobs += [(t.key, False, t.priority, None) for t in state.constrained if str(t.key).startswith(JOB_PREFIX)]
    return jobs


def job_device(key: str) -> str:
    """The device a job's task key names (JOB_PREFIX + id | device | label)."""
    return key.split("|", 2)[1]


def job_label(key: str) -> str:
    """The label a job's task key carries (what the device queue shows)."""
    return key.split("|", 2)[2]


# ----------------------------------------------------------------------------- in the web process


class Job:
    """One submitted model job, seen from the web process that asked for it."""

    def __init__(self, cluster: Cluster, future, key: str, device: str, stream, pause):
        self.cluster, self.future, self.key, self.device = cluster, future, key, device
        self._stream, self._pause = stream, pause
        self._stopped_at: float | None = None

    def snapshots(self, idle: bool = False) -> Iterator:
        """Queued while the job waits, then Started and the job's own snapshots (Paused when it holds).

        A stopped job's snapshots go on until its worker has closed it: the step in flight
        is written to its files and reaches the reader too (for at most STOP_SECONDS). With `idle`, also None every STREAM_SECONDS while a started job computes, so that the
        reader's StreamingRun hands over a snapshot it held back within that time. Ends when the
        job does; raises WorkerDied if its worker died, or the job's own exception. Closing this
        generator (Stop, the tab closed) stops the job.
        """
        started = False
        try:
            while not self.cluster.closing:
                # Polled, not a blocking get with a timeout: the scheduler logs every timed-out get as an error.
                batch = [pickle.loads(data) for data in self._stream.get(batch=True)]
                ended = any(isinstance(item, Ended) for item in batch)
                for item in batch:
                    if isinstance(item, Ended):
                        break
                    started = True
                    yield item
                if ended:
                    break
                if batch:
                    continue
                if self.future.status in ("error", "finished"):
                    break  # the worker died, or the job ended before it could say so
                if self.future.status == "cancelled" and self._stopped_at is None:
                    self._stopped_at = time.monotonic()  # let go of by the scheduler (its client closing), not by stop()
                if self.future.status == "cancelled" and (not started or time.monotonic() - self._stopped_at > STOP_SECONDS):
                    break  # stopped while waiting, or the step in flight never came (its worker died meanwhile)
                if not started:
                    yield Queued(self.device, self.cluster.place(self.key))
                elif idle:
                    yield None
                time.sleep(STREAM_SECONDS)
            if self.cluster.closing:
                return  # the process exits: nobody reads on
            if self.future.status != "cancelled":
                self.future.exception(timeout=STOP_SECONDS)  # wait for the scheduler's word on how it ended
            if self.future.status == "error":
                from distributed import KilledWorker

                error = self.future.exception()
                if isinstance(error, KilledWorker):
                    raise WorkerDied("The worker process running this job died (it was killed or ran out of memory)")
                raise error
        finally:
            self.stop()
            if self.future.client.status == "running":
                self._stream.close()

    def pause(self) -> None:
        """Hold the job after the snapshot in flight; it keeps its device."""
        self._pause.set()

    def resume(self) -> None:
        self._pause.clear()

    def stop(self) -> None:
        """Stop the job after the snapshot in flight (a waiting job leaves the line); any thread, any number of times.

        Cancelling a finished job's future releases it too: a worker that died later would
        otherwise run the job again for a future nobody reads.
        """
        if self.future.client.status != "running":
            return  # the process is closing its connection: the scheduler lets go of its jobs itself
        if self._stopped_at is None:
            self._stopped_at = time.monotonic()
        from distributed.client import ClosedClientError

        try:
            self._pause.clear()
            self.future.cancel()
        except ClosedClientError:
            pass  # it closed meanwhile (the process exiting): the scheduler lets go of its jobs itself


class Cluster:
    """The web process's client of the cluster: submit jobs, see every device's line. Thread-safe.

    Connects on first use (or on `start()`): to `address` when given, else to a local
    cluster it starts, one worker process per device with `slots` units of it.
    """

    def __init__(self, address: str | None = None, slots: int = 1):
        self.address, self.slots = address or None, slots
        self._lock = threading.Lock()
        self._client = None
        self._cluster = None
        self._jobs: list[tuple] = []
        self._jobs_at = -1.0
        self._listeners: list[Callable[[], None]] = []
        self._watcher: threading.Thread | None = None
        self.closing = False
        """Set as the process exits: the jobs' readers stop reading, and nothing is reported as failed."""

    @property
    def client(self):
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    @property
    def connected(self) -> bool:
        """Whether this process has connected to its cluster (a page must not start one by being opened)."""
        return self._client is not None

    def start(self) -> None:
        """Connect now (SchedulerUnreachable with one sentence if the scheduler given does not answer)."""
        self.client  # noqa: B018 (connecting is the point)

    def _connect(self):
        import dask
        from distributed import Client

        from app.jobs.scheduler_upkeep import HISTORY_SETTINGS

        # allowed-failures 0: a job whose worker died fails at once instead of starting again from
        # scratch (a second run folder). work-stealing off: a job is pinned to its device, so there is
        # nothing to steal, and the stealing extension keeps every stopped job's task, arguments included
        # (a set of pairs, ~3 MB), until a job of the same kind finishes (distributed 2026.8, WorkStealing.unknown_durations).
        # The system monitor's history: a local cluster's scheduler has no dashboard to draw it, yet kept an hour of
        # samples (7,200 per quantity, about 0.5 kB each), which grew the server through its first hour (when it ran in
        # the web process); a minute is kept instead.
        # The scheduler's histories and finished spans: app/jobs/scheduler_upkeep.py.
        dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.work-stealing": False,
                         NO_TRIM_THRESHOLD: None, MONITOR_HISTORY: MONITOR_SAMPLES, **HISTORY_SETTINGS})
        if self.address:
            if self.address.startswith("tls://"):
                check_tls_settings(self.address)
            try:
                client = Client(self.address, timeout=CONNECT_SECONDS, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as error:  # ValueError: an address without a port, or see refusal()
                raise SchedulerUnreachable(f"The Dask scheduler at {self.address} cannot be reached ({refusal(error)}).") from error
        else:
            self._cluster = local_cluster(self.slots)
            client = Client(self._cluster, set_as_default=False)
        # Registered after Dask's own exit handlers, so it runs before them: the readers stop before the workers do.
        atexit.register(self.close)
        return client

    def _resources(self) -> list[dict]:
        """Each worker's resources (device -> units), as the scheduler knows them now."""
        return [w.get("resources") or {} for w in self.client.scheduler_info(n_workers=-1)["workers"].values()]

    def devices(self) -> list[str]:
        """The devices the cluster's workers offer, best first ('cuda', 'mps', 'cpu')."""
        offered = {name for resources in self._resources() for name in resources}
        return [d for d in DEVICE_ORDER if d in offered]

    def capacity(self, device: str) -> int:
        """How many jobs may use `device` at once, summed over the cluster's workers."""
        return int(sum(resources.get(device, 0) for resources in self._resources()))

    def device_for(self, choice: str) -> str:
        """The device a job asking for `choice` ('auto', 'cpu', 'cuda', 'cuda:N', 'mps') runs on; ValueError if none offers it."""
        devices = self.devices()
        if choice == "auto":
            if not devices:
                raise ValueError("No worker of this server's cluster offers a device yet; try again in a moment.")
            return devices[0]
        kind = choice.split(":")[0]
        if kind not in devices:
            offered = ", ".join(devices) or "none"
            raise ValueError(f"No worker of this server's cluster has a {kind} device (offered: {offered}); choose auto.")
        return kind

    def submit(self, device: str, label: str, make: Callable[..., Iterator], *args) -> Job:
        """Run the generator `make(*args)` as a job on one unit of `device` (make must be importable by the workers)."""
        import cloudpickle
        from distributed import Event, Queue

        from app.jobs.scheduler_upkeep import STREAM_SUFFIX

        key = f"{JOB_PREFIX}{uuid.uuid4().hex[:12]}|{device}|{label}"
        client = self.client
        stream, pause = Queue(key + STREAM_SUFFIX, client=client), Event(f"{key}|pause", client=client)
        # fifo_timeout 0: every job its own generation of priorities, so the line is first come, first served
        # (Dask's default lets jobs submitted within 100 ms pass each other).
        # The job's generator and arguments go pickled, as bytes the scheduler passes on unread: it unpickles what a task
        # is given, and `make`'s module would make it import torch (a scheduler of 60 MB grew to 280 MB).
        work = cloudpickle.dumps((make, args))
        future = client.submit(run_job, work, stream.name, pause.name, client.id, key=key, resources={device: 1}, pure=False,
                               fifo_timeout=0)
        self._jobs_at = -1.0  # the line has changed
        return Job(self, future, key, device, stream, pause)

    def jobs(self, fresh: float = POLL_SECONDS) -> list[tuple]:
        """(key, running, priority, run folder) of every job of the cluster, at most `fresh` seconds old."""
        with self._lock:
            if time.monotonic() - self._jobs_at < fresh:
                return self._jobs
        try:
            found = [job for jobs in self.client.run(_worker_jobs).values() for job in jobs]
        except Exception:  # a worker died or left mid-call: the last known line stands until the next look
            LOG.debug("Reading the cluster's jobs failed", exc_info=True)
            return self._jobs
        with self._lock:
            self._jobs, self._jobs_at = found, time.monotonic()
        return found

    def place(self, key: str) -> int | None:
        """A waiting job's place in its device's line (1 = next), None if no worker holds it yet."""
        device = job_device(key)
        waiting = [k for k, running, priority, _ in sorted(self.jobs(), key=lambda j: j[2]) if not running
                   and job_device(k) == device]
        return waiting.index(key) + 1 if key in waiting else None

    def overview(self) -> list[DeviceQueue]:
        """Every device with a job running or waiting, across every web process of the cluster."""
        lines: dict[str, tuple[list, list]] = {}
        for key, running, _, _ in sorted(self.jobs(fresh=0.0), key=lambda j: j[2]):
            lines.setdefault(job_device(key), ([], []))[0 if running else 1].append(job_label(key))
        return [DeviceQueue(d, tuple(r), tuple(w)) for d, (r, w) in lines.items()]

    def running_ids(self) -> set[str]:
        """The folder names of the runs training now, on every device."""
        return {run_id for _, running, _, run_id in self.jobs(fresh=0.0) if running and run_id}

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` (from a watcher thread) whenever the cluster's jobs change; returns the unsubscribe function."""
        with self._lock:
            self._listeners.append(listener)
            if self._watcher is None or not self._watcher.is_alive():
                self._watcher = threading.Thread(target=self._watch, name="feedback-lab-cluster-watch", daemon=True)
                self._watcher.start()

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _watch(self) -> None:
        """While anyone listens, look at the cluster's jobs every 2 POLL_SECONDS and tell the listeners of a change."""
        seen = None
        while True:
            with self._lock:
                listeners = list(self._listeners)
                if not listeners:
                    self._watcher = None
                    return
            if self.connected:
                now = [(k, r, f) for k, r, _, f in self.jobs(fresh=0.0)]
                if now != seen:
                    seen = now
                    for listener in listeners:
                        listener()
            time.sleep(2 * POLL_SECONDS)

    def close(self) -> None:
        self.closing = True
        with self._lock:
            client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


def local_cluster(slots: int):
    """The scheduler in a process of its own (`SchedulerProcess`), and one worker process per device: the CPU
    (`slots` units of resource 'cpu', `slots` threads), each GPU, Apple's mps.

    Worker processes, not threads, so a job never holds the web process's interpreter lock;
    the jobs of one worker are its threads, and on the CPU each computes on one core
    (app.jobs.model_jobs.train_on_worker), taking turns for the cores (COMPUTE_TURNS). Their
    nannies stay in the web process: a worker whose nanny's process is gone exits by itself.
    """
    from distributed import Nanny, SpecCluster

    from app.jobs.scheduler_upkeep import SchedulerProcess

    options = {"host": LOOPBACK, "nthreads": slots, "resources": {"cpu": slots}, "dashboard": False, "dashboard_address": None,
               "silence_logs": logging.WARNING, "preload": [__name__]}
    workers = {"cpu": {"cls": Nanny, "options": options}}
    for name, device, env in local_accelerators():
        workers[name] = {"cls": Nanny, "options": options | {"resources": {device: slots}, "env": env}}
    return SpecCluster(workers=workers, scheduler={"cls": SchedulerProcess, "options": {"host": LOOPBACK}}, silence_logs=logging.WARNING,
                       name="feedback-lab")


def dask_setup(worker) -> None:
    """A local worker's preload (`local_cluster`): it leaves SIGINT to its server. A terminal's Ctrl-C reaches every
    process of its foreground group, the workers too; the server then closes its cluster, which stops them, while a
    worker stopped by the signal itself printed a KeyboardInterrupt's traceback as if it had failed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_accelerators() -> list[tuple[str, str, dict]]:
    """(worker name, device, environment) of each accelerator of this machine: every NVIDIA GPU that answers
    `nvidia-smi -L` (one worker each, told its GPU by CUDA_VISIBLE_DEVICES), or Apple silicon's mps.
    The web process does not import torch to ask."""
    import platform
    import shutil
    import subprocess

    if platform.system() == "Darwin" and platform.machine() == "arm64":
        return [("mps", "mps", {})]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = sum(line.startswith("GPU ") for line in listing.splitlines())
    return [(f"cuda-{i}", "cuda", {"CUDA_VISIBLE_DEVICES": str(i)}) for i in range(gpus)]


CLUSTER = Cluster(os.environ.get(SCHEDULER_VARIABLE), slots_from_environment())
"""The cluster every page of this web process submits its model jobs to."""


def install(cluster: Cluster) -> None:
    """Make `cluster` the one the pages use (`feedback-lab serve` does, with its options)."""
    global CLUSTER
    CLUSTER = cluster


def current() -> Cluster:
    return CLUSTER
