"""The group-baselines page's columns and words (app/pages/group_baselines/) against sums done by hand, and the page
without a browser: its sliders move the exact numbers, its training section streams curves."""

import re
import time

import numpy as np
import pytest

from app.pages.group_baselines import CARDS, GroupBaselinesPage, page
from app.pages.group_baselines.figures import FACTORS, TRAINING_COLUMNS, bar_columns, bars_figure, exact_metrics, training_columns
from app.pages.group_baselines.text import UNBIASED_ANSWER, example_table_html, no_signal_card, summary_text, training_text
from engines.group_baselines import ESTIMATORS, GroupBaselinesSettings, GroupTraining, exact_moments


def test_bar_columns_at_the_default_prompts_by_hand():
    # p = (0.9, 0.2), M = 2: true gradient p(1 - p)/2 = 0.045 and 0.08; loo and none equal it, the mean 3/4 of it.
    ex = exact_moments(GroupBaselinesSettings())
    columns = bar_columns(ex)
    assert columns["x"] == FACTORS
    np.testing.assert_allclose(columns["true"], [0.045, 0.08] * len(ESTIMATORS), rtol=1e-12)
    row = {label: (columns["expected"][2 * e], columns["expected"][2 * e + 1]) for e, label in enumerate(ESTIMATORS.values())}
    assert row["leave-one-out (RLOO)"] == pytest.approx((0.045, 0.08), rel=1e-12)
    assert row["no baseline"] == pytest.approx((0.045, 0.08), rel=1e-12)
    assert row["group mean"] == pytest.approx((0.03375, 0.06), rel=1e-12)
    # no baseline's variance by hand, prompt 1: g = sum_i y_i (y_i - p) / 8 = k (1 - p) / 8, k ~ Binomial(4, 0.9),
    # so Var = 4 p (1 - p) (1 - p)^2 / 64 = 4 * 0.9 * 0.1 * 0.01 / 64
    assert columns["variance"][0] == pytest.approx(4 * 0.9 * 0.1 * 0.01 / 64, rel=1e-12)
    np.testing.assert_allclose(columns["ratio"], columns["expected"] / columns["true"], rtol=1e-12)


def test_metrics_and_summary_at_the_defaults():
    ex = exact_moments(GroupBaselinesSettings())
    metrics = exact_metrics(ex)
    assert metrics["no_signal_easy"] == pytest.approx(0.9**4 + 0.1**4, rel=1e-12)
    assert metrics["no_signal_hard"] == pytest.approx(0.2**4 + 0.8**4, rel=1e-12)
    grpo = ex.estimators.index("grpo")
    assert metrics["grpo_easy"] == ex.ratio[grpo, 0] and metrics["grpo_angle"] == ex.angle[grpo]
    sentence = summary_text(ex, 4)
    assert "At K = 4" in sentence and "<strong>0.750</strong>" in sentence
    assert f"<strong>{ex.ratio[grpo, 0]:.3f}</strong>" in sentence and "leans toward prompt 1 (p = 0.9)" in sentence
    # p and 1 - p: GRPO's weight is symmetric in them (its g depends on p only through k(K - k)), so no lean
    assert "weighs both prompts alike" in summary_text(exact_moments(GroupBaselinesSettings(p=(0.8, 0.2))), 4)


def test_training_columns_are_one_curve_per_estimator():
    J = np.arange(3 * len(ESTIMATORS), dtype=float).reshape(len(ESTIMATORS), 3)
    run = GroupTraining(steps=np.arange(3), J=J, J_se=np.zeros_like(J), p=np.zeros((len(ESTIMATORS), 2)))
    columns = training_columns(run)
    assert tuple(columns) == TRAINING_COLUMNS == ("step", *ESTIMATORS)
    np.testing.assert_array_equal(columns["grpo"], J[list(ESTIMATORS).index("grpo")])


def test_the_worked_example_by_hand():
    # (1, 0, 0, 1): mean 1/2; loo 1 - 1/3 = 2/3 and 0 - 2/3; sd sqrt(4 * 1/4 / 3) = 0.57735, GRPO 0.5 / (0.57735 + 1e-4).
    cells = re.findall(r"<td>([+-]\d\.\d{4})</td>", example_table_html())
    rows = [cells[i : i + 4] for i in range(0, len(cells), 4)]
    assert rows == [["+1.0000", "+0.0000", "+0.0000", "+1.0000"],
                    ["+0.5000", "-0.5000", "-0.5000", "+0.5000"],
                    ["+0.6667", "-0.6667", "-0.6667", "+0.6667"],
                    [f"{s}{0.5 / (np.sqrt(1 / 3) + 1e-4):.4f}" for s in "+--+"],
                    ["+0.5000", "-0.5000", "-0.5000", "+0.5000"]]


def test_the_cards_answers_are_the_engines():
    ex = exact_moments(GroupBaselinesSettings(p=(0.9, 0.2, 0.55), K=4))
    unbiased = {name for name, ratio in zip(ex.estimators, ex.ratio) if np.allclose(ratio, 1.0, rtol=1e-12)}
    assert unbiased == {"none", "loo"} and UNBIASED_ANSWER == "none-loo"
    question, choices, answer, explanation = no_signal_card()
    assert choices[answer] == "about 2 in 3" and "0.6562" in explanation
    assert [c.key for c in CARDS] == ["group-baselines/unbiased", "group-baselines/no-signal"]


def test_a_link_that_opens_the_training_tab_trains_once_the_browser_has_the_page():
    pg = page(query={"section": "training", "steps": "20", "seeds": "2"})
    pg.guide.prompts = False
    pg.__panel__()
    assert "training" in pg.sections.opened  # built with the page (outside a server, onload runs at once)
    pg._start()  # what the browser's onload calls: the run starts (afresh, if already under way)
    pg.training.job.run.join(60)
    assert len(pg.training.curves.data["step"]) == 21
    pg.close()


def test_the_page_moves_its_numbers_and_trains_when_its_section_opens():
    pg = page(query={})
    assert isinstance(pg, GroupBaselinesPage)
    pg.guide.prompts = False
    pg.__panel__()
    before = list(pg.bars.data["expected"])
    pg.param.update(p_easy=0.5, K=8)
    assert list(pg.bars.data["expected"]) != before
    assert pg.bars.data["expected"][0] == pytest.approx(0.5 * 0.5 / 2, rel=1e-12)  # none at p = 0.5: p(1 - p)/M
    pg._start()
    pg.param.update(steps=20, seeds=2)
    pg.section = "training"
    deadline = time.monotonic() + 60
    while len(pg.training.curves.data["step"]) < 21 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pg.training.curves.data["step"]) == 21
    np.testing.assert_allclose(pg.training.curves.data["loo"][0], (0.5 + 0.2) / 2)
    pg.close()


def test_the_training_line_reads_the_last_step():
    J = np.full((len(ESTIMATORS), 3), 0.5)
    J[2, -1] = 0.875
    run = GroupTraining(steps=np.arange(3), J=J, J_se=np.full_like(J, 0.01), p=np.zeros((len(ESTIMATORS), 2)))
    line = training_text(run, 10)
    assert line.startswith('<p class="fl-training">J after 2 of 10 steps')
    assert "leave-one-out (RLOO) <strong>0.875</strong> ± 0.010" in line


def test_the_bars_axis_names_the_estimators_flat_and_the_prompts_in_a_legend():
    """Slanted, the estimators' names crossed the axis's group dividers: they lie flat, and the prompts' names (one
    under every bar, slanted too) are in a legend below the plot, one entry per prompt colour."""
    from bokeh.models import ColumnDataSource, Legend

    fig = bars_figure(ColumnDataSource({"x": [], "expected": [], "true": []}), "E[g]", "expected", True)
    axis = fig.xaxis[0]
    assert axis.group_label_orientation == "horizontal" and axis.major_label_text_font_size == "0pt"
    legends = [r for r in fig.below if isinstance(r, Legend)]
    assert [item.label.value for item in legends[0].items] == ["prompt 1", "prompt 2"]
    assert [item.index for item in legends[0].items] == [0, 1]
