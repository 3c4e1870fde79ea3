"""What a page visit sends, in Bokeh models, stays under a ceiling (bench/bench_page_build.py counts them).

A page's visit costs the server about a millisecond of CPU per Bokeh model (building, documenting and
serialising it), so the count is what a change could quietly double. The ceilings are the counts of
2026-12-03 (after the sections built on first view) with about a tenth of room: a first visit (guided prompts on, nothing answered, so the
parts behind a question are not built) and a visit with every card answered; either opens each page's
first section only (the others are built when their tab is first opened). No timing is asserted.
"""

import pytest

from bench.bench_page_build import builders, visit

FIRST_VISIT = {"": 40, "baselines": 50, "toy-target": 140, "bandit": 85, "token-world": 145, "kl": 65, "preferences": 60}
"""Ceilings of a first visit (measured: index 33, baselines 43, toy target 125, bandit 73, token world 129, KL 58, preferences 53)."""
ANSWERED = {"": 40, "baselines": 140, "toy-target": 145, "bandit": 235, "token-world": 145, "kl": 180, "preferences": 176}
"""Ceilings with every card answered (measured: 33, 126, 129, 213, 131, 163, 160)."""


@pytest.mark.parametrize("route", list(FIRST_VISIT))
def test_a_page_visit_stays_under_its_ceiling_of_bokeh_models(route):
    build = builders([route])[route]
    first, answered = visit(build)[3], visit(build, revealed=True)[3]
    assert first <= FIRST_VISIT[route], f"/{route}: {first} Bokeh models on a first visit, ceiling {FIRST_VISIT[route]}"
    assert answered <= ANSWERED[route], f"/{route}: {answered} Bokeh models with every card answered, ceiling {ANSWERED[route]}"
    assert first <= answered  # what a question guards is built only once it is answered
