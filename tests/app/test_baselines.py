"""The baselines page without a browser: its plot data and its sentence against the engine."""

import numpy as np
import pytest

from app.pages.baselines import BaselinesPage, page
from app.pages.baselines.figures import B_GRID
from app.pages.baselines.text import SHIFT, shift_card_text, summary_text, table_markdown
from engines.two_action import R1, R2, two_action_estimates

SEED_SENTENCE = (
    "At b = 0.0: the estimate is <strong>5.50</strong> if action 1 is sampled and <strong>-5.00</strong> "
    "if action 2 is. Mean <strong>0.2500</strong>, standard deviation <strong>5.25</strong>. "
    "The two lines cross at b = 10.50."
)


def test_default_page_shows_the_seed_demo():
    pg = page(query={})
    assert (pg.p, pg.b) == (0.5, 0.0)
    assert pg.summary.object == f'<p class="fl-summary">{SEED_SENTENCE}</p>'
    assert len(pg.lines.data["b"]) == 151
    np.testing.assert_allclose(pg.lines.data["b"], np.linspace(0, 15, 151))
    assert (pg.figure.y_range.start, pg.figure.y_range.end) == (-10, 11)
    assert not pg.notice.visible


@pytest.mark.parametrize("p,b", [(0.3, 4.0), (0.05, 15.0), (0.95, 10.5), (0.5, 10.5)])
def test_plot_data_follow_the_engine(p, b):
    pg = BaselinesPage(query={})
    pg.param.update(p=p, b=b)
    lines = two_action_estimates(p, B_GRID)
    for column in ("g1", "g2", "mean"):
        np.testing.assert_array_equal(pg.lines.data[column], getattr(lines, column))
    point = two_action_estimates(p, b)
    assert pg.dots.data["b"] == [b, b]
    assert pg.dots.data["g"] == [float(point.g1), float(point.g2)]
    assert pg.cross.data == {"b": [float(point.cross)], "g": [float(point.mean)]}
    assert pg.rule.location == b
    shown = pg.metrics.values()
    assert shown == pytest.approx({k: float(getattr(point, k)) for k in ("g1", "g2", "mean", "sd", "cross")})
    assert summary_text(p, b) in pg.summary.object


def test_sentence_rounds_like_javascript_tofixed():
    # p = 0.5, b = 10.25: g1 = 0.375 and g2 = 0.125 are exact ties; toFixed(2) rounds them up.
    text = summary_text(0.5, 10.25)
    assert "<strong>0.38</strong> if action 1" in text
    assert "<strong>0.13</strong> if action 2" in text
    assert "At b = 10.3:" in text  # 10.25 is exactly representable: toFixed(1) gives 10.3


def test_seed_table_at_p_one_half():
    table = table_markdown(0.5)
    assert "| 1 (reward 11) | 5.5 | 0.25 |" in table
    assert "| 2 (reward 10) | -5 | 0.25 |" in table
    assert "| mean | 0.25 | 0.25 |" in table
    assert "| standard deviation | 5.25 | 0 |" in table


def test_link_state_is_applied():
    pg = page(query={"p": "0.3", "b": "4"})
    assert (pg.p, pg.b) == (0.3, 4.0)
    assert "At b = 4.0: the estimate is <strong>4.90</strong>" in pg.summary.object
    assert not pg.notice.visible


@pytest.mark.parametrize(
    "query,bad,good,why",
    [
        ({"p": "abc", "b": "2"}, "p", "b", "not a number"),
        ({"p": "1.5", "b": "2"}, "p", "b", "outside the range"),
        ({"p": "0.3", "b": "nan"}, "b", "p", "not a finite number"),
        ({"p": "0.3", "b": "-3"}, "b", "p", "outside the range"),
    ],
)
def test_bad_link_values_fall_back_with_a_notice(query, bad, good, why):
    pg = page(query=query)
    assert pg.notice.visible
    assert why in pg.notice.object
    assert getattr(pg, bad) == BaselinesPage.param[bad].default
    assert getattr(pg, good) == float(query[good])  # the valid value is still applied


def test_sessions_do_not_share_state():
    first, second = page(query={}), page(query={})
    first.b = 7.0
    assert second.b == 0.0
    assert first.lines is not second.lines


def test_the_prediction_guards_the_demo_and_the_check_yourself_uses_the_engine():
    pg = page(query={})
    # The demo, behind its placeholder (widgets.predict.PredictionCard.guard)
    placeholder, demo = next(part for part in pg.__panel__() if any("fl-guarded" in p.css_classes for p in getattr(part, "objects", ())))
    assert placeholder.visible and not demo.visible and not pg.predict_card.revealed
    assert pg.predict_card.answer == "mean"  # seed 001 section 4: the mean never moves with b
    pg.predict_card.commit("sd")
    assert demo.visible and not placeholder.visible and "Not quite" in pg.predict_card.view.verdict
    shifted = two_action_estimates(0.5, 0.0, R1 + SHIFT, R2 + SHIFT)  # section 3: 100 added to both rewards
    _, choices, explanation = shift_card_text()
    assert pg.shift_card.answer == "noise" and choices["noise"] == f"The true gradient stays {float(shifted.mean):g}; the estimates become {float(shifted.g1):g} and {float(shifted.g2):g}."
    assert not pg.shift_card.revealed
    pg.guide.prompts = False
    assert pg.shift_card.revealed and "55.5 or -55" in explanation
