"""The reward-models page in Chromium: pairs from the embedded model, a short training run, the pair slider, a link."""

from playwright.sync_api import expect

from app.pages.reward_model.preference_html import gold
from engines.bradley_terry import oracle_accuracy
from engines.lm.preferences import PairSettings, make_pairs, split_pairs

QUERY = "?pairs=60&steps=20"
"""Small enough to generate and train in seconds on two cores."""
PAIRS_SECONDS = 90
"""Longest wait for the page's pairs, sampled by a model job on the server's cluster."""


def open_tab(page, title: str) -> None:
    """Open one of the page's three parts (built on its first opening)."""
    page.locator(".bk-tab", has_text=title).click()


def curve_points(page) -> int:
    return page.evaluate("() => Bokeh.documents[0].get_model_by_name('training').data.step.length")


def test_train_on_a_small_set_and_see_the_accuracy_curve(open_page, console_errors, shown_text, slider_handle, save_screenshot):
    pairs = make_pairs(PairSettings(pairs=60, seed=0))  # what the server samples for this link
    held = split_pairs(pairs, 0.2, 0)[1]
    acc_star = float(oracle_accuracy(held.g_a, held.g_b, held.tau_label))
    page = open_page("reward-model", QUERY)
    # Sampling the pairs is a model job: in a full `make test` on two cores its worker took longer than Playwright's
    # default 30 s once (2026-12-05), so the wait for it is longer.
    expect(page.locator(".fl-pairs-summary").first).to_be_visible(timeout=PAIRS_SECONDS * 1000)
    assert "60 pairs sampled from the embedded model" in shown_text(page.locator(".fl-pairs-summary").first)
    # The page of pairs: each continuation whole after its prompt, wrapped, nothing cut, its headers whole.
    table = page.locator(".fl-pairs").first
    expect(table).to_be_visible()
    cell = table.locator("tbody tr").first.locator("td").nth(1)
    assert shown_text(cell).startswith(pairs.prompt[0].strip()) and pairs.text_a[0].split()[-1] in shown_text(cell)
    clipped = table.evaluate("t => [...t.querySelectorAll('th, td')].filter(c => c.scrollWidth > c.clientWidth + 1).length")
    assert clipped == 0 and table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth + 1")
    open_tab(page, "Training the reward model")  # the model trains whichever part is open; its readings are here
    summary = page.locator(".fl-train-summary").first
    expect(summary).to_contain_text("held-out pairs", timeout=120_000)
    assert f"the ceiling Acc* = {acc_star:.3f}" in shown_text(summary)
    assert curve_points(page) == 20  # one point of the live curve per step (20 steps, read every step)
    page.wait_for_timeout(300)  # let the plots finish drawing before the picture
    save_screenshot(page, "reward_model")

    open_tab(page, "Preference pairs")
    handle = slider_handle(page, "Pairs shown from")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    pair = page.locator(".fl-pair").first
    expect(pair).to_contain_text("Pair 3.")
    assert f"a (g = {gold(pairs.g_a[3])}):" in shown_text(pair) and f"b (g = {gold(pairs.g_b[3])}):" in shown_text(pair)
    page.wait_for_function("() => new URLSearchParams(location.search).get('pair') === '3'")
    assert console_errors == []


def test_shared_link_restores_state(open_page, console_errors, shown_text, slider_value):
    page = open_page("reward-model", QUERY + "&pair=5&tau_label=1&min_count=3")
    expect(page.locator(".fl-pair").first).to_contain_text("Pair 5.", timeout=60_000)
    assert "labelled at τ_label = 1.00" in shown_text(page.locator(".fl-pairs-summary").first)
    assert slider_value(page, "Label temperature") == "1"
    open_tab(page, "Training the reward model")
    assert slider_value(page, "Embedding for tokens") == "3"
    assert console_errors == []


def test_a_link_opens_its_section(open_page, console_errors, slider_value):
    page = open_page("reward-model", QUERY + "&section=sweep")
    expect(page.locator(".bk-tab.bk-active")).to_have_text("Noisier raters (the stretch)", timeout=60_000)
    expect(page.get_by_text("Accuracy and Acc* as the raters get noisier")).to_be_visible()
    open_tab(page, "Training the reward model")
    page.wait_for_function("() => new URLSearchParams(location.search).get('section') === 'training'")
    assert slider_value(page, "Training steps") == "20"
    assert console_errors == []
