"""The live-run page in Chromium: a short run grows its curves, stops, is listed and on disk; an offline hub model is refused."""

import re

from playwright.sync_api import expect

from app.runs import read_run

TINY = "?steps=40&prompts=2&replies=2&T=8&eval_every=20&eval_prompts=2&eval_replies=2&beta=0"
"""A run small enough for seconds on two shared cores (and long enough not to finish before Stop)."""
OFFLINE = "The model 'gpt2' is not on this machine and cannot be downloaded without network; use 'embedded' or a local folder."


def source_length(page, name: str) -> int:
    """Rows of the page's ColumnDataSource `name` as the browser has it."""
    return page.evaluate(f"() => Bokeh.documents[0].get_model_by_name('{name}').data.step.length")


def button(page, label: str):
    return page.locator("button", has_text=re.compile(f"^{label}$")).first


def test_a_short_run_grows_stops_and_is_listed(open_page, console_errors, shown_text, save_screenshot, runs_dir):
    page = open_page("live-run", TINY)
    assert source_length(page, "metrics") == 0
    button(page, "Start").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=60_000)
    first = source_length(page, "metrics")
    page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length > {first}", timeout=30_000)
    assert source_length(page, "evals") >= 1  # the evaluation at step 0
    expect(page.locator(".fl-tok").first).to_be_attached()  # the newest replies, shaded token by token
    expect(page.locator(".fl-worked tr").nth(1)).to_be_attached()  # the worked example's first token row
    button(page, "Stop").click()
    expect(page.locator(".fl-status").first).to_contain_text("Stopped after step", timeout=30_000)
    expect(button(page, "Start")).to_be_enabled()

    folder = next(runs_dir.iterdir())
    shown = source_length(page, "metrics")
    run = read_run(folder)
    assert [m["step"] for m in run.metrics] == list(range(1, shown + 1))  # every step shown is on disk, none lost
    assert run.evals[0]["step"] == 0 and not run.finished
    row = page.locator(".fl-runs .tabulator-row", has_text=folder.name)
    expect(row).to_contain_text("interrupted")
    page.wait_for_timeout(300)  # let the plots finish drawing before the picture
    save_screenshot(page, "live_run")
    assert console_errors == []


def test_a_hub_model_offline_is_refused_in_one_sentence(open_page, console_errors):
    page = open_page("live-run", TINY)
    box = page.get_by_role("textbox").first
    box.fill("gpt2")
    box.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('model') === 'gpt2'")
    button(page, "Start").click()
    expect(page.locator(".fl-run-error").first).to_have_text(OFFLINE, timeout=30_000)
    expect(button(page, "Start")).to_be_enabled()  # the page stays usable
    box.fill("embedded")
    box.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('model') === 'embedded'")
    assert console_errors == []
