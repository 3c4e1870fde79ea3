"""What a projector and a printer show of a page's tables: the room's runs table with its headers whole."""

import json
import shutil

import pytest

DESK = {"width": 1366, "height": 768}
"""A projector's laptop at 1366 x 768 (as tests/browser/test_projector.py)."""

HEADERS = """
(host) => {
  // Panel draws the table in its element's shadow root.
  const root = host.shadowRoot || host;
  const table = root.querySelector('.tabulator') || host;
  const holder = root.querySelector('.tabulator-tableholder');
  const box = table.getBoundingClientRect();
  const parent = (host.parentElement || host.getRootNode().host).getBoundingClientRect();
  const titles = [...root.querySelectorAll('.tabulator-col-title')].map((t) => ({
    text: t.textContent, cut: t.scrollWidth > t.clientWidth + 1, right: t.getBoundingClientRect().right }));
  return { titles, right: box.right, parentRight: parent.right, scrolls: holder ? holder.scrollWidth > holder.clientWidth + 1 : false,
           overflowX: holder ? getComputedStyle(holder).overflowX : null, viewport: window.innerWidth };
}
"""
"""Each header title of a Tabulator table (whether its text is cut), and whether the table spills out of its box."""


@pytest.fixture
def listed_run(runs_dir):
    """A finished run's folder in the server's runs folder, named as the live run names them, with a held-out
    evaluation; removed afterwards (its settings, 7 steps at beta 0.123, are no other test's)."""
    folder = runs_dir / "20261207-225959-embedded-vader-beta0.123-loo"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"settings": {"beta": 0.123, "steps": 7, "advantage": "loo"}}))
    (folder / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": 0.5}) + "\n" for s in range(1, 8)))
    evaluation = {"step": 7, "reward": 0.61234, "p_positive": 0.8125, "kl_exact": 1.2345, "distinct_1": 0.4567, "gold": 1.25}
    (folder / "eval.jsonl").write_text(json.dumps(evaluation) + "\n")
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize("width", [1366, 900])
def test_the_rooms_runs_table_shows_every_header_whole(page, open_page, console_errors, listed_run, width):
    page.set_viewport_size({"width": width, "height": DESK["height"]})
    page = open_page("live-run", "?section=runs")
    page.locator(".fl-runs .tabulator-row", has_text=listed_run.name).wait_for(timeout=30_000)
    table = page.locator(".fl-runs").first
    table.locator(".tabulator-col-title", has_text="P(positive)").wait_for(timeout=30_000)
    report = table.evaluate(HEADERS)
    print(report)
    named = [t for t in report["titles"] if t["text"].strip()]
    assert [t["text"] for t in named if t["cut"]] == [], report
    # The table fits its column, or scrolls sideways in its own box; it never runs past the page's edge.
    assert report["right"] <= min(report["parentRight"], report["viewport"]) + 1, report
    wide = [t["text"] for t in named if t["right"] > report["right"] + 1]
    assert not wide or report["scrolls"], report
    if width == DESK["width"]:
        assert wide == [], report  # a projector's laptop shows every column at once
    assert console_errors == []


PRINT_LAYOUT = """
() => {
  const style = (selector) => {
    const el = document.querySelector(selector);
    if (!el) return null;
    const s = getComputedStyle(el);
    return { overflowY: s.overflowY, overflowX: s.overflowX, height: s.height, maxHeight: s.maxHeight, position: s.position,
             display: s.display, scrollHeight: el.scrollHeight, clientHeight: el.clientHeight };
  };
  return { main: style('#main'), container: style('#container'), header: style('#header'), body: style('body'),
           html: style('html'), content: style('#content') };
}
"""
"""The computed layout of the template's parts: the page's scroll container (#main), its frame, the sticky header."""


CANVASES = """
() => {
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(document);
  return all.filter((el) => el.tagName === 'CANVAS' && el.getBoundingClientRect().height > 50).length;
}
"""
"""How many plot canvases are laid out with a height (inside Bokeh's shadow roots)."""


def test_a_page_prints_whole_with_its_figures(page, open_page, console_errors):
    page.set_viewport_size(DESK)
    page = open_page("preferences")
    screen = page.evaluate(PRINT_LAYOUT)
    print(screen)
    page.emulate_media(media="print")
    printed = page.evaluate(PRINT_LAYOUT)
    print(printed)
    main = printed["main"]
    # No scroll container: the page's column is as tall as what it holds, so the printer gets every part.
    assert main["overflowY"] == "visible" and main["maxHeight"] == "none", printed
    assert main["scrollHeight"] <= main["clientHeight"] + 1, printed
    for part in ("container", "content", "body", "html"):
        if printed[part] is not None:
            assert printed[part]["overflowY"] == "visible", (part, printed)
    # No header over every printed page, and no navigation in the handout.
    assert printed["header"]["position"] not in ("sticky", "fixed") or printed["header"]["display"] == "none", printed
    # The figures print: each plot's canvas is laid out (not hidden) and sits within the printed column.
    shown = page.evaluate(CANVASES)
    assert shown >= 2
    page.emulate_media(media="screen")
    assert console_errors == []
