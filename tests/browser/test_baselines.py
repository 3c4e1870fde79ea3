"""The baselines page in Chromium: it loads, its sliders move the numbers, a link restores it."""

import re

from playwright.sync_api import expect

from app.pages.baselines.text import summary_text


def plain(html: str) -> str:
    return html.replace("<strong>", "").replace("</strong>", "")


def sentence(page):
    return page.locator(".fl-summary").first


def test_page_loads_with_the_seed_numbers(open_page, console_errors, shown_text, save_screenshot):
    page = open_page("baselines")
    assert shown_text(sentence(page)) == plain(summary_text(0.5, 0.0))
    assert page.locator(".bk-Canvas").count() >= 1
    page.wait_for_timeout(300)  # let the plot finish drawing before the picture
    save_screenshot(page, "baselines")
    assert console_errors == []


def test_keyboard_on_the_b_slider_updates_the_numbers(open_page, console_errors, slider_handle, slider_value):
    page = open_page("baselines")
    handle = slider_handle(page, "Baseline b")
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    expected = plain(summary_text(0.5, 0.5))
    expect(sentence(page)).to_have_text(expected)
    assert float(slider_value(page, "Baseline b")) == 0.5
    # Five steps of 0.1 add up in floating point as the slider does it; the link writes the step's decimals.
    page.wait_for_function("() => new URLSearchParams(location.search).get('b') === '0.5'")
    assert console_errors == []


def test_a_moved_slider_gives_a_clean_link_value(open_page, console_errors, slider_handle):
    page = open_page("baselines")
    handle = slider_handle(page, "Probability of action 1")
    handle.focus()
    for _ in range(4):  # 0.5 + 4 x 0.05: 0.7000000000000001 in floating point
        handle.press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('p') === '0.7'")
    assert "000000" not in page.url
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors, shown_text, slider_value):
    page = open_page("baselines", "?p=0.3&b=4")
    assert shown_text(sentence(page)) == plain(summary_text(0.3, 4.0))
    assert slider_value(page, "Probability of action 1").startswith("0.3")
    assert console_errors == []


def test_bad_link_shows_a_notice_not_a_traceback(open_page, console_errors, shown_text):
    page = open_page("baselines", "?p=2&b=abc")
    assert page.get_by_text("in the link was ignored").count() == 2
    assert shown_text(sentence(page)) == plain(summary_text(0.5, 0.0))
    expect(page).to_have_url(re.compile(r"\?p=0\.5&b=0\.0$"))  # the link is rewritten to what is shown
    assert console_errors == []


def test_index_links_every_page(open_page, console_errors):
    page = open_page("")
    page.locator(".fl-index a", has_text="Baselines and variance").click()
    page.wait_for_url("**/baselines")
    # The header names the page in a word (its link's accessible name is the title).
    assert page.locator(".fl-nav a[aria-current=page]").first.text_content() == "Baselines"
    assert page.locator(".fl-nav a[aria-current=page]").first.get_attribute("aria-label") == "Baselines and variance"
    assert console_errors == []


def test_the_light_dark_switch_keeps_the_controls(open_page, console_errors, shown_text):
    page = open_page("baselines", "?p=0.3&b=4")
    page.get_by_role("button", name="Light / dark").click()
    page.wait_for_url(re.compile(r"theme=dark"))
    page.locator(".fl-summary").first.wait_for()
    assert shown_text(sentence(page)) == plain(summary_text(0.3, 4.0))
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert sum(map(int, re.findall(r"\d+", background)[:3])) < 3 * 128, f"a dark page, not {background}"
    page.get_by_role("button", name="Light / dark").click()
    page.wait_for_url(re.compile(r"theme=default"))
    assert console_errors == []
