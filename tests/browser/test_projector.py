"""What a projector shows: equations typeset in KaTeX's own fonts, served by the app with no network beyond it."""

import re

import pytest
from playwright.sync_api import expect

from app.pages import available_pages

NO_EQUATION = {"lab"}
"""The pages that show no equation (the lab lists its exercises)."""
EQUATION_ROUTES = [info.route for info in available_pages() if info.name not in NO_EQUATION]

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
