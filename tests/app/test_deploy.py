"""deploy/compose.yaml's topology on loopback, without Docker: the compose file's own commands for a Dask scheduler,
one CPU worker and two web processes, deploy/nginx.conf in front, one runs folder.

Two learners on different web processes each start a run: the second waits for the one CPU, says so, and runs
after the first. A learner on each web process answers the bandit page's cards, and the teacher's room view (on
whichever process nginx gives it) counts both, through the scheduler's board. Then a web process is killed with kill -9 during its run: the run stops (the scheduler lets go of
the dead process's jobs), keeps every step it wrote, and the CPU is free for the next job.
"""

from __future__ import annotations

import asyncio
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from app.jobs.cluster import JOB_PREFIX, Cluster
from app.jobs.runs import read_run
from app.jobs.scheduler_upkeep import HISTORY
from app.serving.room import TOKEN_VARIABLE
from bench.load_test import ROOM_GUIDE, Classroom, PageSession, keyed
from bench.servers import NGINX, ROOT, answers, free_port, loopback_config, start_server, stop_server, wait_until
from tests.app.test_cluster import scheduler_histories

pytestmark = [pytest.mark.server, pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")]

SERVICES = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
ENVIRONMENT = SERVICES["scheduler"]["environment"]
"""What every service of the compose file gets (FEEDBACK_LAB_RUNS is replaced by the test's folder)."""
TEACHER_TOKEN = "the-deploy-tests-teacher"
"""Both web processes' teacher token (the compose file asks for one FEEDBACK_LAB_TEACHER_TOKEN for both)."""
RUN = "?steps={steps}&prompts=2&replies=2&T=8&eval_every={steps}&eval_prompts=1&eval_replies=1"
"""A small run of the embedded model: a second or so per step on these cores."""


def command(service: str, scheduler: str, services: dict = SERVICES) -> list[str]:
    """A service's command from a compose file (`services`), with the scheduler's loopback address for its own
    (tcp:// or tls://) and `python -m` for `dask`."""
    words = [scheduler if w.endswith("://scheduler:8786") else w for w in shlex.split(services[service]["command"])]
    return [sys.executable, "-m", *words] if words[0] == "dask" else words


@pytest.fixture(scope="module")
def topology(tmp_path_factory):
    """The compose file's scheduler, CPU worker, web-1 and web-2, and nginx, all on loopback, one runs folder."""
    tmp = tmp_path_factory.mktemp("deploy")
    runs = tmp / "runs"
    runs.mkdir()
    env = {**os.environ, **ENVIRONMENT, "FEEDBACK_LAB_RUNS": str(runs), "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           TOKEN_VARIABLE: TEACHER_TOKEN}
    port = free_port()
    scheduler = f"tcp://127.0.0.1:{port}"
    started = []

    def spawn(args, name):
        started.append(subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=(tmp / f"{name}.log").open("w")))
        return started[-1]

    scheduler_words = command("scheduler", scheduler)
    scheduler_words[scheduler_words.index("--port") + 1] = str(port)
    spawn(scheduler_words, "scheduler")
    spawn(command("cpu-worker", scheduler), "worker")
    cluster = Cluster(scheduler)
    wait_until(lambda: _connected(cluster) and cluster.devices() == ["cpu"], 120, "the worker to join the scheduler")
    proxy_port = free_port()
    webs = []
    for service in ("web-1", "web-2"):
        words = command(service, scheduler)
        options = words[words.index("serve") + 1:]
        options[options.index("--port"):options.index("--port") + 2] = []
        origin = {"FEEDBACK_LAB_WEBSOCKET_ORIGIN": f"localhost:{proxy_port}"}
        webs.append(start_server(*options, env={k: env[k] for k in (*ENVIRONMENT, "FEEDBACK_LAB_RUNS", TOKEN_VARIABLE)} | origin))
    ports = tuple(int(w.url.rsplit(":", 1)[1]) for w in webs)
    (tmp / "nginx.conf").write_text(loopback_config(tmp, proxy_port, ports))
    nginx = spawn([NGINX, "-p", str(tmp), "-c", str(tmp / "nginx.conf")], "nginx")
    wait_until(lambda: answers(f"http://localhost:{proxy_port}/healthz"), 120, "nginx")
    yield type("Topology", (), {"scheduler": scheduler, "cluster": cluster, "webs": webs, "runs": runs, "tmp": tmp,
                                "proxy": f"http://localhost:{proxy_port}", "env": env})
    cluster.close()
    for web in webs:
        stop_server(web)
    for process in reversed(started):
        process.send_signal(signal.SIGINT if process is not nginx else signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def job_queues(dask_scheduler) -> list[str]:
    """On the scheduler: the names of the model jobs' queues it holds."""
    return [name for name in dask_scheduler.extensions["queues"].queues if name.startswith(JOB_PREFIX)]


def _connected(cluster: Cluster) -> bool:
    try:
        cluster.start()
        return True
    except RuntimeError:
        return False


def listening(session: PageSession) -> list[str]:
    """Every text the page sends after this call (status lines, notices), gathered from its document patches."""
    heard, patched = [], session._patched

    def patched_and_heard(events):
        heard.extend(e["new"] for e in events if e.get("kind") == "ModelChanged" and isinstance(e.get("new"), str))
        patched(events)

    session._patched = patched_and_heard
    return heard


def finished_runs(runs: Path) -> list:
    return [r for r in (read_run(f) for f in sorted(runs.iterdir()) if (f / "config.json").is_file()) if r.finished]


def test_two_learners_on_two_web_processes_wait_in_one_line_for_the_one_cpu(topology):
    async def learners():
        first = await PageSession.open(topology.proxy, "live-run", RUN.format(steps=40))  # through nginx
        upstream = (topology.tmp / "access.log").read_text().splitlines()[0].split()[0]
        other = next(w for w in topology.webs if not w.url.endswith(upstream.rsplit(":", 1)[1]))
        second = await PageSession.open(other.url, "live-run", RUN.format(steps=3))  # the other web process
        heard = listening(second)
        await first.settle()
        await second.settle()
        await first.click("Start")
        while not any(f.is_dir() for f in topology.runs.iterdir()):
            await asyncio.sleep(0.2)
        await second.click("Start")
        while not any("(place 1 in line)" in text for text in heard):
            await asyncio.sleep(0.2)
        line = topology.cluster.overview()
        while len(finished_runs(topology.runs)) < 2:
            await asyncio.sleep(0.5)
        for session in (first, second):
            await session.close()
        return line

    line = asyncio.run(asyncio.wait_for(learners(), 600))
    assert [(q.device, q.running, q.waiting) for q in line] == [
        ("cpu", ("embedded · vader · β 0.05 · 40 steps",), ("embedded · vader · β 0.05 · 3 steps",))]
    first, second = sorted(finished_runs(topology.runs), key=lambda r: r.config["settings"]["steps"], reverse=True)
    # The second run's folder was made once the first run had written its last step: one run at a time on the CPU.
    assert (second.folder / "config.json").stat().st_mtime >= (first.folder / "metrics.jsonl").stat().st_mtime
    assert [m["step"] for m in second.metrics] == [1, 2, 3]
    assert "Traceback" not in "".join(w.log() for w in topology.webs)
    # The compose file's worker trains without Dask's malloc trim threshold (app.jobs.cluster.NO_TRIM_THRESHOLD).
    assert list(topology.cluster.client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values()) == [None]


def test_the_compose_files_scheduler_keeps_short_histories_and_forgets_finished_spans(topology):
    assert topology.cluster.client.run_on_scheduler(scheduler_histories) == (HISTORY, HISTORY, True)


def test_a_web_process_killed_during_its_run_stops_the_run_and_keeps_its_steps(topology):
    runs = topology.runs
    web = start_server("--scheduler", topology.scheduler, env={"FEEDBACK_LAB_RUNS": str(runs)})
    before = set(runs.iterdir())

    def new_run():
        return next(iter(set(runs.iterdir()) - before), None)

    async def learner():
        session = await PageSession.open(web.url, "live-run", RUN.format(steps=2000))
        await session.settle()
        await session.click("Start")
        while new_run() is None or len(read_run(new_run()).metrics) < 2:  # the tab stays open meanwhile
            await asyncio.sleep(0.2)
        web.process.send_signal(signal.SIGKILL)
        web.process.wait(10)
        await session.close()

    asyncio.run(asyncio.wait_for(learner(), 300))
    # The scheduler lets go of the dead client's job; its worker stops it after the step in flight.
    wait_until(lambda: topology.cluster.overview() == [], 60, "the CPU to be free")
    written = read_run(new_run()).metrics
    time.sleep(3)
    run = read_run(new_run())
    assert run.metrics == written and not run.finished  # it trains no more
    assert [m["step"] for m in run.metrics] == list(range(1, len(run.metrics) + 1))  # every step it wrote, whole
    assert topology.cluster.device_for("auto") == "cpu"  # and the CPU's worker takes the next job
    # Nor is anything of it left on the scheduler: the worker gave back the dead reader's hold on the job's queue.
    wait_until(lambda: topology.cluster.client.run_on_scheduler(job_queues) == [], 10, "the job's queue to go")


def test_the_room_view_counts_a_learner_on_each_web_process(topology):
    async def room():
        room = Classroom()
        teacher = await PageSession.open(topology.proxy, "room", f"?token={TEACHER_TOKEN}")  # on either process
        teacher.on_tally = lambda t, counts: room.shown.append((t, keyed(counts)))
        heard = listening(teacher)
        learners = [await PageSession.open(web.url, "bandit", guide=ROOM_GUIDE) for web in topology.webs]
        for learner in learners:
            await learner.settle(quiet=0.3)
        given = [await learner.answer_cards(random.Random(k), room) for k, learner in enumerate(learners)]

        async def shown(expected: dict, learners_line: str) -> None:
            while not (room.shown and room.shown[-1][1] == expected and any(learners_line in text for text in heard)):
                await asyncio.sleep(0.1)

        await asyncio.wait_for(shown(room.expected(), "2 learners are here now: Bandit"), 20)
        assert all(given) and sum(n for choices in room.expected().values() for n in choices.values()) == sum(map(len, given))
        await learners[1].close()  # the second process's learner closes the tab: their votes stay, for the lesson
        await asyncio.wait_for(shown(room.expected(), "1 learner is here now: Bandit"), 20)
        for session in (learners[0], teacher):
            await session.close()

    asyncio.run(room())
    assert "Traceback" not in "".join(w.log() for w in topology.webs)
