"""The token-world page in Chromium: the seed's world, sliders with the keyboard, a shared link, streamed training."""

import io
import re

import numpy as np
from PIL import Image
from playwright.sync_api import expect

from app.pages.token_world import TokenWorldPage
from app.pages.token_world.figures import critic_columns
from app.pages.token_world.text import summary_text
from bench.servers import wait_until
from engines.token_world import TokenWorldSettings, gae_decomposition_exact, token_values
from engines.token_world_training import train_token_world


def expected_sentence(T=6, threshold=4, p_a=0.6, lam=0.95, critic_noise=0.15, gamma=1.0, seed=0):
    """The summary sentence as the engine's numbers make it, tags stripped."""
    settings = TokenWorldSettings(T=T, threshold=threshold, p_a=p_a, gamma=gamma, lambdas=(lam,), critic_noises=(0.05, critic_noise), seed=seed, tokens="")
    at = gae_decomposition_exact(settings)
    text = summary_text(T, threshold, p_a, lam, critic_noise, token_values(T, threshold, p_a, gamma), at, critic_columns(at.critic_noises, critic_noise))
    return re.sub(r"</?strong>", "", text)


def inked_share(element) -> float:
    """The share of an element's pixels that are not (near) white, from a screenshot of it."""
    grey = np.asarray(Image.open(io.BytesIO(element.screenshot())).convert("L"))
    return float((grey < 200).mean())


def query_value(page, name):
    return float(page.evaluate(f"() => new URLSearchParams(location.search).get('{name}')"))


def test_page_loads_with_the_seed_numbers(open_page, console_errors, shown_text, save_screenshot):
    page = open_page("token-world")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence()
    assert "V(start) = 0.5443" in shown_text(page.locator(".fl-summary").first)
    page.locator(".bk-tab", has_text="One episode").click()  # built on first view
    table = page.locator("table.fl-episode").first
    expect(table).to_be_visible()
    assert "tokens ABABAA, reward at the end = 1" in shown_text(table)
    assert shown_text(table.locator("tbody tr").first) == "0 (0, 0) A 0 0.563 0.577 +0.014 +0.327 +0.138"
    page.locator(".bk-tab", has_text="GAE: bias² and variance against λ").click()
    expect(page.locator(".bk-Canvas")).to_have_count(4)  # the heat map (its tab now hidden) and the three λ panels
    page.wait_for_function("() => new URLSearchParams(location.search).get('section') === 'lambda'")
    canvases = page.locator(".bk-Canvas")

    def panels_laid_out() -> bool:  # the three λ panels take their height only after the tab's layout settles
        boxes = [canvases.nth(i).bounding_box() for i in range(4)]
        return sum(box is not None and box["height"] > 100 for box in boxes) >= 3

    wait_until(panels_laid_out, 20, "the three λ panels laid out")
    # Drawn, not only laid out: each panel's lines, axes and grid ink well over 2% of its pixels, where an undrawn
    # one (a tab's gridplot, bokeh/bokeh#13384) inks only two stray labels.
    wait_until(lambda: all(inked_share(canvases.nth(i)) > 0.02 for i in range(1, 4)), 20, "the three λ panels drawn")
    save_screenshot(page, "token_world")
    assert console_errors == []


def test_keyboard_moves_lambda_and_T_clamps_the_threshold(open_page, console_errors, slider_handle, slider_value):
    page = open_page("token-world")
    summary = page.locator(".fl-summary").first
    handle = slider_handle(page, "GAE λ")
    handle.focus()
    for _ in range(2):
        handle.press("ArrowLeft")
    expect(summary).to_contain_text("At λ = 0.85 ")
    page.wait_for_function("() => Math.abs(parseFloat(new URLSearchParams(location.search).get('lam')) - 0.85) < 1e-9")
    lam = query_value(page, "lam")
    expect(summary).to_have_text(expected_sentence(lam=lam))

    handle = slider_handle(page, "Tokens per reply T")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowLeft")
    expect(page.get_by_text("The threshold 4 was more than T = 3 tokens, so it is now 3.")).to_be_visible()
    expect(summary).to_have_text(expected_sentence(T=3, threshold=3, lam=lam))
    assert slider_value(page, "A's needed") == "3"
    page.wait_for_function("() => new URLSearchParams(location.search).get('threshold') === '3'")
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors, shown_text, slider_value):
    page = open_page("token-world", "?T=8&threshold=5&p_a=0.7&lam=0.5&critic_noise=0.1&gamma=0.9&seed=3&reply=sampled&episode_seed=11&section=lambda")
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence(8, 5, 0.7, 0.5, 0.1, 0.9, 3)
    assert slider_value(page, "Tokens per reply T") == "8"
    expect(page.locator(".bk-Canvas")).to_have_count(3)  # the link opened the λ panels' section, and built no other
    page.locator(".bk-tab", has_text="One episode").click()
    expect(page.get_by_text(re.compile(r"episode seed 11, 8 tokens from the policy"))).to_be_visible()
    assert page.get_by_text("in the link was ignored").count() == 0
    assert console_errors == []


def test_bad_link_shows_a_notice_not_a_traceback(open_page, console_errors, shown_text):
    page = open_page("token-world", "?T=40&lam=abc")
    assert page.get_by_text("in the link was ignored").count() == 2
    assert shown_text(page.locator(".fl-summary").first) == expected_sentence()
    assert console_errors == []


def test_training_streams_into_the_plot_and_the_seed_table(open_page, console_errors):
    page = open_page("token-world", "?seeds=5&steps=20&shift=true&section=training")
    page.get_by_role("button", name="Start").click()
    expect(page.get_by_text("median updates to reach 0.9")).to_be_visible(timeout=20_000)
    page2 = TokenWorldPage(query={"seeds": "5", "steps": "20", "shift": "true"})
    result = train_token_world(page2.training_settings())
    row = page.locator("tr", has_text="REINFORCE, leave-one-out baseline").first
    expect(row).to_contain_text(" / ".join(f"{x:.3f}" for x in result.mean_at[1]))
    expect(page.get_by_text("5 seeds × 20 updates of 16 episodes, +5 reward shift")).to_be_visible()
    assert console_errors == []
