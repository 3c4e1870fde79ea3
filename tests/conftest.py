"""The test tiers, and the guard that keeps the quick tier quick.

Every test that starts a process carries a marker that says what it starts:

    browser   drives Chromium against a running server (every test under tests/browser/)
    server    starts a process: an app server, a Dask cluster, nginx, JupyterLab, a command-line run
    slow      builds the wheel or executes the lab's notebook

`make check` runs the rest (`-m "not browser and not server and not slow"`) in under two minutes,
and `make test` runs everything. The markers of the app-server fixtures are put on by the fixture's
name (`SERVER_FIXTURES`); the others stand on the test or its module.

In the quick tier a test may not start a process at all: the calls that start child processes
(subprocess's, `_posixsubprocess.fork_exec` under multiprocessing's spawn and forkserver and so
Dask's nanny, and `os.fork`) raise for it instead, naming the marker the test lacks. So a test
that starts a server without saying so fails in `make check` rather than making it slow.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess

import pytest

TIERS = ("browser", "server", "slow")
"""The markers of the tests `make check` leaves out."""
SERVER_FIXTURES = {"app_server", "roomy_server", "cpu_taken", "server_url"}
"""Fixtures that start an app server or a model job on the test session's cluster."""


def pytest_collection_modifyitems(items):
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


class StartedAProcess(RuntimeError):
    """A test of the quick tier started a child process."""


@pytest.fixture(autouse=True)
def _no_process_in_the_quick_tier(request, monkeypatch):
    if any(request.node.get_closest_marker(tier) for tier in TIERS):
        yield
        return

    def refuse(*args, **kwargs):
        raise StartedAProcess(f"{request.node.nodeid} starts a process: mark it with one of {', '.join(TIERS)} "
                              "(tests/conftest.py), so that `make check` leaves it out.")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(_posixsubprocess, "fork_exec", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    yield
