"""What a page visit sends, in Bokeh models, stays under a ceiling (bench/bench_page_build.py counts them);
a first slider step sends no stylesheet; every page's document passes Bokeh's integrity checks, which the
server skips on each visit (app.serving.server.skip_document_validation).

A page's visit costs the server about a millisecond of CPU per Bokeh model (building, documenting and
serialising it), so the count is what a change could quietly double. The ceilings are the counts with about a tenth
of room: a first visit (guided prompts on, nothing answered, so the
parts behind a question are not built) and a visit with every card answered; either opens each page's
first section only (the others are built when their tab is first opened). No timing is asserted.
"""

import panel as pn
import pytest
from bokeh.core.validation.check import check_integrity
from bokeh.core.validation.warnings import EMPTY_LAYOUT
from bokeh.document import Document
from bokeh.models import GlyphRenderer
from panel.io.state import set_curdoc, state

from app.pages import available_pages
from bench.bench_page_build import builders, prompts, visit
from bench.bench_slider_moves import next_value, sliders

FIRST_VISIT = {"": 35, "baselines": 45, "toy-target": 135, "bandit": 80, "token-world": 140, "kl": 64, "preferences": 58,
               "live-run": 165, "reward-model": 145, "group-baselines": 45}
"""Ceilings of a first visit, about a tenth above the counts measured on 2026-12-07 with the figure-first layout: index
28, baselines 41, toy target 120, bandit 70, token world 119, KL 58, preferences 53, live run 153, reward models 135,
group baselines 41."""
ANSWERED = {"": 35, "baselines": 135, "toy-target": 135, "bandit": 230, "token-world": 141, "kl": 176, "preferences": 173,
            "live-run": 165, "reward-model": 146, "group-baselines": 141}
"""Ceilings with every card answered (measured on 2026-12-07: 28, 118, 121, 192, 121, 157, 152, 154, 136, 132)."""
MODEL_PAGES = {"live-run", "reward-model"}
"""Pages whose visit starts model work on the cluster: what it has finished by then (a gold score's lines) adds models."""


@pytest.mark.parametrize("route", list(FIRST_VISIT))
def test_a_page_visit_stays_under_its_ceiling_of_bokeh_models(route):
    build = builders([route])[route]
    first, answered = visit(build)[3], visit(build, revealed=True)[3]
    assert first <= FIRST_VISIT[route], f"/{route}: {first} Bokeh models on a first visit, ceiling {FIRST_VISIT[route]}"
    assert answered <= ANSWERED[route], f"/{route}: {answered} Bokeh models with every card answered, ceiling {ANSWERED[route]}"
    assert first <= answered or route in MODEL_PAGES  # what a question guards is built only once it is answered


@pytest.mark.parametrize("route", ["baselines", "bandit", "token-world", "kl", "preferences", "group-baselines"])
def test_a_pages_first_slider_step_keeps_every_stylesheet(route):
    # A step that changed a pane's stylesheets would make Bokeh walk the whole document (app.serving.server.TemplateBootstrap).
    # (Toy target's sliders answer after a short delay, on a later tick: the pages here answer in the step itself.)
    doc, changed = Document(), []
    with set_curdoc(doc), prompts(False):
        template = builders([route])[route]()
        template.server_doc(doc)
        doc.on_change(lambda event: changed.append(getattr(event, "attr", None)))
        state._connected[doc] = True  # as a connected session's document: the step's changes are held, then taken
        widget = sliders(template)[-1]
        widget._process_events({"value": next_value(widget, widget.value < widget.end)})
        changed += [getattr(event, "attr", None) for event in doc.callbacks._held_events]
        doc.callbacks._held_events = []
    assert "data" in changed or "text" in changed  # the step was answered
    assert "stylesheets" not in changed


def integrity_problems(doc: Document) -> list[str]:
    """Bokeh's errors and warnings about `doc`, but for empty layouts: a section's holder before its tab is opened."""
    issues = check_integrity(list(doc.models))
    return [f"{i.code} {i.name}: {i.text}" for i in issues.error + issues.warning if i.code != EMPTY_LAYOUT.code]


@pytest.mark.parametrize("route", list(FIRST_VISIT))
def test_a_visit_s_document_passes_bokeh_s_integrity_checks(route):
    for revealed in (False, True):
        doc = Document()
        with set_curdoc(doc), prompts(not revealed):
            builders([route])[route]().server_doc(doc)
        assert integrity_problems(doc) == [], f"/{route}"


@pytest.mark.parametrize("info", [i for i in available_pages() if i.name != "lab"], ids=lambda i: i.route)
def test_every_section_of_a_page_passes_bokeh_s_integrity_checks_and_sends_one_glyph_per_renderer(info):
    doc = Document()
    with set_curdoc(doc), prompts(False):
        page = info.module.page()
        try:
            pn.Column(page).server_doc(doc)
            for section in page.param.section.objects if "section" in page.param else ():
                page.section = section  # built on first view, into the document
            problems = integrity_problems(doc)
            heavy = [r for r in doc.models if isinstance(r, GlyphRenderer) and (r.nonselection_glyph, r.muted_glyph) != ("auto", "auto")]
        finally:
            if hasattr(page, "close"):
                page.close()
    assert problems == []
    assert heavy == [], "every renderer sends one glyph (widgets.glyphs.lean_figure)"
