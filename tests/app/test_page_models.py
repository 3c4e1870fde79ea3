"""What a page visit sends, in Bokeh models, stays under a ceiling (bench/bench_page_build.py counts them).

A page's visit costs the server about a millisecond of CPU per Bokeh model (building, documenting and
serialising it), so the count is what a change could quietly double. The ceilings are the counts of
2026-12-03 with about a tenth of room: a first visit (guided prompts on, nothing answered, so the
parts behind a question are not built) and a visit with every card answered. No timing is asserted.
"""

import pytest

from bench.bench_page_build import builders, visit

FIRST_VISIT = {"": 40, "baselines": 60, "toy-target": 315, "bandit": 110, "token-world": 255, "kl": 220, "preferences": 70,
               "live-run": 155, "reward-model": 155}
"""Ceilings of a first visit (measured: index 33, baselines 53, toy target 286, bandit 98, token world 229, KL 199, preferences 63,
live run 140, reward models 140)."""
ANSWERED = {"": 40, "baselines": 150, "toy-target": 320, "bandit": 460, "token-world": 520, "kl": 395, "preferences": 190,
            "live-run": 155, "reward-model": 155}
"""Ceilings with every card answered (measured: 33, 136, 289, 417, 471, 359, 170, 140, 141)."""


@pytest.mark.parametrize("route", list(FIRST_VISIT))
def test_a_page_visit_stays_under_its_ceiling_of_bokeh_models(route):
    build = builders([route])[route]
    first, answered = visit(build)[3], visit(build, revealed=True)[3]
    assert first <= FIRST_VISIT[route], f"/{route}: {first} Bokeh models on a first visit, ceiling {FIRST_VISIT[route]}"
    assert answered <= ANSWERED[route], f"/{route}: {answered} Bokeh models with every card answered, ceiling {ANSWERED[route]}"
    assert first <= answered  # what a question guards is built only once it is answered
