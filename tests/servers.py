"""What the browser tests, the server tests and the latency benchmark share: Chromium and a local app server."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

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


def free_port() -> int:
    """A localhost port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


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
