"""The index in Chromium: the course as a path, every page's picture drawn with its alt text."""

from app.pages import available_pages
from app.pages.thumbnails import PICTURES


def test_the_index_shows_every_page_with_its_picture(open_page, console_errors, save_screenshot):
    page = open_page("")
    pages = available_pages()
    entries = page.locator(".fl-index > li")
    assert entries.count() == len(pages)
    for entry, info in zip(entries.all(), pages):
        picture = entry.get_by_role("img")
        assert picture.get_attribute("alt") == PICTURES[info.name].alt
        # Decoded and drawn at its size: a broken data URI leaves naturalWidth at 0.
        assert picture.evaluate("img => img.complete && img.naturalWidth") == 160
        assert entry.get_by_role("link").get_attribute("href") == f"/{info.route}"
    assert page.get_by_role("heading", level=2).first.inner_text() == "The policy gradient and its noise"
    save_screenshot(page, "index")
    assert console_errors == []
