"""`feedback-lab serve --web-processes 2`: two web processes behind nginx, one Dask cluster, one runs folder.

nginx's generated configuration is checked by nginx itself. Then one server of two web processes, as
`serve` starts it: browsers from one address are spread over both processes, each page and its websocket
on one; learners of both processes pressing Start on the same settings share one run folder, which
trains on for the learner of the second process after the first process's learners have left and stops
when the last leaves; a forged session token is refused on each process; a web process killed with
kill -9 is started again while the other one's learners carry on; SIGTERM stops every process, and so does a
terminal's Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time

import psutil
import pytest
from bokeh.util.token import generate_jwt_token, generate_session_id

from app.jobs.cluster import Cluster
from app.jobs.runs import read_run
from app.serving.room import BOARD_KEY, TOKEN_VARIABLE
from app.serving.web_processes import ROUTE_COOKIE, nginx_binary, nginx_config, web_processes_from
from bench.load_test import PageSession, settled
from bench.servers import NGINX, document_roots, get_page, pull_document, start_server, stop_server, wait_until
from tests.app.test_deploy import listening

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")

TEACHER_TOKEN = "the-web-processes-teacher"
LONGEST_RUN = 5000
"""The live run's most steps, and the `two` server's --max-steps: a run this long of the small settings below takes
minutes here (0.03 s a step), so it cannot end by itself in the seconds the test needs."""
RUN = f"?steps={LONGEST_RUN}&prompts=2&replies=2&T=8&eval_every={LONGEST_RUN}&eval_prompts=1&eval_replies=1"
"""A small run of the embedded model that only a stop ends."""
STOP_SECONDS = 5.0
"""A run stops within this long of its last learner leaving, besides the step it is in (the page's session ends at
Bokeh's next check, within a second of its websocket closing: app.serving.server.end_sessions_when_their_page_closes)."""


@pytest.mark.server
def test_the_generated_configuration_is_one_nginx_accepts(tmp_path):
    (tmp_path / "nginx.conf").write_text(nginx_config("0.0.0.0", 8080, [10001, 10002, 10003], tmp_path, 20_000_000))
    checked = subprocess.run([nginx_binary(), "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr


def test_the_number_of_web_processes_is_checked_in_one_sentence(monkeypatch):
    monkeypatch.setenv("FEEDBACK_LAB_WEB_PROCESSES", "3")
    assert web_processes_from(None) == (3, "") and web_processes_from(1) == (1, "")  # the option wins
    with pytest.raises(ValueError, match="at least 1"):
        web_processes_from(0)
    monkeypatch.setenv("FEEDBACK_LAB_WEB_PROCESSES", "two")
    with pytest.raises(ValueError, match="must be a whole number"):
        web_processes_from(None)
    monkeypatch.setattr("app.serving.web_processes.nginx_binary", lambda: None)
    monkeypatch.delenv("FEEDBACK_LAB_WEB_PROCESSES")
    with pytest.raises(ValueError, match="nginx is not installed"):
        web_processes_from(2)
    n, note = web_processes_from(None)  # the default, without nginx: one process, and the operator is told why
    assert n == 1 and "nginx is not installed" in note


def children(server) -> tuple[dict[int, psutil.Process], psutil.Process]:
    """The server's web processes by port, and its nginx."""
    web, proxy = {}, None
    for child in psutil.Process(server.process.pid).children():
        try:
            words = child.cmdline()
        except psutil.Error:  # one that has just exited, not yet waited for
            continue
        if "serve" in words:
            web[int(words[len(words) - 1 - words[::-1].index("--port") + 1])] = child
        elif child.name() == "nginx":
            proxy = child
    return web, proxy


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    server = start_server("--web-processes", "2", env={TOKEN_VARIABLE: TEACHER_TOKEN, "FEEDBACK_LAB_RUNS": str(runs),
                                                       "FEEDBACK_LAB_MAX_STEPS": str(LONGEST_RUN)}, up_seconds=240)
    server.runs = runs
    yield server
    stop_server(server)


async def open_and_check(base: str) -> tuple[str, bool]:
    """A new browser opens /bandit through nginx: (its cookie, whether the document its websocket pulled is the one
    whose roots the page's HTML named, i.e. built once, on one process)."""
    token, headers, html = get_page(base, "bandit", "")
    document = json.loads(await pull_document(base, "bandit", token, headers))
    return headers.get("Cookie", ""), document_roots(html) == {root["id"] for root in document["doc"]["roots"]}


def board(server) -> dict[str, dict]:
    """The room's board on the server's Dask scheduler: each web process's entry (its learners by page)."""
    from distributed import Client

    with Client(scheduler_of(server), timeout=30) as client:
        entries = client.get_metadata([BOARD_KEY, "processes"], default={})
    return {process: entry for process, entry in entries.items() if entry}


@pytest.mark.server
def test_browsers_from_one_address_are_spread_and_each_page_meets_its_websocket_on_one_process(two):
    async def browsers():
        opened = [await open_and_check(two.url) for _ in range(8)]
        held = [await PageSession.open(two.url, "bandit") for _ in range(10)]  # ten more tabs, held open
        counted = {}
        for _ in range(100):
            counted = {process: entry.get("pages", {}).get("bandit", 0) for process, entry in board(two).items()}
            if sum(counted.values()) == len(held):
                break
            await asyncio.sleep(0.2)
        for session in held:
            await session.close()
        return opened, counted

    opened, counted = asyncio.run(browsers())
    assert all(same for _, same in opened)  # every page's websocket reached the process that built it
    assert len({cookie for cookie, _ in opened}) == 8 and all(c.startswith(ROUTE_COOKIE + "=") for c, _ in opened)
    # The ten tabs, all from this one address, are counted by both processes, ten in all.
    assert len(counted) == 2 and all(n > 0 for n in counted.values()) and sum(counted.values()) == 10, counted


def new_folders(runs, before: set) -> list:
    return sorted(set(runs.iterdir()) - before)


def scheduler_of(server) -> str:
    """The address of the Dask scheduler the server's web processes joined."""
    words = next(iter(children(server)[0].values())).cmdline()
    return words[len(words) - 1 - words[::-1].index("--scheduler") + 1]


def jobs_on_workers(server) -> list:
    """The model jobs the cluster's workers hold (running or waiting), as a web process sees them."""
    cluster = Cluster(scheduler_of(server))
    try:
        return cluster.overview()
    finally:
        cluster.close()


@pytest.mark.server
def test_learners_of_both_processes_share_one_run_which_stops_when_the_last_of_them_leaves(two):
    ports = sorted(children(two)[0])
    before = set(two.runs.iterdir())

    async def learners():
        # Two learners on each process press Start on the same settings within a second.
        pages = [await PageSession.open(f"http://127.0.0.1:{port}", "live-run", RUN) for port in ports * 2]
        heard = [listening(page) for page in pages]
        for page in pages:
            await page.settle()
        await asyncio.gather(*(page.click("Start") for page in pages))
        while not all(any(re.search(rf"Running on cpu: ([3-9]|\d\d+) of {LONGEST_RUN} ", text) for text in said) for said in heard):
            await asyncio.sleep(0.2)
        folders = new_folders(two.runs, before)
        # The pages of the process that lost the race to start the run follow it from the other one.
        follows = [any("another web process" in text for text in said) for said in heard]
        for page, follower in zip(pages, follows):  # every learner of the process that trains the run leaves
            if not follower:
                await page.close()
        steps = len(read_run(folders[0]).metrics)
        while len(read_run(folders[0]).metrics) < steps + 3:  # the run trains on for the other process's learners
            await asyncio.sleep(0.2)
        for page, follower in zip(pages, follows):
            if follower:
                await page.close()
        return folders, follows, time.monotonic()

    folders, follows, left = asyncio.run(asyncio.wait_for(learners(), 300))
    assert len(folders) == 1  # one run for the four learners of both processes
    assert follows in ([True, False, True, False], [False, True, False, True])
    wait_until(lambda: jobs_on_workers(two) == [], 60, "the run to stop once its last learner left")
    stopped = time.monotonic() - left
    run = read_run(folders[0])
    longest_step = max(m["step_time"] for m in run.metrics)
    assert stopped < STOP_SECONDS + longest_step, f"the run stopped {stopped:.1f} s after its last learner left"
    time.sleep(2)
    assert not run.finished and read_run(folders[0]).metrics == run.metrics  # it trains no more
    assert "Traceback" not in two.log()


@pytest.mark.server
def test_a_forged_session_token_is_refused_on_each_process(two):
    forged = generate_jwt_token(generate_session_id(), signed=False, extra_payload={"headers": {}, "cookies": {}, "arguments": {}})
    for port in sorted(children(two)[0]):
        url = f"http://127.0.0.1:{port}"
        assert _status(url + "/room") == 403 and _status(f"{url}/room?token={TEACHER_TOKEN}") == 200
        assert "fl-refused" in asyncio.run(pull_document(url, "room", forged))
    assert "fl-refused" in asyncio.run(pull_document(two.url, "room", forged))  # through nginx
    assert TEACHER_TOKEN not in two.log()


@pytest.mark.server
def test_a_web_process_killed_mid_lesson_is_started_again_and_the_other_ones_learners_carry_on(two):
    web, _ = children(two)
    (killed_port, killed), (other_port, _) = sorted(web.items())

    async def lesson():
        there = await PageSession.open(f"http://127.0.0.1:{other_port}", "bandit")
        await there.settle()
        killed.send_signal(signal.SIGKILL)
        slider = there.movable()[0]
        moved = [await there.move(slider, k, 30) for k in range(3)]  # the other process's learner carries on
        await there.close()
        return moved

    assert len(asyncio.run(lesson())) == 3
    wait_until(lambda: killed_port in children(two)[0] and children(two)[0][killed_port].pid != killed.pid, 30,
               "the killed web process to be started again")
    wait_until(lambda: _status(f"http://127.0.0.1:{killed_port}/healthz") == 200, 180, "the new web process to answer")
    assert f"web process 1 (port {killed_port}) exited (status -9); starting it again." in two.log() or \
        f"(port {killed_port}) exited (status -9); starting it again." in two.log()

    async def reload():  # a learner of the killed process reloads: a page, from one process
        return [await open_and_check(two.url) for _ in range(4)]

    assert all(same for _, same in asyncio.run(reload()))


@pytest.mark.server
def test_sigterm_stops_every_process_it_started(two):
    web, proxy = children(two)
    started = [*web.values(), proxy, *psutil.Process(two.process.pid).children(recursive=True)]
    two.process.send_signal(signal.SIGTERM)
    assert two.process.wait(60) == 0
    gone, alive = psutil.wait_procs(started, timeout=10)
    assert alive == []


@pytest.mark.server
def test_a_terminals_ctrl_c_stops_every_process_in_order_without_a_traceback():
    """Ctrl-C in the terminal of `make serve` sends SIGINT to every process of its foreground group at once: the
    server, its web processes, nginx and its cluster's worker. The server still closes its cluster in order (the
    scheduler, in a session of its own, is not reached by the signal; the worker leaves it to the server), exits
    with status 0, leaves nothing running and writes no traceback."""
    server = start_server("--web-processes", "2", own_group=True)
    try:
        asyncio.run(settled(server, longest=120))
        started = psutil.Process(server.process.pid).children(recursive=True)
        os.killpg(server.process.pid, signal.SIGINT)
        assert server.process.wait(60) == 0
        gone, alive = psutil.wait_procs(started, timeout=10)
        assert alive == []
        assert "Traceback" not in server.log()
    finally:
        stop_server(server)


def _status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:  # nothing listens there (yet)
        return 0
