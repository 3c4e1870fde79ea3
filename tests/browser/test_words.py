"""Every page's words in Chromium: the two source texts are named as the index names them, and no TeX shows as text.

The index names the sources "Chapter 6" (the book's chapter) and "Module 9" (the workshop's module); a learner never
reads "the seed" for either. (A "Seed" box or a "New seed" button is a random-number seed, another meaning, and keeps
its name.) Each page the index links to is opened with the guided prompts off, its "About this page" fold and every
card's answer opened, and each of its tabs shown in turn, so that every text it has is drawn once. What is read is
what a learner sees: the page's visible text, inside Bokeh's shadow roots too, with the equations KaTeX renders left
out (their hidden MathML holds the TeX source), and the words its plots draw on their canvases (titles, axis labels,
legends, colour bars).
"""

import re

import pytest

from app.pages import available_pages

ROUTES = [""] + [info.route for info in available_pages()]
"""The index and every page it links to."""

SOURCE_AS_SEED = re.compile(r"\bthe seed\b|\bseed's|\bseeds'|\bseed 00|\(seed\b", re.IGNORECASE)
"""A source text called a seed: "the seed's table", "(seed 001, equation 9)", "Seed 001 section 4"."""
TEX = re.compile(r"\\[A-Za-z]+|_\{")
"""TeX source shown as text: a command such as \\theta, or a braced subscript such as s_{t+1}."""

SHOWN_TEXT = """
() => {
  // The visible text of the document and of every shadow root in it, KaTeX's rendered equations left out.
  const texts = [];
  const visit = (root) => {
    const hidden = [];
    for (const el of root.querySelectorAll('.katex')) { hidden.push([el, el.style.display]); el.style.display = 'none'; }
    const blocks = root === document ? [document.body] : Array.from(root.children);
    for (const el of blocks) {
      if (!['STYLE', 'SCRIPT', 'LINK'].includes(el.tagName) && el.checkVisibility()) texts.push(el.innerText);
    }
    for (const [el, display] of hidden) el.style.display = display;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
  return texts.join('\\n');
}
"""
PLOT_WORDS = """
() => {
  // The words the plots draw on their canvases: titles, axis labels, legend items, colour bars' titles.
  const words = [];
  const text = (value) => typeof value === 'string' ? value : (value && typeof value.value === 'string' ? value.value : '');
  for (const doc of Bokeh.documents) {
    for (const model of doc.all_models) {
      const name = model.constructor.__name__;
      if (name === 'Title') words.push(text(model.text));
      else if (name.endsWith('Axis')) words.push(text(model.axis_label));
      else if (name === 'LegendItem') words.push(text(model.label));
      else if (name === 'ColorBar') words.push(text(model.title));
    }
  }
  return words.filter((word) => word).join('\\n');
}
"""
OPEN_DETAILS = """
() => {
  // Open every fold of the page (a card's answer and explanation), inside shadow roots too.
  const visit = (root) => {
    for (const el of root.querySelectorAll('details')) el.open = true;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(document);
}
"""
MODELS = "() => Bokeh.documents[0]._all_models.size"
"""How many Bokeh models the page has: a tab opened for the first time adds its section's."""


def sentences(text: str, pattern: re.Pattern) -> list[str]:
    """The sentences (or lines) of `text` in which `pattern` occurs, each once, in order."""
    found = []
    for sentence in re.split(r"\n+|(?<=[.!?])\s+", text):
        sentence = re.sub(r"\s+", " ", sentence).strip()
        if pattern.search(sentence) and sentence not in found:
            found.append(sentence)
    return found


def read_every_part(page) -> tuple[str, str]:
    """Open the page's folds and each of its tabs in turn; the visible text and the plots' words of every part."""
    about = page.get_by_role("button", name=re.compile("About this page"))
    if about.count():
        about.first.click()
        page.wait_for_timeout(300)
    texts, words = [], []

    def read():
        page.evaluate(OPEN_DETAILS)
        texts.append(page.evaluate(SHOWN_TEXT))
        words.append(page.evaluate(PLOT_WORDS))

    read()
    tabs = page.locator(".bk-tab")
    for i in range(1, tabs.count()):  # the first tab is built with the page
        models = page.evaluate(MODELS)
        tabs.nth(i).click()
        page.wait_for_function(f"() => Bokeh.documents[0]._all_models.size > {models}", timeout=30_000)
        page.wait_for_timeout(500)  # the section's later parts (a run's first sentence, a card) arrive after it
        read()
    return "\n".join(texts), "\n".join(words)


@pytest.mark.parametrize("route", ROUTES, ids=[route or "index" for route in ROUTES])
def test_no_page_calls_a_source_a_seed_or_shows_tex_as_text(open_page, console_errors, route):
    page = open_page(route)
    text, words = read_every_part(page)
    assert len(text) > 200, "the page's text was not read"
    seeds = sentences(text + "\n" + words, SOURCE_AS_SEED)
    assert seeds == [], f"/{route} calls a source text a seed (name it Chapter 6 or Module 9) in:\n" + "\n".join(seeds)
    tex = sentences(text + "\n" + words, TEX)
    assert tex == [], f"/{route} shows TeX source as text in:\n" + "\n".join(tex)
    assert console_errors == []
