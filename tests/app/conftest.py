"""A real app server in a subprocess, for the tests that need one (limits, bad input, session lifecycle).

    app_server(*options, env={}) -> Server   starts `python -m app.cli serve --port FREE *options`
                                              and waits for /healthz; stopped at the test's end
    roomy_server                              one per test module: --max-sessions 1000, closed sessions dropped after 1 s

Server and start_server live in tests/servers.py, shared with the browser tests and the benchmarks.
"""

from __future__ import annotations

import pytest

from tests.servers import Server, start_server, stop_server


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
