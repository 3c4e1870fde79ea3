"""The preferences page in Chromium: the seed's ceiling, the tau slider, a shared link."""

import re

from playwright.sync_api import expect

from app.pages.preferences.figures import gap_population, labelled_set
from app.pages.preferences.text import summary_text
from engines.bradley_terry import LabelledSetSettings, oracle_accuracy


def expected_sentence(tau, gaps="seed", s=1.0, n=300, seed=0):
    ceiling = float(oracle_accuracy(gap_population(gaps, s), 0.0, tau))
    text = summary_text(tau, ceiling, labelled_set(LabelledSetSettings(tau=tau, gaps=gaps, s=s, n=n, seed=seed)))
    return re.sub(r"</?strong>", "", text)


def test_page_loads_with_the_seed_ceiling(open_page, console_errors, shown_text, save_screenshot):
    page = open_page("preferences")
    summary = page.locator(".fl-summary").first
    assert shown_text(summary) == expected_sentence(0.5)
    assert "Acc* = 0.788" in shown_text(summary)
    assert page.get_by_text("Check yourself.").count() == 1
    save_screenshot(page, "preferences")
    assert console_errors == []


def test_keyboard_on_the_tau_slider_updates_the_numbers(open_page, console_errors, slider_handle):
    page = open_page("preferences")
    handle = slider_handle(page, "Label temperature")
    handle.focus()
    for _ in range(4):
        handle.press("ArrowRight")
    expect(page.locator(".fl-summary").first).to_have_text(re.compile(r"At τ_label = 0\.70 "))
    page.wait_for_function("() => Math.abs(parseFloat(new URLSearchParams(location.search).get('tau')) - 0.7) < 1e-9")
    tau = float(page.evaluate("() => new URLSearchParams(location.search).get('tau')"))
    expect(page.locator(".fl-summary").first).to_have_text(expected_sentence(tau))
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors, shown_text):
    page = open_page("preferences", "?tau=1.5&gaps=normal&s=2&n=500&seed=9")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(1.5, "normal", 2.0, 500, 9)
    assert console_errors == []
