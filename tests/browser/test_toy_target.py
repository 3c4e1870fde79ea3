"""The toy target page in Chromium: the streamed estimates and training, the N slider, a shared link."""

import re

from playwright.sync_api import expect

from app.pages.toy_target import coordinate, summary_text
from engines.toy_target import draw_batches

STREAM_MS = 45_000
"""The longest the page may take to draw its batches and train: worker threads on 2 shared cores,
slow only when other work loads the machine (the runs take about a second on their own)."""


def expected_sentence(samples=16, batches=500, target_seed=0, seed=0, estimator="loo", t=1, prev=0, symbol=6):
    *_, b = draw_batches(samples, batches, target_seed, seed)
    coord = coordinate(t, prev, symbol)
    x_none, x_other = (b.estimates[name][(slice(None), *coord)] for name in ("none", estimator))
    return re.sub(r"</?strong>", "", summary_text(coord, b, estimator, x_none, x_other))


def sentence(page):
    return page.locator(".fl-summary").first


def test_page_loads_streams_and_trains(open_page, console_errors, save_screenshot):
    page = open_page("toy-target")
    expect(sentence(page)).to_have_text(expected_sentence(), timeout=STREAM_MS)
    card = page.locator(".fl-card-toy-target-uniform-start")  # with prompts off: the question, its answer and why
    expect(card).to_contain_text("Check yourself.")
    expect(card).to_contain_text("log π(y) = 6 log(1/8) = -12.48, and the policy writes the target exactly with probability (1/8)^6 = 1/262,144")
    page.locator(".bk-tab", has_text="Exercise 2: the variance table").click()  # built on first view
    expect(page.locator(".fl-table tr[data-estimator=token_loo]")).to_contain_text("token-level + leave-one-out")
    page.locator(".bk-tab", has_text="Training with and without the baseline").click()  # its run starts when opened
    expect(page.locator(".fl-table th", has_text="after 400 of 400 steps")).to_have_count(1, timeout=STREAM_MS)
    page.wait_for_function("() => new URLSearchParams(location.search).get('section') === 'training'")
    page.wait_for_timeout(500)  # let the plots finish drawing before the picture
    save_screenshot(page, "toy_target")
    assert console_errors == []


def test_keyboard_on_the_batch_size_slider_redraws_the_estimates(open_page, console_errors, slider_handle, slider_value):
    page = open_page("toy-target", "?batches=100&steps=50&seeds=2")
    expect(sentence(page)).to_have_text(expected_sentence(batches=100), timeout=STREAM_MS)
    handle = slider_handle(page, "Batch size N")
    handle.focus()
    for _ in range(2):
        handle.press("ArrowRight")
    expect(sentence(page)).to_have_text(expected_sentence(samples=18, batches=100), timeout=STREAM_MS)
    assert slider_value(page, "Batch size N") == "18"
    page.wait_for_function("() => new URLSearchParams(location.search).get('samples') === '18'")
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors):
    query = "?samples=8&batches=100&estimator=token&t=2&prev=3&symbol=1&seed=4&steps=50&seeds=2&section=training"
    page = open_page("toy-target", query)
    expected = expected_sentence(samples=8, batches=100, seed=4, estimator="token", t=2, prev=3, symbol=1)
    expect(sentence(page)).to_have_text(expected, timeout=STREAM_MS)
    expect(page.locator(".fl-table th", has_text="after 50 of 50 steps")).to_have_count(1, timeout=STREAM_MS)
    assert console_errors == []


def test_bad_link_shows_a_notice_not_a_traceback(open_page, console_errors):
    page = open_page("toy-target", "?samples=1000&estimator=best&batches=100&steps=50&seeds=2")
    expect(page.get_by_text("in the link was ignored")).to_have_count(2)
    expect(sentence(page)).to_have_text(expected_sentence(batches=100), timeout=STREAM_MS)
    assert console_errors == []
