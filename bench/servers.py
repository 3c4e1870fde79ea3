"""What the browser tests, the server tests and the benchmarks share: Chromium and a local app server.

loopback_config(tmp, port, app_ports)       deploy/nginx.conf on loopback ports (NGINX: the nginx binary, or None)
start_server(*options, env={}) -> Server   `python -m app.cli serve --port FREE *options` in a subprocess,
                                            runs in a fresh folder, no network for models, stdout and stderr to files;
                                            returns once /healthz answers
Server: url, process, log() (the server's stderr so far), output() (its stdout), get(path) -> (status, body text),
        open_session(route, query="") -> the document JSON a browser would receive: the page's
        HTTP GET, then its websocket (Bokeh's ACK, PULL-DOC-REQ, PULL-DOC-REPLY), then closed.
        No browser and no client-side models are needed, so it is fast enough to repeat.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from app.serving.web_processes import answers, free_loopback_port

ROOT = Path(__file__).resolve().parents[1]
"""The repository: where the server runs from."""

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium; Playwright's own browser download does not work on these machines."""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Without the background-networking flags Chromium keeps dialling hosts a closed network refuses."""
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
"""nginx, for the tests of deploy/ (installed by `make test`), or None."""


def free_port() -> int:
    """A localhost port nothing listens on now, below the system's ephemeral range (app.serving.web_processes)."""
    return free_loopback_port()


def loopback_config(tmp_path, proxy_port: int, app_ports: tuple[int, int]) -> str:
    """deploy/nginx.conf with loopback ports, and its files in tmp_path instead of the system's (its own access log as
    paths.log); a second access log names the process (upstream) that answered each request."""
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    text = text.replace("server 127.0.0.1:5006;", f"server 127.0.0.1:{app_ports[0]};").replace("server 127.0.0.1:5007;", f"server 127.0.0.1:{app_ports[1]};")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{proxy_port};").replace("/var/log/nginx/access.log", f"{tmp_path}/paths.log")
    text = text.replace("http {", f"http {{\n    log_format upstream '$upstream_addr $request_uri';\n    access_log {tmp_path}/access.log upstream;"
                                  f"\n    client_body_temp_path {tmp_path}/body;\n    proxy_temp_path {tmp_path}/proxy;")
    return f"daemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n" + text


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Return once `url` answers 200; raise if the server process exits or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app server exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the app server did not answer at {url} within {timeout} s")


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def output(self) -> str:
        """What the server printed on its standard output (the addresses it serves, the teacher's link)."""
        path = self.log_path.with_name("stdout.log")
        return path.read_text(errors="replace") if path.exists() else ""

    def get(self, path: str, timeout: float = 30.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def open_session(self, route: str, query: str = "") -> str:
        return asyncio.run(open_session_document(self.url, route, query))


async def _read_message(ws) -> list[str]:
    """One Bokeh protocol message: header, metadata and content frames."""
    return [await ws.read_message() for _ in range(3)]


def page_token(base: str, route: str, query: str) -> str:
    """GET the page as a browser does: the session token its HTML embeds (the session's id is inside it)."""
    return get_page(base, route, query)[0]


def get_page(base: str, route: str, query: str) -> tuple[str, dict[str, str], str]:
    """GET the page as a new browser does: (the session token its HTML embeds, the headers the browser's websocket
    then sends, its cookies (nginx's choice of web process), the HTML)."""
    with urllib.request.urlopen(f"{base}/{route}{query}", timeout=30) as response:
        cookies = "; ".join(c.split(";")[0] for c in response.headers.get_all("Set-Cookie") or [])
        html = response.read().decode()
    return re.search(r'"token":"([^"]+)"', html).group(1), {"Cookie": cookies} if cookies else {}, html


def document_roots(html: str) -> set[str]:
    """The ids of the document roots a page's HTML names (Bokeh's render items): a document pulled over the page's
    websocket has these roots only if the websocket reached the process that built the page."""
    items = re.search(r'"roots":\{([^}]*)\}', html).group(1)
    return set(re.findall(r'"([^"]+)":"[^"]*"', items))


async def pull_document(base: str, route: str, token: str, headers: dict[str, str] | None = None) -> str:
    """The session's document over its websocket, as the page's script asks for it: the PULL-DOC reply's content.
    `headers`: the browser's own (its cookies)."""
    ws_url = base.replace("http", "ws", 1) + (f"/{route}/ws" if route else "/ws")
    ws = await websocket_connect(HTTPRequest(ws_url, headers=headers or {}), subprotocols=["bokeh", token])
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


async def open_session_document(base: str, route: str, query: str) -> str:
    token, headers, _ = get_page(base, route, query)
    return await pull_document(base, route, token, headers)


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll `condition` until it holds; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@contextmanager
def serving_in_process(monkeypatch, server_limits, **options) -> Iterator[str]:
    """`app.serving.server.serve` on a free port of this process with `server_limits`, its URL once it answers; stopped after.

    serve() sets process-wide state (the limits, the callback error handler, the sessions built ahead, torch's
    threads): `monkeypatch` puts it back after.
    """
    import panel as pn

    from app.serving import limits, ready_pages, server

    monkeypatch.setattr(limits, "_installed", limits._installed)
    monkeypatch.setattr(pn.config, "exception_handler", pn.config.exception_handler)
    monkeypatch.setattr(ready_pages, "READY", ready_pages.READY)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    port = free_port()
    running = server.serve(port=port, threaded=True, server_limits=server_limits, **options)
    try:
        url = f"http://localhost:{port}"
        wait_until(lambda: answers(url + "/healthz"), 60, "the in-process server to start")
        yield url
    finally:
        running.stop()


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


def start_server(*options: str, env: dict[str, str] | None = None, port: int | None = None, up_seconds: float = 90.0,
                 own_group: bool = False) -> Server:
    """One web process unless `options` say how many (`--web-processes N`): most tests look inside the one.
    `own_group`: the server leads a process group of its own, as a command typed in a terminal does, so that a
    signal can be sent to that whole group (a terminal's Ctrl-C) without reaching the caller."""
    port = port or free_port()
    if "--web-processes" not in options:
        options = (*options, "--web-processes", "1")
    runs = tempfile.mkdtemp(prefix="fl-runs-")
    log_path = Path(tempfile.mkdtemp(prefix="fl-log-")) / "server.log"
    offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": tempfile.mkdtemp(prefix="fl-hf-")}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port), *options],
        cwd=ROOT,
        stdout=log_path.with_name("stdout.log").open("w"),
        stderr=log_path.open("w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1", "FEEDBACK_LAB_RUNS": runs, **offline, **(env or {})},
        process_group=0 if own_group else None,
    )
    server = Server(f"http://localhost:{port}", process, log_path)
    wait_for_health(server, up_seconds)
    return server


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
