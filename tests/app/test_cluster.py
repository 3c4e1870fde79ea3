"""Model jobs on a real Dask cluster: streaming, the device's line, pause, stop, a failing job, a killed worker.

Every test uses this test session's local cluster (app.jobs.cluster.current(): one worker process with
one 'cpu' slot, started on first use, shared by every test of the session). The jobs here are small
generators of this module, sent to the worker by value.
"""

import asyncio
import gc
import os
import signal
import sys
import threading
import time

import cloudpickle
import pytest

from app.jobs import cluster as cluster_module
from app.jobs.cluster import (
    JOB_NICENESS,
    RUNS_PER_DEVICE,
    Cluster,
    Paused,
    Queued,
    Started,
    TakeTurns,
    current,
    slots_from_environment,
)
from app.jobs.model_jobs import Failed, LiveRun, TrainingView, train_reward_model
from app.jobs.runs import read_run
from app.jobs.scheduler_upkeep import (
    HISTORY,
    SPAN_GRACE_SECONDS,
    STREAM_SUFFIX,
    ForgetFinishedComputations,
    ForgetFinishedSpans,
    ForgetOrphanedStreams,
)
from bench.load_test import settled
from bench.servers import free_port, start_server, stop_server, wait_until
from engines.lm.preferences import BUNDLED_PAIRS, load_pairs
from engines.lm.reward_model import RewardModelSettings
from engines.lm.settings import LMSettings

pytestmark = pytest.mark.server  # every test here starts a process (an app server, nginx, or the Dask cluster the model jobs run on)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the worker cannot import a test module by name


def counting(n: int, seconds: float):
    """A job: 0, 1, ..., n-1, one every `seconds`."""
    for i in range(n):
        time.sleep(seconds)
        yield i


def failing():
    yield "first"
    raise ValueError("This job asks for more than the device has.")


def pid_then_count(n: int, seconds: float):
    """A job that says which process runs it, then counts."""
    yield os.getpid()
    yield from counting(n, seconds)


def own(snapshots):
    """The job's own snapshots (not the queue's)."""
    return [s for s in snapshots if not isinstance(s, (Queued, Started))]


def environment_variable(name: str):
    """A job: the value of the environment variable `name` in the process that runs it."""
    yield os.environ.get(name)


def test_a_worker_starts_without_dask_s_malloc_trim_threshold():
    # Set at all, it fixes glibc's mmap threshold and each training step maps its tensors afresh (NO_TRIM_THRESHOLD).
    job = current().submit("cpu", "its environment", environment_variable, "MALLOC_TRIM_THRESHOLD_")
    assert own(job.snapshots()) == [None]


def scheduler_monitor_length(dask_scheduler) -> int:
    """Run on the scheduler: how many samples of each quantity its system monitor keeps."""
    return dask_scheduler.monitor.maxlen


def test_the_local_scheduler_keeps_a_minute_of_system_monitor_history():
    # It has no dashboard to draw it; Dask's default hour grew the server for an hour (when it ran in the web process).
    kept = current().client.run_on_scheduler(scheduler_monitor_length)
    assert kept == cluster_module.MONITOR_SAMPLES


def scheduler_histories(dask_scheduler) -> tuple[int, int, bool]:
    """Run on the scheduler: its transition log's and its log records' bounds, and whether ForgetFinishedSpans and
    ForgetFinishedComputations are installed."""
    return (dask_scheduler.transition_log.maxlen, dask_scheduler._deque_handler.deque.maxlen,
            {ForgetFinishedSpans.name, ForgetFinishedComputations.name} <= set(dask_scheduler.plugins))


def test_the_local_scheduler_keeps_short_histories_and_forgets_finished_spans_and_computations():
    # Dask's 1,000 transitions and 10,000 log records grew it over thousands of jobs.
    assert current().client.run_on_scheduler(scheduler_histories) == (HISTORY, HISTORY, True)


def split_keys_cached() -> int:
    """Run anywhere: how many task keys dask.utils.key_split's cache holds."""
    from dask.utils import key_split

    return key_split.cache_info().currsize


def forgets_key_names_periodically(dask_scheduler) -> tuple[bool, int]:
    """Run on the scheduler: whether the periodic clearing of split keys is installed, and the cache's size after it ran."""
    callback = dask_scheduler.periodic_callbacks.get("feedback-lab-forget-key-names")
    if callback is not None:
        callback.callback()
    return callback is not None, split_keys_cached()


def test_the_scheduler_and_the_worker_forget_the_keys_of_finished_jobs():
    # Dask caches the last 100,000 keys it split, and every job's key is new (app/jobs/scheduler_upkeep.py).
    cluster = current()
    for _ in range(3):
        list(cluster.submit("cpu", "test", counting, 1, 0.0).snapshots())
    assert all(cached <= 1 for cached in cluster.client.run(split_keys_cached).values())  # at most the last job's key
    assert cluster.client.run_on_scheduler(forgets_key_names_periodically) == (True, 0)


def trims_freed_memory() -> bool:
    """Run on the scheduler: whether its thread that hands freed memory back to the system runs."""
    import threading

    from app.freed_memory import TRIM_THREAD

    return any(t.name == TRIM_THREAD for t in threading.enumerate())


def test_the_local_scheduler_runs_in_a_process_of_its_own_that_returns_freed_memory():
    assert current().client.run_on_scheduler(os.getpid) != os.getpid()
    from app.freed_memory import glibc_malloc_trim

    assert current().client.run_on_scheduler(trims_freed_memory) is (glibc_malloc_trim() is not None)


def test_a_served_local_cluster_listens_on_loopback_only_and_not_on_dask_s_fixed_http_port():
    """Whoever reaches a Dask scheduler, nanny or worker can run any code on it (CVE-2021-42343 was a local cluster
    listening beyond loopback): `feedback-lab serve`'s web process (with the nannies), its scheduler's process and its
    worker's listen on loopback only, the web server too by default (--address localhost)."""
    import psutil

    server = start_server()
    try:
        web = psutil.Process(server.process.pid)
        sockets = {p.pid: {(c.laddr.ip, c.laddr.port) for c in p.net_connections("inet") if c.status == psutil.CONN_LISTEN}
                   for p in (web, *web.children(recursive=True))}
    finally:
        stop_server(server)
    assert sum(bool(found) for found in sockets.values()) == 3  # the web process, the scheduler's, the worker's
    assert int(server.url.rsplit(":", 1)[1]) in {port for _, port in sockets[web.pid]}
    assert {ip for found in sockets.values() for ip, _ in found} <= {"127.0.0.1", "::1"}
    assert 8787 not in {port for found in sockets.values() for _, port in found}  # a second server on the machine would find it taken


def last_heartbeat(dask_scheduler) -> float:
    """Run on the scheduler: when the worker it heard from least recently was last heard from (time.time())."""
    return min(worker.last_seen for worker in dask_scheduler.workers.values())


def forget_twice(running: str, dask_scheduler=None) -> tuple[set, list, set, str]:
    """Run on the scheduler: the span ids before, those a fresh ForgetFinishedSpans drops looking twice a grace
    apart, the span ids after, and the span of the task `running`."""
    spans = dask_scheduler.extensions["spans"]
    before, plugin, now = set(spans.spans), ForgetFinishedSpans(), time.monotonic()
    assert plugin.forget(dask_scheduler, now) == []  # the first look starts the grace
    dropped = plugin.forget(dask_scheduler, now + SPAN_GRACE_SECONDS)
    return before, dropped, set(spans.spans), dask_scheduler.tasks[running].group.span_id


def run_until_forgotten(cluster: Cluster) -> None:
    """Run a one-snapshot job to its end, and wait until the scheduler has forgotten its task."""
    finished = cluster.submit("cpu", "finished", counting, 1, 0.0)
    assert own(finished.snapshots()) == [0]
    key = finished.key
    del finished
    gc.collect()  # the future released: the scheduler forgets the task
    wait_until(lambda: not cluster.client.run_on_scheduler(lambda dask_scheduler: key in dask_scheduler.tasks), 60, "the task forgotten")


def test_a_finished_jobs_span_is_dropped_after_the_grace_and_a_running_jobs_span_is_kept():
    cluster = current()
    run_until_forgotten(cluster)
    # The grace stands for the worker's heartbeat, which reports the finished task's metrics by span: wait for one.
    forgotten = cluster.client.run_on_scheduler(lambda dask_scheduler: time.time())
    wait_until(lambda: cluster.client.run_on_scheduler(last_heartbeat) > forgotten, 60, "a heartbeat")
    running = cluster.submit("cpu", "running", counting, 10_000, 0.01)
    snapshots = running.snapshots()
    assert next(s for s in snapshots if not isinstance(s, (Queued, Started))) == 0
    before, dropped, after, kept = cluster.client.run_on_scheduler(forget_twice, running.key)
    assert dropped and kept in after and after == before - set(dropped)
    snapshots.close()  # stops the job
    again = cluster.submit("cpu", "after the spans were dropped", counting, 2, 0.0)
    assert own(again.snapshots()) == [0, 1]  # a new span is opened for it


def computations(task: str, dask_scheduler=None) -> tuple[int, bool] | None:
    """Run on the scheduler: how many of its computations hold only task groups it forgot, and whether the newest holds
    the group of the task `task`; None while it does not know that task yet."""
    if task not in dask_scheduler.tasks:
        return None
    known = lambda group: dask_scheduler.task_groups.get(group.name) is group  # noqa: E731
    kept = dask_scheduler.computations
    return sum(not any(map(known, c.groups)) for c in kept), dask_scheduler.tasks[task].group in kept[-1].groups


def test_a_finished_jobs_computation_is_dropped_when_the_next_job_is_submitted_and_a_running_jobs_is_kept():
    # Dask keeps the last 100 computations, each with task groups the scheduler forgot (ForgetFinishedComputations).
    cluster = current()
    run_until_forgotten(cluster)
    running = cluster.submit("cpu", "running", counting, 10_000, 0.01)
    snapshots = running.snapshots()
    assert next(s for s in snapshots if not isinstance(s, (Queued, Started))) == 0
    assert cluster.client.run_on_scheduler(computations, running.key) == (0, True)
    joining = cluster.submit("cpu", "submitted while the scheduler is busy", counting, 1, 0.0)
    wait_until(lambda: cluster.client.run_on_scheduler(computations, joining.key) is not None, 60, "the job submitted")
    assert cluster.client.run_on_scheduler(computations, joining.key) == (0, True)  # it joins the running job's
    snapshots.close()  # stops the running job: the joining one runs next
    assert own(joining.snapshots()) == [0]


def test_a_job_streams_every_snapshot_in_order_and_ends():
    job = current().submit("cpu", "a count", counting, 5, 0.01)
    assert own(job.snapshots()) == [0, 1, 2, 3, 4]
    wait_until(lambda: current().overview() == [], 60, "the device free")


def test_a_snapshot_reaches_the_reader_soon_after_it_is_made():
    job = current().submit("cpu", "a count", counting, 20, 0.2)
    seen, made = [], time.monotonic()
    for snapshot in job.snapshots():
        if isinstance(snapshot, int):
            seen.append(time.monotonic())
            if len(seen) == 5:
                break
    gaps = [b - a for a, b in zip(seen, seen[1:])]
    # A snapshot every 0.2 s arrives every 0.2 s: streaming adds no lag that grows, nor one near the 0.5 s goal.
    assert all(0.05 < g < 0.45 for g in gaps), gaps
    assert seen[0] - made < 10  # the first, after the worker took the job


def test_the_jobs_own_error_reaches_the_reader_after_its_snapshots():
    job = current().submit("cpu", "a failing job", failing)
    seen = []
    with pytest.raises(ValueError, match="more than the device has"):
        for snapshot in job.snapshots():
            seen.append(snapshot)
    assert own(seen) == ["first"]


def test_waiting_jobs_see_their_place_and_a_closed_one_leaves_the_line():
    cluster = current()
    first = cluster.submit("cpu", "first", counting, 200, 0.05)
    second, third = cluster.submit("cpu", "second", counting, 2, 0.0), cluster.submit("cpu", "third", counting, 2, 0.0)
    a, b, c = first.snapshots(), second.snapshots(), third.snapshots()
    assert 0 in a  # the first runs
    wait_until(lambda: next(c) == Queued("cpu", 2), 60, "place 2")
    assert next(b) == Queued("cpu", 1)
    assert [(q.device, q.running, q.waiting) for q in cluster.overview()] == [("cpu", ("first",), ("second", "third"))]
    b.close()  # the tab of the second closed while it waited
    wait_until(lambda: next(c) == Queued("cpu", 1), 60, "place 1")
    a.close()  # the first is stopped: the third runs
    assert own(c) == [0, 1]
    wait_until(lambda: cluster.overview() == [], 60, "the device free")


def test_pause_holds_the_device_and_stop_acts_within_a_step(tmp_path):
    job = current().submit("cpu", "a count", counting, 1000, 0.05)
    snapshots = job.snapshots()
    assert 3 in snapshots
    job.pause()
    rest = []
    for s in snapshots:
        rest.append(s)
        if isinstance(s, Paused):
            break
    time.sleep(0.5)
    assert current().overview()[0].running == ("a count",)  # paused, it keeps its place on the device
    job.resume()
    resumed = next(snapshots)
    assert resumed == rest[-2] + 1  # it continues where it held
    job.stop()
    t = time.monotonic()
    tail = own(snapshots)
    assert time.monotonic() - t < 1.0 and len(tail) <= 3  # ended within a step or two of 0.05 s


class Payload:
    """A job's argument, as big as a set of preference pairs; counted to see who still holds one."""

    def __init__(self):
        self.data = bytearray(3_000_000)


def holding(payload: Payload):
    """A job that keeps its argument until it is stopped."""
    while True:
        time.sleep(0.05)
        yield len(payload.data)


def test_a_job_stopped_midway_leaves_no_copy_of_its_arguments_in_the_web_process():
    # The local cluster's scheduler runs in this process and holds each job's task, arguments
    # included, while the job is known: once stopped jobs are forgotten, so are their arguments.
    for _ in range(3):
        snapshots = current().submit("cpu", "a held payload", holding, Payload()).snapshots()
        assert 3_000_000 in snapshots
        snapshots.close()
        wait_until(lambda: current().overview() == [], 60, "the device free")

    def held():
        gc.collect()
        return sum(isinstance(o, Payload) for o in gc.get_objects())

    wait_until(lambda: held() == 0, 10, "no copy held")


def job_queues(dask_scheduler) -> list[str]:
    """On the scheduler: the names of the model jobs' queues it holds."""
    return [name for name in dask_scheduler.extensions["queues"].queues if name.startswith(cluster_module.JOB_PREFIX)]


def test_a_job_whose_web_process_left_leaves_no_queue_on_the_scheduler():
    other = Cluster(current().client.scheduler.address)  # a second web process, joined to the same scheduler
    snapshots = other.submit("cpu", "an owner that leaves", counting, 1000, 0.05).snapshots()
    assert 3 in snapshots
    other.close()  # its client leaves without closing its reader's queue, as a killed process does
    wait_until(lambda: current().overview() == [], 60, "the device free")
    wait_until(lambda: current().client.run_on_scheduler(job_queues) == [], 10, "the job's queue to go")


def forget_orphans_twice(dask_scheduler=None) -> tuple[list, list, bool]:
    """Run on the scheduler: the streams a fresh ForgetOrphanedStreams drops at its first look and at its second, and
    whether the scheduler's own looks are installed."""
    orphans = ForgetOrphanedStreams()
    return orphans.forget(dask_scheduler), orphans.forget(dask_scheduler), "feedback-lab-forget-orphaned-streams" in dask_scheduler.periodic_callbacks


def test_the_stream_of_a_waiting_job_whose_web_process_left_is_dropped_and_a_running_jobs_is_kept():
    cluster = current()
    snapshots = (running := cluster.submit("cpu", "holding the device", counting, 10_000, 0.01)).snapshots()
    assert next(s for s in snapshots if not isinstance(s, (Queued, Started))) == 0
    other = Cluster(cluster.client.scheduler.address)  # a second web process, joined to the same scheduler
    waiting = other.submit("cpu", "an owner that leaves while its job waits", counting, 1, 0.0)
    wait_until(lambda: cluster.place(waiting.key) == 1, 60, "the job in line")
    other.close()  # its client leaves without closing its reader's queue, as a killed process does
    wait_until(lambda: waiting.key not in cluster.client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks)), 60,
               "the waiting job forgotten")
    orphan = waiting.key + STREAM_SUFFIX
    assert orphan in cluster.client.run_on_scheduler(job_queues)  # Dask keeps it: the job never started to close it
    first, second, installed = cluster.client.run_on_scheduler(forget_orphans_twice)
    assert first == [] and orphan in second and running.key + STREAM_SUFFIX not in second and installed
    assert next(s for s in snapshots if isinstance(s, int)) > 0  # the running job streams on
    snapshots.close()
    wait_until(lambda: cluster.client.run_on_scheduler(job_queues) == [], 10, "no queue left")


def test_a_live_run_whose_worker_is_killed_says_so_keeps_its_steps_and_the_next_run_works(tmp_path):
    """kill -9 of the worker mid-run: the run folder keeps every finished step, the page's sentence names the step,
    the nanny starts a fresh worker, and the next job runs there."""
    cluster = current()
    pid = next(iter(own(cluster.submit("cpu", "which worker", pid_then_count, 0, 0.0).snapshots())))
    settings = LMSettings(steps=500, prompts=2, replies=2, T=8, eval_every=100, eval_prompts=1, eval_replies=1, keep_samples=1,
                        device="cpu")
    run = LiveRun(settings, tmp_path, cluster)
    states = run.states()
    for state in states:
        if state.step >= 3:
            break
    os.kill(pid, signal.SIGKILL)
    last = list(states)[-1]
    assert last.phase == "error"
    on_disk = read_run(last.folder)
    assert last.message == ("The worker process running this job died (it was killed or ran out of memory): the run "
                            f"stopped at step {on_disk.metrics[-1]['step']}; the run {last.folder.name} holds every step done.")
    assert [m["step"] for m in on_disk.metrics] == list(range(1, len(on_disk.metrics) + 1)) and len(on_disk.metrics) >= 3
    assert not on_disk.finished
    after = own(cluster.submit("cpu", "which worker", pid_then_count, 2, 0.0).snapshots())
    assert after[0] != pid and after[1:] == [0, 1]  # a fresh worker process, started by the nanny


def test_a_reward_model_training_whose_worker_is_killed_says_so_in_one_sentence_and_the_next_runs():
    cluster = current()
    pid = next(iter(own(cluster.submit("cpu", "which worker", pid_then_count, 0, 0.0).snapshots())))
    pairs = load_pairs(BUNDLED_PAIRS)
    views = train_reward_model(pairs, RewardModelSettings(steps=5000, eval_every=1, d_model=16, layers=1), None, cluster)
    for view in views:
        if isinstance(view, TrainingView) and view.curve["step"][-1] >= 3:
            shown = int(view.curve["step"][-1])
            break
    os.kill(pid, signal.SIGKILL)
    rest = list(views)
    last = rest[-1]
    step = max([shown] + [int(v.curve["step"][-1]) for v in rest if isinstance(v, TrainingView)])
    assert last == Failed("The worker process running this job died (it was killed or ran out of memory): the training "
                          f"stopped at step {step} of 5000; press Start to train it again.")
    after = own(cluster.submit("cpu", "which worker", pid_then_count, 2, 0.0).snapshots())
    assert after[0] != pid and after[1:] == [0, 1]


def test_a_job_on_a_device_no_worker_offers_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="No worker of this server's cluster has a cuda device"):
        current().device_for("cuda")
    assert current().device_for("auto") == "cpu" and current().device_for("cpu") == "cpu"


@pytest.mark.parametrize("offered,auto", [(["cuda", "mps", "cpu"], "cuda"), (["mps", "cpu"], "mps"), (["cpu"], "cpu")])
def test_auto_picks_cuda_then_mps_then_the_cpu(monkeypatch, offered, auto):
    cluster = Cluster()
    monkeypatch.setattr(cluster, "devices", lambda: offered)
    assert cluster.device_for("auto") == auto and cluster.device_for(offered[0]) == offered[0]


def test_local_accelerators_give_mps_on_apple_silicon_and_a_worker_per_gpu(monkeypatch):
    import platform
    import shutil
    import subprocess
    from types import SimpleNamespace

    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert cluster_module.local_accelerators() == [("mps", "mps", {})]
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    listing = "GPU 0: NVIDIA H100 (UUID: GPU-a)\nGPU 1: NVIDIA H100 (UUID: GPU-b)\n"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=listing))
    assert cluster_module.local_accelerators() == [("cuda-0", "cuda", {"CUDA_VISIBLE_DEVICES": "0"}),
                                                   ("cuda-1", "cuda", {"CUDA_VISIBLE_DEVICES": "1"})]
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert cluster_module.local_accelerators() == []


def test_slots_from_the_environment(monkeypatch):
    monkeypatch.delenv("FEEDBACK_LAB_RUNS_PER_DEVICE", raising=False)
    assert slots_from_environment() == RUNS_PER_DEVICE
    monkeypatch.setenv("FEEDBACK_LAB_RUNS_PER_DEVICE", "3")
    assert slots_from_environment() == 3
    monkeypatch.setenv("FEEDBACK_LAB_RUNS_PER_DEVICE", "0")
    with pytest.raises(ValueError, match="FEEDBACK_LAB_RUNS_PER_DEVICE"):
        slots_from_environment()


def test_a_queued_sentence_names_the_device_and_the_place():
    assert Queued("cuda", 2).waiting("The training").sentence.startswith("The training waits for the cuda (place 2 in line): ")
    assert "(place" not in Queued("cpu", None).waiting("The sweep").sentence


def test_serve_with_a_scheduler_that_does_not_answer_says_so_and_exits_2():
    import subprocess

    done = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--port", str(free_port()), "--scheduler",
                           f"tcp://127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()  # one sentence
    assert line.startswith("feedback-lab serve: error: The Dask scheduler at tcp://127.0.0.1:") and "cannot be reached" in line


@pytest.mark.parametrize("stop, status", [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGTERM, 0)], ids=["kill -9", "SIGTERM"])
def test_a_local_schedulers_own_process_and_its_workers_exit_with_their_web_process(stop, status):
    """The local cluster's scheduler runs in a process of its own (so its records of jobs grow no web process) and
    does not outlive a web process killed with kill -9, nor do the workers: nothing trains on unattended. SIGTERM
    (`docker stop`, Compose, systemd) stops the server as Ctrl-C does: status 0, through its exit handlers, which
    close the cluster, so no worker's semaphore is left for the resource tracker to report.

    The signal comes once the server has settled: during its start-up the worker is loading the default model on a
    thread it must finish before it exits, and a worker that takes longer than its nanny's close allows is killed.
    """
    import psutil

    server, processes = start_server(), []
    try:
        asyncio.run(settled(server, longest=120))
        processes = psutil.Process(server.process.pid).children(recursive=True)
        (scheduler,) = [p for p in processes if p.cmdline()[1:4] == ["-m", "dask", "spec"]]
        assert "distributed.Scheduler" in " ".join(scheduler.cmdline())
        assert any("spawn_main" in " ".join(p.cmdline()) for p in processes)  # the CPU's worker
        server.process.send_signal(stop)
        assert server.process.wait(30) == status
        wait_until(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes), 30,
                   "the scheduler and the workers to exit")
        if stop == signal.SIGTERM:
            assert "leaked semaphore" not in server.log()
    finally:
        stop_server(server)
        for process in processes:  # what a failed check left
            if process.is_running():
                process.kill()


def thread_niceness():
    """A job: the niceness of the thread that runs it."""
    yield os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own niceness is Linux's")
def test_a_job_runs_at_a_lower_priority_than_the_web_process():
    (niceness,) = own(current().submit("cpu", "niceness", thread_niceness).snapshots())
    assert niceness == JOB_NICENESS > os.getpriority(os.PRIO_PROCESS, 0)


def test_jobs_take_turns_for_the_cores_first_come_first_served():
    """At most n compute at once; one that lets go and asks again queues behind those already waiting."""
    turns, inside, most, order = TakeTurns(2), [0], [0], []
    lock = threading.Lock()

    def job(name: str, steps: int) -> None:
        for _ in range(steps):
            with turns:
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    order.append(name)
                time.sleep(0.02)
                with lock:
                    inside[0] -= 1

    threads = [threading.Thread(target=job, args=(name, 5)) for name in "abcd"]
    for t in threads:
        t.start()
        time.sleep(0.005)  # a, b, c, d ask in that order
    for t in threads:
        t.join()
    assert most[0] == 2 and sorted(order) == sorted("abcd" * 5)
    # No job gets ahead: at every point, each has had its turns within two of every other's (a plain Semaphore
    # lets the job that lets go take the turn again at once, and one job can run all its steps in a row).
    for i in range(1, len(order) + 1):
        counts = [order[:i].count(name) for name in "abcd"]
        assert max(counts) - min(counts) <= 2, order
