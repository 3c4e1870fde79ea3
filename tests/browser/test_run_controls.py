"""A run's controls in Chromium: a disabled button looks disabled, the progress bar has a name and a label, a reply's
token shows its number on a tap or the keyboard's focus as on hover."""

import re

from playwright.sync_api import expect

from bench.page_layout import LIVE_RUN_QUERY as TINY


def button(page, label: str):
    return page.locator("button", has_text=re.compile(f"^{label}$")).first


def background(locator) -> str:
    return locator.evaluate("el => getComputedStyle(el).backgroundColor")


def test_before_any_run_resume_and_stop_look_disabled_and_the_bar_is_named(open_page, console_errors):
    page = open_page("live-run", TINY)
    resume, pause, stop, start = (button(page, label) for label in ("Resume", "Pause", "Stop", "Start"))
    expect(resume).to_be_disabled()
    expect(stop).to_be_disabled()
    # Disabled, Resume and Stop wear the plain colour of the disabled Pause, not a main action's blue or red.
    assert background(resume) == background(pause) == background(stop) != background(start)
    bar = page.locator('progress[aria-label="Run progress"]').first
    expect(bar).to_be_attached()
    label = page.locator(".fl-run-progress").first
    expect(label).to_have_attribute("title", "Run progress: 0 %")
    expect(label).to_contain_text("0 %")
    assert console_errors == []


def test_a_token_tapped_or_reached_with_tab_shows_its_number(open_page, console_errors):
    page = open_page("live-run", TINY)
    button(page, "Start").click()
    token = page.locator(".fl-tok").first
    expect(token).to_be_attached(timeout=60_000)
    button(page, "Stop").click()
    token = page.locator(".fl-tok").first
    token.focus()  # what a tap on a focusable token, or Tab, does
    shown = token.evaluate("el => getComputedStyle(el, '::after').content")
    assert re.fullmatch(r'"log π − log π_ref = [+-]\d\.\d{3} nats"', shown), shown
    token.evaluate("el => el.blur()")
    assert token.evaluate("el => getComputedStyle(el, '::after').content") == "none"  # drawn only while focused
    assert console_errors == []
