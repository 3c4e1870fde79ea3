"""The bandit page in Chromium: the seed's Monte Carlo check, the b slider, training, a shared link."""

import re

from playwright.sync_api import expect

from app.pages.bandit import theta_of
from app.pages.bandit.text import summary_text
from engines.bandit import exact_total_variance, monte_carlo

MEANS = (5.0, 6.0, 7.0, 8.0)


def expected_sentence(b=6.5, prefer=0, logit=2.0, samples=200_000, seed=0):
    theta = theta_of(prefer, logit)
    mc = monte_carlo(MEANS, 1.0, theta, (0.0, b), samples, seed)
    return re.sub(r"</?strong>", "", summary_text(MEANS, 1.0, theta, b, samples, seed, mc))


def metric(page, key):
    return page.locator(f'.fl-metric[data-key="{key}"] .fl-metric-value').first


def query_value(page, name) -> float:
    return float(page.evaluate(f"() => new URLSearchParams(location.search).get('{name}')"))


def test_page_loads_with_the_seed_numbers_and_trains(open_page, console_errors, shown_text, save_screenshot):
    page = open_page("bandit")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence()
    expect(metric(page, "exact_none")).to_have_text("33.062")  # the seed's exact 33.06 and 1.375
    expect(metric(page, "exact_b")).to_have_text("1.375")
    expect(metric(page, "b_star")).to_have_text("6.500")
    # The training run starts when its section is first opened, on a worker thread, and streams into the table.
    page.locator(".bk-tab", has_text="Training with and without a baseline").click()
    expect(page.locator(".fl-training caption")).to_have_text("After step 400 of 400, 200 seeds", timeout=60_000)
    assert page.locator(".fl-training td", has_text="exact value V").count() == 1
    page.wait_for_timeout(300)  # let the plots finish drawing before the picture
    save_screenshot(page, "bandit")
    assert console_errors == []


def test_keyboard_moves_b_and_restarts_training(open_page, console_errors, slider_handle):
    page = open_page("bandit", "?samples=50000&seeds=50&steps=100&section=training")
    handle = slider_handle(page, "Baseline b")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    page.wait_for_function("() => Math.abs(parseFloat(new URLSearchParams(location.search).get('b')) - 6.8) < 1e-9")
    b = query_value(page, "b")
    expect(page.locator(".fl-summary").first).to_have_text(expected_sentence(b, samples=50_000))
    expect(metric(page, "exact_b")).to_have_text(f"{float(exact_total_variance(MEANS, 1.0, (0.0,) * 4, b)):.3f}")
    expect(page.locator(".fl-training caption")).to_have_text("After step 100 of 100, 50 seeds", timeout=60_000)
    handle = slider_handle(page, "Training steps")
    handle.focus()
    handle.press("ArrowLeft")
    expect(page.locator(".fl-training caption")).to_have_text("After step 90 of 90, 50 seeds", timeout=60_000)
    assert query_value(page, "steps") == 90
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors, shown_text, slider_value):
    page = open_page("bandit", "?prefer=4&logit=2&b=7.42&samples=50000&seed=9&seeds=20&steps=20")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(7.42, 4, 2.0, 50_000, 9)
    assert slider_value(page, "Logit θ_k") == "2"
    assert page.locator(".bk-btn.bk-active", has_text="prefers arm 4").count() == 1
    assert console_errors == []


def test_bad_link_shows_a_notice_not_a_traceback(open_page, console_errors, shown_text):
    page = open_page("bandit", "?lr=abc&prefer=9&samples=20000&seeds=20&steps=20")
    assert page.get_by_text("in the link was ignored").count() == 2
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(samples=20_000)
    assert console_errors == []
