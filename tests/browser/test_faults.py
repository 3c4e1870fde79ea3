"""The server killed with SIGKILL in the middle of a live run, then started again on the same runs folder.

Every step written before the kill is on disk in whole lines (at most the line in flight is cut short),
and the restarted server lists the run as interrupted.
"""

import json
import os
import re
import signal
import time

from playwright.sync_api import expect

from bench.servers import start_server, stop_server

RUN = "?steps=200&prompts=2&replies=2&T=8&eval_every=5&eval_prompts=2&eval_replies=2&beta=0"
"""A run far longer than the test waits for, with small steps (seconds on two shared cores)."""


def complete_lines(path) -> list[dict]:
    """Every line of a JSON-lines file parsed; only the last may be cut short (and is then left out)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    *whole, last = lines  # after the final newline `last` is ""; otherwise it is the line in flight
    records = [json.loads(line) for line in whole]
    if last:
        try:
            records.append(json.loads(last))
        except json.JSONDecodeError:
            pass
    return records


def open_live_run(page, url: str):
    page.goto(f"{url}/live-run{RUN}")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.locator(".bk-Canvas").first.wait_for(state="attached", timeout=60_000)


def test_a_run_killed_with_the_server_is_intact_and_listed_as_interrupted_after_a_restart(page, tmp_path):
    runs = tmp_path / "runs"
    env = {"FEEDBACK_LAB_RUNS": str(runs), "OMP_NUM_THREADS": "1"}
    server = start_server(env=env)
    try:
        open_live_run(page, server.url)
        page.locator("button", has_text=re.compile("^Start$")).first.click()
        deadline = time.monotonic() + 180
        while not (runs.is_dir() and any(runs.glob("*/metrics.jsonl"))
                   and len(next(runs.glob("*/metrics.jsonl")).read_text().splitlines()) >= 2):
            assert time.monotonic() < deadline, f"two training steps were not written within 180 s:\n{server.log()[-3000:]}"
            assert server.process.poll() is None, server.log()[-3000:]
            time.sleep(0.1)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(30)
    finally:
        stop_server(server)

    folder = next(runs.glob("*/metrics.jsonl")).parent
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["settings"]["steps"] == 200 and config["settings"]["prompts"] == 2
    metrics, samples, evals = (complete_lines(folder / name) for name in ("metrics.jsonl", "samples.jsonl", "eval.jsonl"))
    steps = [m["step"] for m in metrics]
    assert len(steps) >= 2 and steps == list(range(1, len(steps) + 1))
    assert [s["step"] for s in samples] == list(range(1, len(samples) + 1)) and len(samples) >= len(steps) - 1
    assert evals and evals[0]["step"] == 0 and all(e["step"] % 5 == 0 for e in evals)

    restarted = start_server(env=env)
    try:
        open_live_run(page, restarted.url)
        page.locator(".bk-tab", has_text="The room's runs").click()  # the list of runs, a tab built when opened
        row = page.locator(".fl-runs .tabulator-row", has_text=folder.name)
        expect(row).to_contain_text("interrupted", timeout=30_000)
        expect(row).to_contain_text(f"{len(steps)} / 200")
        assert "Traceback" not in restarted.log()
    finally:
        stop_server(restarted)


def test_an_emptied_number_box_is_one_sentence_and_the_page_goes_on(open_page, console_errors):
    page = open_page("token-world", "?section=training")
    box = page.locator(".bk-input-group", has=page.locator("label", has_text="Training seeds")).locator("input").first
    box.fill("")
    box.press("Enter")
    toast = page.locator(".notyf__message", has_text="That value was not taken")
    expect(toast).to_contain_text("so the page keeps the one it had", timeout=20_000)
    assert "Traceback" not in toast.inner_text()
    box.fill("7")
    box.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('seeds') === '7'", timeout=20_000)
    assert console_errors == []
