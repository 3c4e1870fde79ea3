"""A real app server in a subprocess, for the tests that need one (limits, bad input, session lifecycle).

    app_server(*options, env={}) -> Server   starts `python -m app.cli serve --port FREE *options`
                                              and waits for /healthz; stopped at the test's end
    roomy_server                              one per test module: --max-sessions 1000, closed sessions dropped after 1 s
Server: url, process, log() (the server's stderr so far), get(path) -> (status, body text),
        open_session(route, query="") -> the document JSON a browser would receive: the page's
        HTTP GET, then its websocket (Bokeh's ACK, PULL-DOC-REQ, PULL-DOC-REPLY), then closed.
        No browser and no client-side models are needed, so it is fast enough to repeat.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import free_port
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str, timeout: float = 30.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def open_session(self, route: str, query: str = "") -> str:
        return asyncio.run(_open_session(self.url, route, query))


async def _read_message(ws) -> list[str]:
    """One Bokeh protocol message: header, metadata and content frames."""
    return [await ws.read_message() for _ in range(3)]


async def _open_session(base: str, route: str, query: str) -> str:
    status_html = urllib.request.urlopen(f"{base}/{route}{query}", timeout=30).read().decode()
    token = re.search(r'"token":"([^"]+)"', status_html).group(1)
    ws_url = base.replace("http", "ws", 1) + (f"/{route}/ws" if route else "/ws")
    ws = await websocket_connect(ws_url, subprotocols=["bokeh", token])
    try:
        header, _, _ = await _read_message(ws)
        assert json.loads(header)["msgtype"] == "ACK"
        for frame in (json.dumps({"msgid": "pull", "msgtype": "PULL-DOC-REQ"}), "{}", "{}"):
            await ws.write_message(frame)
        header, _, content = await _read_message(ws)
        assert json.loads(header)["msgtype"] == "PULL-DOC-REPLY"
        return content
    finally:
        ws.close()


def wait_for_health(server: Server, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the app server exited with status {server.process.returncode}:\n{server.log()}")
        try:
            if server.get("/healthz", timeout=2) == (200, "ok"):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the app server did not answer /healthz within {timeout} s")


def start_server(*options: str, env: dict[str, str] | None = None, port: int | None = None) -> Server:
    port = port or free_port()
    runs = tempfile.mkdtemp(prefix="fl-runs-")
    log_path = Path(tempfile.mkdtemp(prefix="fl-log-")) / "server.log"
    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": tempfile.mkdtemp(prefix="fl-hf-")}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), *options],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=log_path.open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1", "FEEDBACK_LAB_RUNS": runs, **offline, **(env or {})},
    )
    server = Server(f"http://localhost:{port}", process, log_path)
    wait_for_health(server)
    return server


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture
def app_server():
    started: list[Server] = []

    def start(*options: str, env: dict[str, str] | None = None) -> Server:
        started.append(start_server(*options, env=env))
        return started[-1]

    yield start
    for server in started:
        stop_server(server)


@pytest.fixture(scope="module")
def roomy_server():
    """One server for a test module, with room for many sessions and closed ones dropped after 1 s."""
    server = start_server("--max-sessions", "1000", "--unused-session-seconds", "1")
    yield server
    stop_server(server)
