"""The lab's notebook in JupyterLab, as a learner meets it: Exercise 0 run as shipped fails its checkpoint in a red
box, and passes in a green one once the stub holds the solution folded beneath it.

JupyterLab comes from the `[lab]` extra (the test extra brings it too). It runs on a free localhost port with a token
of this test's, no browser of its own and a temporary root folder, settings and workspace: nothing of the machine's
own Jupyter set-up is read or written. Its kernel imports this checkout and writes runs into a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from app.cli import main
from app.lab import NOTEBOOK, SOLUTION, notebook, tags
from bench.servers import ROOT, free_port

READY_SECONDS = 60
"""How long JupyterLab may take to answer its status API."""
KERNEL_SECONDS = 180_000
"""Milliseconds a kernel may take to start, and a cell to run: the first imports torch, which on a 2-core machine
busy with other work took over a minute."""
RED, GREEN = "rgb(213, 94, 0)", "rgb(0, 158, 115)"
"""The checkpoint box's left border, failed and passed (app.lab.checkpoints.Checkpoint._repr_html_)."""


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """(URL of the notebook written by `feedback-lab lab`, the JupyterLab process), stopped after the module."""
    home = tmp_path_factory.mktemp("jupyterlab")
    root, config, log_path = home / "root", home / "jupyter", home / "jupyterlab.log"
    assert main(["lab", "--out", str(root)]) == 0
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no toast asking about news
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "FEEDBACK_LAB_RUNS": str(home / "runs"),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(config / "data"),
        "JUPYTER_RUNTIME_DIR": str(config / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(config / "lab" / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(config / "lab" / "workspaces"),
    }
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
         "--allow-root",  # containers and CI machines run the tests as root, which JupyterLab otherwise refuses
         # Offline: no announcements to fetch, no new version to look for.
         "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, f"JupyterLab did not answer in {READY_SECONDS} s:\n" + log_path.read_text()
            time.sleep(0.5)
        yield f"{base}/lab/tree/{NOTEBOOK.name}?token={token}", process
    finally:
        process.terminate()  # JupyterLab shuts its kernels down as it stops
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def exercise0_cells() -> tuple[int, int, str]:
    """Where Exercise 0's stub and checkpoint are among the notebook's cells, and its folded solution's code."""
    cells = notebook()["cells"]
    stub = next(i for i, c in enumerate(cells) if "stub" in tags(c))
    checkpoint = next(i for i, c in enumerate(cells) if "checkpoint" in tags(c))
    solution = next(c for c in cells[stub:] if "solution" in tags(c))
    return stub, checkpoint, SOLUTION.search("".join(solution["source"])).group(1)


def checkpoint_box(cell, verdict: str):
    """The checkpoint's box in the cell's output once it says `verdict`, e.g. "Checkpoint 0 failed"."""
    box = cell.locator(".jp-OutputArea-output div", has_text=verdict)
    box.wait_for(timeout=KERNEL_SECONDS)
    return box


def test_exercise_0_fails_red_then_passes_green_with_its_solution(jupyterlab, page, console_errors):
    url, process = jupyterlab
    stub, checkpoint, solution = exercise0_cells()
    page.goto(url)
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    cells.nth(checkpoint).wait_for()
    page.locator(".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=KERNEL_SECONDS)

    # From the first cell down to the checkpoint, as a learner does: select it, then Shift+Enter runs each cell
    # (a Markdown one is left as it is) and selects the next.
    cells.nth(0).click()
    page.keyboard.press("Escape")  # command mode: the keys act on cells, not inside a text
    for i in range(checkpoint + 1):
        page.keyboard.press("Shift+Enter")
        # Each key is taken once the next cell is the active one: a key sent before could be lost to the page.
        expect(cells.nth(i + 1)).to_have_class(re.compile(r"\bjp-mod-active\b"), timeout=KERNEL_SECONDS)
    failed = checkpoint_box(cells.nth(checkpoint), "Checkpoint 0 failed")
    assert failed.evaluate("box => getComputedStyle(box).borderLeftColor") == RED
    assert "still None" in failed.inner_text()

    # The solution typed into the stub, run, and the checkpoint run again.
    cells.nth(stub).locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(solution)
    page.keyboard.press("Shift+Enter")
    cells.nth(checkpoint).locator(".jp-InputPrompt").click()
    page.keyboard.press("Shift+Enter")
    passed = checkpoint_box(cells.nth(checkpoint), "Checkpoint 0 passed")
    assert passed.evaluate("box => getComputedStyle(box).borderLeftColor") == GREEN
    assert cells.nth(checkpoint).get_by_text("Checkpoint 0 failed").count() == 0  # the red box was replaced
    assert process.poll() is None
    assert console_errors == [], console_errors
