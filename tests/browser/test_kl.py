"""The KL page in Chromium: the seed's exchange rate, the log beta slider, the zero-probability toggle, a link."""

import re

from playwright.sync_api import expect

from app.pages.kl.figures import beta_of, reply_space
from app.pages.kl.text import summary_text
from engines.kl_optimal import optimal_policy


def expected_sentence(log_beta, zero_best=False):
    beta = beta_of(log_beta)
    space, _, _ = reply_space(zero_best)
    return re.sub(r"</?strong>", "", summary_text(beta, space, optimal_policy(space, beta)))


def metric(page, key):
    return page.locator(f'.fl-metric[data-key="{key}"] .fl-metric-value').first


def test_page_loads_with_the_seed_beta(open_page, console_errors, shown_text, slider_value, save_screenshot):
    page = open_page("kl")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(-0.7)
    assert slider_value(page, "KL coefficient β") == "0.2"
    policy = optimal_policy(reply_space(False)[0], 0.2)
    assert shown_text(metric(page, "kl")) == f"{policy.kl[0]:.3f}"
    assert shown_text(metric(page, "reward")) == f"{policy.reward[0]:.3f}"
    page.locator(".bk-tab", has_text="Two replies: the exchange rate").click()  # built on first view
    expect(page.locator(".fl-two").first).to_be_visible()
    two = shown_text(page.locator(".fl-two").first)
    assert "e1/0.2 = e5 = 148" in two and "e1/0.05 = e20 ≈ 4.9 × 108" in two
    page.wait_for_timeout(300)  # let the plots finish drawing before the picture
    save_screenshot(page, "kl")
    assert console_errors == []


def test_keyboard_on_the_beta_slider_reaches_the_seed_beta_005(open_page, console_errors, shown_text, slider_handle, slider_value):
    page = open_page("kl")
    handle = slider_handle(page, "KL coefficient β")
    handle.focus()
    for _ in range(12):  # 12 steps of 0.05 in log10 beta: 0.2 -> 0.05
        handle.press("ArrowLeft")
    expect(page.locator(".fl-summary").first).to_have_text(re.compile(r"^At β = 0\.05 "))
    page.wait_for_function("() => Math.abs(parseFloat(new URLSearchParams(location.search).get('log_beta')) + 1.3) < 1e-9")
    log_beta = float(page.evaluate("() => new URLSearchParams(location.search).get('log_beta')"))
    expect(page.locator(".fl-summary").first).to_have_text(expected_sentence(log_beta))
    assert slider_value(page, "KL coefficient β") == "0.05"
    page.locator(".bk-tab", has_text="Two replies: the exchange rate").click()  # built now, with the β of now
    expect(page.locator(".fl-two-now").first).to_contain_text("e20 ≈ 4.9 × 108")
    assert console_errors == []


def test_zero_reference_probability_stays_zero(open_page, console_errors, shown_text, slider_handle):
    page = open_page("kl")
    page.locator(".bk-tab", has_text="The likeliest replies; one never written").click()
    page.get_by_role("checkbox").first.check()
    expect(page.locator(".fl-zero").first).to_have_text("0")
    page.wait_for_function("() => new URLSearchParams(location.search).get('zero_best') === 'true'")
    handle = slider_handle(page, "KL coefficient β")
    handle.focus()
    for _ in range(12):  # down to beta = 0.05: pi* piles onto the best reply left, never onto "superb"
        handle.press("ArrowLeft")
    expect(page.locator(".fl-summary").first).to_have_text(expected_sentence(-1.3, zero_best=True))
    assert "“good good good”" in shown_text(page.locator(".fl-summary").first)
    assert shown_text(page.locator(".fl-zero").first) == "0"
    assert console_errors == []


def test_shared_link_restores_state_and_bad_values_fall_back(open_page, console_errors, shown_text, slider_value):
    page = open_page("kl", "?log_beta=-2&zero_best=true&gap=2&section=two")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(-2.0, zero_best=True)
    assert slider_value(page, "KL coefficient β") == "0.01"
    assert page.get_by_role("checkbox").first.is_checked()
    assert "gap 2.0, β = 0.01:" in shown_text(page.locator(".fl-two-now").first)
    page = open_page("kl", "?log_beta=-9&gap=abc")
    assert page.get_by_text("in the link was ignored").count() == 2
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(-0.7)
    assert console_errors == []


def test_the_sampled_frontier_streams_in_from_a_link(open_page, console_errors, shown_text):
    page = open_page("kl", "?lm_prompts=2&lm_samples=4&lm_seed=3&section=live")
    status = page.locator(".fl-lm-status").first
    expect(status).to_contain_text("Press Start")
    page.get_by_role("button", name="Start").first.click()
    expect(status).to_contain_text("2 of 2 prompts × 4 replies sampled and scored", timeout=60_000)
    assert "log m = 1.39 nats" in shown_text(page.locator(".fl-approx").first)
    assert "No run's evaluations to draw" in shown_text(page.locator(".fl-lm-summary").first)
    query = page.evaluate("() => location.search")
    assert "lm_samples=4" in query and "lm_seed=3" in query
    assert console_errors == []
