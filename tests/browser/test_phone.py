"""Every page on a phone: Chromium emulating a 390 x 844 touch screen, as a learner's phone lays the page out."""

import re

import pytest
from playwright.sync_api import expect

from app.pages import available_pages
from bench.page_layout import ANALYTIC, FIRST_SLIDER_AND_PLOT

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 3}
"""An iPhone 13's screen in CSS pixels, with its pixel ratio; mobile emulation makes Chromium honour the viewport meta tag."""
HEADER_SHARE = 0.15
"""The most of the screen's height the header may take with its menu folded."""
ROUTES = [""] + [info.route for info in available_pages()]

LAYOUT = """
() => {
  // Every element of the page, inside Bokeh's shadow roots too.
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(document);
  const shown = (el) => el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) && !el.closest('[aria-hidden=true]');
  const controls = all.filter((el) => el.matches(
    'a[href], button, input, select, textarea, [role=slider], [role=button], [role=tab], [role=switch]') && shown(el));
  const cut = [];
  for (const el of controls) {
    el.scrollIntoView({ block: 'center', inline: 'nearest' });
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.left < -0.5 || box.right > window.innerWidth + 0.5) {
      cut.push(`${el.tagName.toLowerCase()} "${(el.getAttribute('aria-label') || el.textContent || el.title || '').trim().slice(0, 40)}" at ${Math.round(box.left)} to ${Math.round(box.right)}`);
    }
  }
  const main = document.getElementById('main');
  const plots = all.filter((el) => el.classList.contains('bk-Figure') && shown(el));
  return {
    pageWidth: document.documentElement.scrollWidth,
    mainScrollWidth: main.scrollWidth,
    mainWidth: main.clientWidth,
    screenWidth: window.innerWidth,
    header: document.getElementById('header').getBoundingClientRect().height,
    controls: controls.length,
    cut,
    widePlots: plots.filter((el) => el.getBoundingClientRect().width > main.clientWidth).length,
    plots: plots.length,
  };
}
"""
"""What a phone shows of the page: widths, the header's height, and every shown control that, scrolled into view, is
not entirely within the screen's width."""


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, **PHONE}


@pytest.mark.parametrize("route", ROUTES, ids=[route or "index" for route in ROUTES])
def test_page_fits_a_phone(open_page, console_errors, route):
    page = open_page(route)
    page.wait_for_timeout(1000)  # rows wrap and plots take their width once Bokeh has laid the page out
    layout = page.evaluate(LAYOUT)
    assert layout["pageWidth"] <= layout["screenWidth"], "the page scrolls sideways"
    assert layout["mainScrollWidth"] <= layout["mainWidth"], "something runs past the page's right edge"
    assert layout["header"] <= HEADER_SHARE * PHONE["viewport"]["height"]
    assert layout["controls"] > 0
    assert layout["cut"] == []
    assert layout["widePlots"] == 0
    assert console_errors == []


def test_menu_opens_the_links_on_a_phone(open_page, console_errors, screenshot_path):
    page = open_page("")
    menu = page.get_by_role("button", name="Menu")
    links = page.locator(".fl-links a")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(links.first).to_be_hidden()
    page.wait_for_timeout(300)  # let the page settle before its picture, the phone's screen as it is
    page.screenshot(path=str(screenshot_path("phone_index")))
    menu.tap()
    expect(menu).to_have_attribute("aria-expanded", "true")
    for i in range(links.count()):
        box = links.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["viewport"]["width"]
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Reward models").tap()
    page.wait_for_url("**/reward-model")
    assert console_errors == []


def test_slider_moves_by_touch(open_page, console_errors, slider_handle, slider_value):
    page = open_page("baselines")
    handle = slider_handle(page, "Baseline b")
    handle.scroll_into_view_if_needed()
    area = handle.locator(".noUi-touch-area").bounding_box()
    # Around the handle drawn 15 px wide, a fingertip's height and at least WCAG 2.2's 24 px target width.
    assert area["width"] >= 24 and area["height"] >= 40
    track = page.locator(".bk-input-group", has=page.locator(".bk-slider-title", has_text="Baseline b")).locator(".noUi-base")
    box = track.bounding_box()
    before = slider_value(page, "Baseline b")
    page.touchscreen.tap(box["x"] + 0.9 * box["width"], box["y"] + box["height"] / 2)
    expect(page.locator(".bk-slider-title", has_text="Baseline b")).not_to_have_text(f"Baseline b: {before}")
    assert console_errors == []


@pytest.mark.parametrize("route", ANALYTIC)
def test_first_plot_is_in_view_with_the_first_slider_at_the_top(open_page, console_errors, route):
    page = open_page(route)
    page.wait_for_timeout(1000)  # rows wrap and plots take their width once Bokeh has laid the page out
    found = page.evaluate(FIRST_SLIDER_AND_PLOT, True)
    assert found is not None, "no slider or no plot shown"
    assert found["inView"], f"slider at {found['slider']}, plot at {found['plot']} px, screen {found['height']} px high"
    assert console_errors == []


EQUATION_WIDTHS = """
(part) => {
  const host = part.getRootNode().host;
  const parts = [...part.getRootNode().querySelectorAll('.katex')].map((k) => k.getBoundingClientRect().width);
  return { box: host.clientWidth, content: host.scrollWidth, widestPart: Math.max(...parts), parts: parts.length };
}
"""
"""The equation's box and content widths, and its parts' (each formula between two of the page's gaps)."""


@pytest.mark.parametrize("route", [*ANALYTIC, "group-baselines", "live-run"])
def test_an_equation_wraps_its_parts_onto_lines_of_their_own(open_page, console_errors, route):
    """An equation is wider than its box on a phone only where one formula alone is (the live run's per-token reward):
    its parts wrap onto lines of their own, instead of scrolling past the edge."""
    page = open_page(route)
    page.get_by_role("button", name=re.compile("About this page")).click()
    part = page.locator(".equation-card .katex").first
    expect(part).to_be_visible()
    widths = part.evaluate(EQUATION_WIDTHS)
    assert widths["parts"] >= 2
    assert widths["content"] <= max(widths["box"], widths["widestPart"]) + 1, widths
    assert console_errors == []
