"""The group-baselines page in Chromium: it loads with the engine's numbers, K moves them, a link restores them, the worked
example and the training runs open in their tabs, and the prediction card guards the updates."""

from playwright.sync_api import expect

from app.pages.group_baselines.text import PREDICT, UNBIASED_CHOICES, summary_text
from engines.group_baselines import GroupBaselinesSettings, exact_moments

STREAM_MS = 60_000
"""How long a training run of a few seeds may take to stream in on two shared cores."""


def plain(html: str) -> str:
    return html.replace("<strong>", "").replace("</strong>", "")


def expected_sentence(p=(0.9, 0.2), K=4) -> str:
    return plain(summary_text(exact_moments(GroupBaselinesSettings(p=p, K=K)), K))


def sentence(page):
    return page.locator(".fl-summary").first


def test_page_loads_with_the_engine_numbers_and_k_moves_them(open_page, console_errors, shown_text, slider_handle):
    page = open_page("group-baselines")
    assert shown_text(sentence(page)) == expected_sentence()
    assert page.locator(".bk-Canvas").count() >= 1
    handle = slider_handle(page, "Replies per prompt K")
    handle.focus()
    for _ in range(4):
        handle.press("ArrowRight")
    expect(sentence(page)).to_have_text(expected_sentence(K=8))
    page.wait_for_function("() => new URLSearchParams(location.search).get('K') === '8'")
    assert console_errors == []


def test_a_link_restores_the_prompts_and_opens_the_worked_example(open_page, console_errors, shown_text):
    page = open_page("group-baselines", "?p_easy=0.95&p_hard=0.5&K=16&section=example", drawn=".fl-table")  # no plot there
    assert shown_text(sentence(page)) == expected_sentence(p=(0.95, 0.5), K=16)
    grpo = page.locator(".fl-table tr", has_text="GRPO (÷ std)")
    expect(grpo).to_contain_text("+0.8659")  # 0.5 / (sqrt(1/3) + 1e-4), by hand
    assert console_errors == []


def test_the_training_tab_trains_every_estimator(open_page, console_errors):
    page = open_page("group-baselines", "?steps=40&seeds=4")
    page.locator(".bk-tab", has_text="Training with each estimator").click()  # its run starts when opened
    expect(page.locator(".fl-training")).to_contain_text("J after 40 of 40 steps", timeout=STREAM_MS)
    expect(page.locator(".fl-training")).to_contain_text("GRPO")
    page.wait_for_function("() => new URLSearchParams(location.search).get('section') === 'training'")
    assert console_errors == []


def test_the_prediction_card_guards_the_updates(open_page, console_errors):
    page = open_page("group-baselines", prompts=True)
    card = page.locator(".fl-card-group-baselines-unbiased")
    updates = page.locator(".fl-guarded", has=page.locator(".fl-summary"))
    expect(card).to_contain_text(PREDICT.split(":")[1].strip()[:40])
    expect(page.get_by_text("Answer the question above to see the estimators' updates.")).to_be_visible()
    expect(updates).to_be_hidden()
    card.get_by_role("radio", name=UNBIASED_CHOICES["none-loo"]).check()
    card.get_by_role("button", name="Reveal").click()
    expect(card).to_contain_text("Only no baseline and leave-one-out.")
    expect(updates).to_be_visible()
    expect(sentence(page)).to_have_text(expected_sentence())
    assert console_errors == []
