"""A slider and the plot it moves in one view: on a 1366 x 768 laptop each analytic page opens with its first slider and
its first plot entirely in the window (guided prompts off). The phone's half is in test_phone.py."""

import re

import pytest
from playwright.sync_api import expect

from bench.page_layout import ANALYTIC, FIRST_SLIDER_AND_PLOT, SCREENS


@pytest.mark.parametrize("route", ANALYTIC)
def test_first_slider_and_first_plot_are_in_the_laptops_window(page, open_page, console_errors, route):
    page.set_viewport_size(SCREENS["laptop"]["viewport"])
    open_page(route)
    page.wait_for_timeout(1000)  # rows wrap and plots take their size once Bokeh has laid the page out
    found = page.evaluate(FIRST_SLIDER_AND_PLOT, False)
    assert found is not None, "no slider or no plot shown"
    assert found["inView"], f"slider at {found['slider']}, plot at {found['plot']} px, window {found['height']} px high"
    assert console_errors == []


def test_the_folded_prose_opens_with_one_click_onto_the_equation(open_page, console_errors, shown_text):
    page = open_page("token-world")
    about = page.get_by_role("button", name=re.compile("About this page"))
    notice = page.get_by_text("What to notice.")
    expect(notice).to_be_hidden()
    about.click()
    expect(notice).to_be_visible()
    expect(page.locator(".equation-card .katex").first).to_be_visible()  # KaTeX drawn from the page's own resources
    about.click()
    expect(notice).to_be_hidden()
    assert console_errors == []
