"""Every page for screen readers and keyboards: axe-core's checks in Chromium, the controls' names, a visible focus.

axe-core runs on each page's first visit (guided prompts on, as a newcomer sees it; in either theme) and with each of
its sections open (`?section=NAME`, prompts off, so every part behind a question is drawn too).
"""

import panel as pn
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from app.pages import available_pages

BLOCKING = ("critical", "serious")
"""axe-core's impacts a page may not have; "moderate" and "minor" are reported, not failed on."""


def sections(info) -> list[str]:
    """The page's sections (the values of its `section` parameter), none if it shows no tabs."""
    for value in vars(info.module).values():
        if isinstance(value, type) and issubclass(value, pn.viewable.Viewer) and value.__module__ == info.module.__name__ \
                and "section" in value.param:
            return list(value.param["section"].objects)
    return []


ROUTES = [""] + [info.route for info in available_pages()]
VISITS = [
    visit for info in available_pages()
    for visit in [(info.route, f"?section={name}", False) for name in sections(info)]
] + [(route, query, True) for route in ROUTES for query in ("", "?theme=dark")]
"""(route, query, prompts on): every page with each section open, then every page's first visit, in the light theme
and in the dark one."""


def violations(page) -> list[dict]:
    return Axe().run(page).response["violations"]


def described(found: list[dict]) -> str:
    return "\n".join(f"{v['impact']} {v['id']}: {v['help']} at {[node['target'] for node in v['nodes'][:5]]}" for v in found)


@pytest.mark.parametrize(("route", "query", "prompts"), VISITS, ids=[f"{r or 'index'}{q}" for r, q, _ in VISITS])
def test_axe_finds_nothing_critical_or_serious(open_page, console_errors, route, query, prompts):
    # Some sections draw no plot (a table, replies as text): the page is drawn once its tabs are.
    page = open_page(route, query, prompts=prompts, drawn=".bk-Canvas, .fl-index, .fl-lab, .bk-panel-models-tabs-Tabs")
    page.wait_for_timeout(1000)  # the parts behind the questions arrive from the server after the first drawing
    found = [v for v in violations(page) if v["impact"] in BLOCKING]
    assert found == [], described(found)
    assert page.locator("#main[role=main]").count() == 1
    assert console_errors == []


def test_controls_say_what_they_set_or_do(open_page, console_errors):
    page = open_page("token-world")
    expect(page.get_by_role("slider", name="Tokens per reply T", exact=True)).to_have_attribute("aria-valuenow", "6.0")
    expect(page.get_by_role("slider", name="GAE λ", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Increase Critic seed (its noise z)")).to_have_count(1)
    expect(page.get_by_role("button", name="Decrease Critic seed (its noise z)")).to_have_count(1)
    toolbar = page.get_by_role("toolbar", name="Plot tools").first
    expect(toolbar.get_by_role("button", name="Reset")).to_have_count(1)
    expect(toolbar.get_by_role("button", name="Save")).to_have_count(1)
    expect(toolbar.get_by_role("button", name="Pan")).to_have_attribute("aria-pressed", "true")
    expect(toolbar.get_by_role("button", name="Box Zoom")).to_have_attribute("aria-pressed", "false")
    tab = page.get_by_role("tab", name="One episode")
    expect(tab).to_have_attribute("aria-selected", "false")
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("tab", name="Exact values V(t, k)")).to_have_attribute("aria-selected", "false")
    expect(page.get_by_role("navigation", name="Pages").get_by_role("link", name="Token world and GAE")).to_have_attribute("aria-current", "page")
    assert console_errors == []


FOCUSED = """
() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  const style = getComputedStyle(el);
  const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
  return {
    what: `${el.tagName.toLowerCase()} ${el.getAttribute('role') || ''} "${(el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 30)}"`,
    role: el.getAttribute('role') || el.tagName.toLowerCase(),
    shown: outline || style.boxShadow !== 'none',
  };
}
"""
"""The element the keyboard is on (inside shadow roots too), and whether it shows a focus ring (an outline of at least
2 px, or a box shadow as Bootstrap's inputs draw)."""


def test_keyboard_focus_is_visible(open_page, console_errors):
    page = open_page("token-world")
    seen = []
    for _ in range(45):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(FOCUSED))
    unseen = [f["what"] for f in seen if not f["shown"] and f["role"] != "body"]  # body: past the last control
    assert unseen == []
    roles = {f["role"] for f in seen}
    assert {"a", "slider", "input", "button", "tab"} <= roles, roles
    assert console_errors == []
