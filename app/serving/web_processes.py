"""Several web processes behind the one address learners type: `feedback-lab serve --web-processes N`.

One Python process serves every page, slider move and websocket on one core, whatever the
machine has (its interpreter lock). With N > 1 `serve` runs, instead of one web process:

- the model jobs' Dask cluster, here (a local cluster, as one web process would start it), or
  the one `--scheduler` names;
- N web processes, each `feedback-lab serve --web-processes 1` on a loopback port and joined to
  that scheduler, so that they share the devices' lines, the class's runs
  (app.jobs.run_registry: each distinct run trained once), the room's counts (app.serving.room)
  and the teacher's token;
- nginx on the address and port learners type, with a configuration written for them
  (`nginx_config`). A browser's first request carries no cookie: nginx hashes that request's
  random id to pick a process and sets it as the cookie `ROUTE_COOKIE`; every later request of
  that browser (the page's websocket included) carries the cookie and hashes to the same
  process. So a page and its websocket meet on one process, and learners behind one address
  (a campus NAT) are spread over the processes, which `ip_hash` would not do.

A web process that exits (killed, out of memory) is started again on its port; nginx sends its
learners to the others meanwhile (`max_fails`), and their pages need a reload. SIGTERM or Ctrl-C
stops every process started here, nginx and the cluster included. A child learns of this
process's own death from the kernel (`PR_SET_PDEATHSIG`, Linux) and stops too.
"""

from __future__ import annotations

import ctypes
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.serving.classroom import typed_host
from app.serving.room import TOKEN_VARIABLE

LOG = logging.getLogger("feedback_lab")
VARIABLE = "FEEDBACK_LAB_WEB_PROCESSES"
"""Environment variable: how many web processes serve (the option --web-processes wins)."""
ROUTE_COOKIE = "feedback_lab_process"
"""The cookie that keeps a browser on one web process: the random id of its first request, which nginx hashes."""
UP_SECONDS = 120.0
"""Longest wait for a web process to answer /healthz after it starts."""
STOP_SECONDS = 15.0
"""Longest wait for a process to exit after SIGTERM before it is killed."""
LOOK_SECONDS = 0.5
"""Seconds between looks at the processes started here."""
QUICK_EXIT_SECONDS = 30.0
"""A web process that exits this soon after it started, RESTARTS_IN_A_ROW times in a row, is not started again."""
RESTARTS_IN_A_ROW = 3
LOWEST_PORT = 10000
"""The web processes' loopback ports are chosen below the system's ephemeral range (and above this): a port that
bind(0) returned is one the system may hand out again at once, to one of Dask's sockets."""
EPHEMERAL_PORTS = Path("/proc/sys/net/ipv4/ip_local_port_range")


def nginx_binary() -> str | None:
    """nginx on PATH, or Debian's /usr/sbin/nginx (not on a user's PATH), or None."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


DEFAULT_MOST = 4
"""The default never starts more web processes than this (each about 310 MB idle, docs/performance.md): more were
not measured."""


def default_web_processes() -> int:
    """The default of --web-processes: one per core of this machine (at least 2, at most DEFAULT_MOST), or 1 where
    there is no nginx.

    Each web process is one interpreter, so it serves on about one core; the model jobs' worker
    runs at a lower priority (app.jobs.cluster.JOB_NICENESS) and yields the cores to the pages.
    Measured on a 2-core machine only (docs/performance.md, "Learners per core").
    """
    if nginx_binary() is None:
        return 1
    return min(max(2, os.cpu_count() or 2), DEFAULT_MOST)


def web_processes_from(given: int | None) -> tuple[int, str]:
    """(the option's number, else FEEDBACK_LAB_WEB_PROCESSES's, else the default; a note for the operator or "");
    ValueError with one sentence for one below 1, or for more than one where nginx is not installed."""
    text = os.environ.get(VARIABLE, "").strip()
    if given is None and text and not text.isdigit():
        raise ValueError(f"{VARIABLE} must be a whole number >= 1, got {text!r}.")
    n = given if given is not None else int(text) if text else default_web_processes()
    if n < 1:
        raise ValueError(f"--web-processes must be at least 1, got {n}.")
    if n > 1 and nginx_binary() is None:
        raise ValueError(f"{n} web processes need nginx in front of them, and nginx is not installed "
                         "(`make serve` installs it, or apt-get install nginx-light); or serve with --web-processes 1.")
    chosen = given is not None or text
    return n, "" if chosen or nginx_binary() is not None else (
        "nginx is not installed, so one web process serves, on about one core (install nginx-light for one per core).")


def free_loopback_port() -> int:
    """A loopback port nothing listens on now, between LOWEST_PORT and the start of the system's ephemeral range."""
    first_ephemeral = int(EPHEMERAL_PORTS.read_text().split()[0]) if EPHEMERAL_PORTS.exists() else 32768
    for port in random.sample(range(LOWEST_PORT, first_ephemeral), 100):
        with socket.socket() as sock:
            try:
                sock.bind(("localhost", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"No free localhost port between {LOWEST_PORT} and {first_ephemeral}.")


def default_origins(address: str, port: int) -> list[str]:
    """The hosts allowed to open the app's websocket when none are given: the address served (for every address,
    0.0.0.0, the machine's address on its network, which learners can type), and localhost."""
    return list(dict.fromkeys([typed_host(address, port), f"localhost:{port}", f"127.0.0.1:{port}"]))


def listen_address(address: str, port: int) -> str:
    """nginx's `listen` for the address learners type: "localhost" as 127.0.0.1 (nginx would bind every address the
    name resolves to, ::1 included, which a machine without IPv6 refuses), an IPv6 address in brackets."""
    host = "127.0.0.1" if address == "localhost" else f"[{address}]" if ":" in address else address
    return f"{host}:{port}"


def nginx_config(address: str, port: int, upstreams: list[int], folder: Path, max_body_bytes: int) -> str:
    """nginx's whole configuration: listen on `address`:`port`, send each browser to one of the loopback ports
    `upstreams` for good (the cookie ROUTE_COOKIE, hashed), keep its files (pid, temporary bodies) in `folder`.

    `hash ... consistent`: the process of a cookie stays the same while the set of processes does; a process
    that refuses a connection is left out for `fail_timeout` and its browsers are hashed onto the others
    (page and websocket alike, since both carry the same cookie). No access log: the teacher's link carries
    its token in the query.
    """
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;" for p in upstreams)
    return f"""# Written by feedback-lab serve --web-processes {len(upstreams)}; see app/serving/web_processes.py.
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}

http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;

    # A browser without the cookie is given the random id of its first request as its key, and that id as its cookie.
    map $cookie_{ROUTE_COOKIE} $process_key {{
        ""      $request_id;
        default $cookie_{ROUTE_COOKIE};
    }}
    map $cookie_{ROUTE_COOKIE} $set_process_cookie {{
        ""      "{ROUTE_COOKIE}=$request_id; Path=/; HttpOnly; SameSite=Lax";
        default "";
    }}
    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      close;
    }}

    upstream feedback_lab {{
        hash $process_key consistent;
{servers}
    }}

    server {{
        listen {listen_address(address, port)};
        client_max_body_size {max_body_bytes};
        large_client_header_buffers 4 64k;

        location / {{
            proxy_pass http://feedback_lab;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout 3600s;
            proxy_buffering off;
            add_header Set-Cookie $set_process_cookie;
        }}
    }}
}}
"""


PR_SET_PDEATHSIG = 1


def stop_with_parent() -> None:
    """In a child, before it runs its program: the kernel sends it SIGTERM when the process that started it dies."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def answers(url: str) -> bool:
    """Whether `url` answers 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class Child:
    """A process started here, and how to start it again."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_exits: int = 0
    health: str | None = None
    """The URL that answers 200 once it serves (a web process's /healthz), or None."""

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.DEVNULL, preexec_fn=stop_with_parent)
        self.started_at = time.monotonic()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait(self) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class WebProcesses:
    """The web processes and nginx of one `serve --web-processes N`: started, watched, started again, stopped."""

    web: list[Child]
    proxy: Child
    folder: Path
    stopping: bool = False
    say: Callable[[str], None] = field(default=lambda text: print(f"feedback-lab serve: {text}", file=sys.stderr, flush=True))

    def start(self) -> None:
        """Start every web process, wait until each answers, then nginx (RuntimeError if one exits meanwhile)."""
        for child in self.web:
            child.start()
        deadline = time.monotonic() + UP_SECONDS
        for child in self.web:
            while not answers(child.health) and not self.stopping:
                if child.process.poll() is not None:
                    raise RuntimeError(f"{child.name} exited with status {child.process.returncode} while starting; "
                                       "its log is above.")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{child.name} did not answer within {UP_SECONDS:.0f} s.")
                time.sleep(0.2)
        self.proxy.start()

    def watch(self) -> int:
        """Until stopped: start again any process that exited. Returns the exit status for `serve` (0 when stopped,
        1 when a process kept exiting as soon as it started)."""
        while not self.stopping:
            for child in (*self.web, self.proxy):
                code = child.process.poll()
                if code is None or self.stopping:
                    continue
                quick = time.monotonic() - child.started_at < QUICK_EXIT_SECONDS
                child.quick_exits = child.quick_exits + 1 if quick else 0
                if child.quick_exits >= RESTARTS_IN_A_ROW:
                    self.say(f"{child.name} exited {RESTARTS_IN_A_ROW} times within {QUICK_EXIT_SECONDS:.0f} s of "
                             "starting; the server stops (the log above says why).")
                    return 1
                self.say(f"{child.name} exited (status {code}); starting it again.")
                child.start()
            time.sleep(LOOK_SECONDS)
        return 0

    def stop(self) -> None:
        """Stop nginx first (no new requests), then every web process; wait for each, killing one that hangs."""
        self.stopping = True
        for child in (self.proxy, *self.web):
            child.stop()
        for child in (self.proxy, *self.web):
            child.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def child_argv(argv: list[str], port: int, scheduler: str, origins: list[str]) -> list[str]:
    """The `serve` command line of one web process: the operator's options (less --show, which this process does),
    then the ones it must have, which argparse takes over any earlier ones (the last occurrence wins). The teacher's
    token goes in its environment instead, which, unlike a command line, other users of the machine cannot read."""
    kept = [word for word in argv if word != "--show"]
    extra = [word for origin in origins for word in ("--allow-websocket-origin", origin)]
    return [sys.executable, "-m", "app.cli", "serve", *kept, "--web-processes", "1", "--address", "127.0.0.1", "--port", str(port),
            "--scheduler", scheduler, *extra]


def web_processes(n: int, argv: list[str], address: str, port: int, scheduler: str, token: str, origins: list[str],
                  max_body_bytes: int) -> WebProcesses:
    """The N web processes (`argv`: this `serve`'s command line, from "serve" on) and nginx in front, not started."""
    folder = Path(tempfile.mkdtemp(prefix="feedback-lab-nginx-"))
    ports = [free_loopback_port() for _ in range(n)]
    while len(set(ports)) < n:
        ports = [free_loopback_port() for _ in range(n)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", TOKEN_VARIABLE: token}
    web = [Child(f"web process {i + 1} (port {p})", child_argv(argv, p, scheduler, origins), env,
                 health=f"http://127.0.0.1:{p}/healthz") for i, p in enumerate(ports)]
    (folder / "nginx.conf").write_text(nginx_config(address, port, ports, folder, max_body_bytes))
    proxy = Child("nginx", [nginx_binary(), "-e", "stderr", "-p", str(folder), "-c", str(folder / "nginx.conf")], env)
    return WebProcesses(web, proxy, folder)


def serve_behind_nginx(n: int, argv: list[str], address: str, port: int, scheduler: str, token: str, origins: list[str],
                       max_body_bytes: int, announce: Callable[[], None]) -> int:
    """Run N web processes joined to `scheduler` behind nginx on `address`:`port` until SIGTERM or Ctrl-C;
    `announce()` once they serve. Returns serve's exit status."""
    group = web_processes(n, argv, address, port, scheduler, token, origins, max_body_bytes)
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def stop(signum, frame) -> None:
        group.stopping = True

    for s in previous:
        signal.signal(s, stop)
    try:
        group.start()
        announce()
        return group.watch()
    except RuntimeError as error:
        print(f"feedback-lab serve: error: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        group.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
