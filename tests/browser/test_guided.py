"""The guided path in Chromium: answering a prediction reveals its panel; the off switch lives in the browser."""

from playwright.sync_api import expect

STORAGE_FAILS = """
Object.defineProperty(window, 'localStorage', {
  get() { throw new DOMException('The storage is disabled.', 'SecurityError') },
})
"""
"""Run before a page's scripts: a browser whose localStorage refuses every use, as some private windows do."""


def switch(page):
    return page.get_by_role("switch").first


def test_answering_a_prediction_reveals_the_demo(open_page, console_errors, save_screenshot):
    page = open_page("baselines", prompts=True)
    card = page.locator(".fl-card-baselines-what-moves")
    demo = page.locator(".fl-guarded", has=page.locator(".fl-summary"))
    expect(card).to_contain_text("which will not move?")
    expect(page.get_by_text("Answer the question above to see the demo.")).to_be_visible()
    expect(demo).to_be_hidden()
    reveal = card.get_by_role("button", name="Reveal")
    expect(reveal).to_be_disabled()  # nothing chosen yet
    page.wait_for_timeout(300)
    save_screenshot(page, "guided_before")
    card.get_by_role("radio", name="their standard deviation").check()
    reveal.click()
    expect(card).to_contain_text("Not quite. You chose: their standard deviation. The answer: their mean.")
    expect(card).to_contain_text("Only the mean stays put.")
    expect(demo).to_be_visible()
    expect(page.locator(".fl-summary").first).to_contain_text("Mean 0.2500")
    expect(page.get_by_text("Answer the question above to see the demo.")).to_be_hidden()
    page.wait_for_timeout(500)  # let the plot finish drawing before the picture
    save_screenshot(page, "guided_after")
    card.get_by_role("button", name="Ask me again").click()
    expect(demo).to_be_hidden()
    assert console_errors == []


def test_prompts_off_persists_in_this_browser_and_a_fresh_one_starts_with_prompts_on(
    open_page, console_errors, browser, server_url, wait_for_guide
):
    page = open_page("preferences", prompts=True)
    results = page.locator(".fl-guarded", has=page.locator(".fl-summary"))
    expect(results).to_be_hidden()
    expect(switch(page)).to_be_checked()
    switch(page).click()
    expect(results).to_be_visible()
    expect(page.locator(".fl-card-preferences-ceiling")).to_contain_text("The answer: about 0.79")
    page.reload()
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    wait_for_guide(page)
    expect(switch(page)).not_to_be_checked()
    expect(results).to_be_visible()
    page = open_page("kl", "?section=replies", prompts=True)  # another page of the same browser reads the same switch
    expect(switch(page)).not_to_be_checked()
    expect(page.locator(".fl-card-kl-never-written")).to_contain_text("The answer: exactly 0, for every β.")
    expect(page.get_by_text("The reference writes “superb” with probability")).to_be_visible()
    assert console_errors == []

    fresh = browser.new_context()
    try:
        other = fresh.new_page()
        other.goto(f"{server_url}/preferences")
        wait_for_guide(other)
        expect(switch(other)).to_be_checked()
        expect(other.locator(".fl-guarded", has=other.locator(".fl-summary"))).to_be_hidden()
    finally:
        fresh.close()


def test_without_local_storage_the_prompts_are_on_and_the_switch_works(page, server_url, console_errors, wait_for_guide):
    page.add_init_script(STORAGE_FAILS)
    page.goto(f"{server_url}/preferences")
    wait_for_guide(page)
    results = page.locator(".fl-guarded", has=page.locator(".fl-summary"))
    expect(switch(page)).to_be_checked()
    expect(results).to_be_hidden()
    switch(page).click()
    expect(results).to_be_visible()
    assert console_errors == []
