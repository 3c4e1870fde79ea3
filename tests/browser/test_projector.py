"""What a projector shows: equations typeset in KaTeX's own fonts, served by the app with no network beyond it, and a
header that is one row of one height on every page at 1366 x 768 and folds on a phone."""

import re

import pytest
from playwright.sync_api import expect

from app.pages import available_pages
from app.serving.server import APP_TITLE

NO_EQUATION = {"lab"}
"""The pages that show no equation (the lab lists its exercises)."""
EQUATION_ROUTES = [info.route for info in available_pages() if info.name not in NO_EQUATION]
ROUTES = [""] + [info.route for info in available_pages()]

KATEX_FONTS = """
() => {
  // Every element KaTeX drew (inside Bokeh's shadow roots) with text of its own, by the face its computed style asks for.
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(document);
  const typeset = all.filter((el) => el.closest('.katex-html') && el.checkVisibility()
    && [...el.childNodes].some((node) => node.nodeType === Node.TEXT_NODE && node.textContent.trim()));
  const weight = (w) => (w === 'normal' ? '400' : w === 'bold' ? '700' : String(w));
  const used = new Set(typeset.map((el) => {
    const style = getComputedStyle(el);
    return `${style.fontFamily.split(',')[0].trim().replace(/"/g, '')} ${style.fontStyle} ${weight(style.fontWeight)}`;
  }));
  const faces = [...document.fonts].filter((f) => f.family.includes('KaTeX'))
    .map((f) => ({ face: `${f.family.replace(/"/g, '')} ${f.style} ${weight(f.weight)}`, status: f.status }));
  return { typeset: typeset.length, used: [...used].sort(), faces };
}
"""
"""The KaTeX faces the page's typeset equations use (family, style and weight of each element with text), and every
KaTeX face the document declares with its status."""


def font_report(page) -> dict:
    page.evaluate("async () => { await document.fonts.ready; }")
    return page.evaluate(KATEX_FONTS)


def unloaded(report: dict) -> list[str]:
    """The faces the equations use that the document has not loaded: 'FACE: status', or 'FACE: not declared'."""
    status = {}
    for face in report["faces"]:
        status[face["face"]] = "loaded" if "loaded" in (status.get(face["face"]), face["status"]) else face["status"]
    return [f"{face}: {status.get(face, 'not declared')}" for face in report["used"]
            if face.startswith("KaTeX") and status.get(face) != "loaded"]


@pytest.mark.parametrize("route", EQUATION_ROUTES)
def test_equations_are_typeset_in_katex_fonts_that_load_offline(open_page, console_errors, route):
    page = open_page(route)
    failed = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("response", lambda response: failed.append(f"{response.url} {response.status}") if response.status >= 400 else None)
    page.get_by_role("button", name=re.compile("About this page")).click()
    expect(page.locator(".equation-card .katex-html").first).to_be_visible()
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    report = font_report(page)
    # The faces load once a drawn equation asks for them; a face still loading is given the time it needs.
    for _ in range(20):
        if not unloaded(report) or any(f["status"] == "error" for f in report["faces"]):
            break
        page.wait_for_timeout(250)
        report = font_report(page)
    assert report["typeset"] > 0, "no equation typeset in KaTeX's HTML"
    assert {"KaTeX_Main normal 400", "KaTeX_Math italic 400"} <= set(report["used"]), report["used"]
    assert unloaded(report) == [], f"KaTeX faces not loaded: {unloaded(report)}"
    assert [f for f in report["faces"] if f["status"] == "error"] == []
    assert failed == []
    assert console_errors == []


def test_katex_files_come_from_the_app(page, server_url):
    """The stylesheets and fonts are the app's own routes: nothing names a host of its own."""
    response = page.request.get(f"{server_url}/components/assets/KaTeXFiles/__css__/katex/fonts.css")
    assert response.ok
    fonts = re.findall(r"url\(([^)]+)\)", response.text())
    assert len(fonts) == 20 and all(url.startswith("fonts/KaTeX_") and url.endswith(".woff2") for url in fonts)
    font = page.request.get(f"{server_url}/components/assets/KaTeXFiles/__css__/katex/{fonts[0]}")
    assert font.ok and font.body()[:4] == b"wOF2"
    refused = page.request.get(f"{server_url}/components/assets/KaTeXFiles/__css__/katex/../__init__.py")
    assert not refused.ok


DESK = {"width": 1366, "height": 768}
"""A projector's, and a classroom laptop's, screen in CSS pixels."""
ONE_ROW = 48
"""The most height, in px, of a header whose controls are all on one row (it measures 47 px: the two switches one
above the other at its right end)."""

HEADER = """
() => {
  const header = document.getElementById('header');
  const box = header.getBoundingClientRect();
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(header);
  const controls = all.filter((el) => el.matches('a[href], button, input, [role=switch]') && el.checkVisibility())
    .map((el) => {
      const b = el.getBoundingClientRect();
      const name = el.getAttribute('aria-label') || (el.labels && el.labels.length ? el.labels[0].textContent : el.textContent);
      return { name: (name || '').trim(), top: b.top, bottom: b.bottom,
               left: b.left, right: b.right };
    });
  return { height: box.height, width: window.innerWidth, controls };
}
"""
"""The header's height and its shown controls' boxes and names."""


def room_or_page(route: str, teacher_token: str) -> tuple[str, str]:
    return (route, f"?token={teacher_token}") if route == "room" else (route, "")


@pytest.fixture
def desk(page):
    page.set_viewport_size(DESK)
    return page


def test_the_header_is_one_row_of_one_height_on_every_page(desk, open_page, console_errors, teacher_token):
    heights, places = {}, {}
    for route in [*ROUTES, "room"]:
        page = open_page(*room_or_page(route, teacher_token), **({"drawn": "[role=switch]"} if route == "room" else {}))
        page.wait_for_timeout(500)  # the switches are drawn with the page's last parts
        header = page.evaluate(HEADER)
        heights[route or "index"] = header["height"]
        names = [c["name"] for c in header["controls"]]
        places[route or "index"] = [(c["name"], round(c["left"])) for c in header["controls"]]
        # Every page's link, the light/dark switch and both switches are shown, on the header's one row.
        assert {APP_TITLE, "Overview", "Light / dark", "Guided prompts", "Counted in the room"} <= set(names), names
        assert {info.title for info in available_pages()} <= set(names), names
        assert "Menu" not in names
        for control in header["controls"]:
            assert control["top"] >= 0 and control["bottom"] <= header["height"], control
            assert control["right"] <= header["width"], control
    assert len(set(heights.values())) == 1, heights
    assert max(heights.values()) <= ONE_ROW, heights
    # Every link and switch is where it was on the page before: the current page's bold link moves none.
    assert all(place == places["index"] for place in places.values()), places
    assert console_errors == []


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 3}
"""An iPhone 13's screen in CSS pixels (as tests/browser/test_phone.py)."""
FOLDED = 48
"""The most height, in px, of the header on a phone with its menu folded (it measures 41 px; it took 102 px when the
switches and the menu button had a row of their own)."""


@pytest.fixture
def phone(browser):
    context = browser.new_context(**PHONE)
    context.add_init_script(
        "try { localStorage.setItem('feedback-lab.guide', JSON.stringify({prompts: false, answers: {}})) } catch (e) {}")
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("route", ["", "group-baselines", "live-run", "kl", "reward-model"])
def test_the_header_folds_on_a_phone_and_every_control_is_reachable(phone, server_url, route):
    errors = []
    phone.on("pageerror", lambda exc: errors.append(str(exc)))
    phone.goto(f"{server_url}/{route}")
    phone.locator("[role=switch]:not([disabled])").first.wait_for(state="attached", timeout=30_000)
    phone.wait_for_timeout(500)
    folded = phone.evaluate(HEADER)
    assert folded["height"] <= FOLDED, folded
    assert {c["name"] for c in folded["controls"]} == {APP_TITLE, "Menu", "Light / dark"}, folded["controls"]
    menu = phone.get_by_role("button", name="Menu")
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.tap()
    expect(menu).to_have_attribute("aria-expanded", "true")
    nav = phone.get_by_role("navigation", name="Pages")
    for info in available_pages():
        expect(nav.get_by_role("link", name=info.title, exact=True)).to_be_visible()
    for name in ("Guided prompts", "Counted in the room"):
        expect(phone.get_by_role("switch", name=name)).to_be_visible()
    opened = phone.evaluate(HEADER)
    cut = [c for c in opened["controls"] if c["left"] < 0 or c["right"] > opened["width"]]
    assert cut == []
    menu.tap()
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(phone.get_by_role("switch", name="Guided prompts")).to_be_hidden()
    assert phone.evaluate(HEADER)["height"] == folded["height"]
    assert errors == []
