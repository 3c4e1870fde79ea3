"""The preferences page without a browser: curves, ceiling and sampled accuracy against the engine."""

import numpy as np
import pytest

from app.pages.preferences import PreferencesPage, page
from app.pages.preferences.figures import (
    GAP_AXIS,
    SEED_GAPS,
    TAU_AXIS,
    ceiling_columns,
    ceiling_figure,
    frequency_columns,
    gap_population,
    labelled_set,
    probability_columns,
    probability_figure,
)
from engines.bradley_terry import LabelledSetSettings, accuracy_vs_tau, bt_prob, oracle_accuracy


def test_default_page_is_the_seed_check_yourself():
    pg = page(query={})
    assert (pg.tau, pg.gaps) == (0.5, "seed")
    assert pg.metrics.values()["ceiling"] == pytest.approx(0.788, abs=5e-4)  # seed 001 section 7
    assert "Acc* = 0.788" in pg.summary.object
    assert not pg.notice.visible


def test_check_yourself_numbers():
    from app.pages.preferences.text import check_yourself_text

    text = check_yourself_text()
    assert "σ(2) = 0.881" in text and "σ(4) = 0.982" in text and "**0.788**" in text


@pytest.mark.parametrize("tau,gaps,s", [(0.5, "seed", 1.0), (2.0, "normal", 1.5), (0.05, "normal", 0.1), (5.0, "seed", 1.0)])
def test_curves_follow_the_engine(tau, gaps, s):
    pg = PreferencesPage(query={})
    pg.param.update(tau=tau, gaps=gaps, s=s)
    np.testing.assert_array_equal(pg.prob.data["p"], bt_prob(GAP_AXIS, 0.0, tau))
    population = gap_population(gaps, s)
    np.testing.assert_array_equal(pg.ceiling.data["acc"], accuracy_vs_tau(population, TAU_AXIS))
    assert pg.marker.data == {"tau": [tau], "acc": [float(oracle_accuracy(population, 0.0, tau))]}
    assert pg.tau_rule.location == tau


def test_half_normal_ceiling_matches_a_monte_carlo_average():
    # Acc* of |N(0, s)| gaps from the 400 quantiles against 200000 draws; tolerance 4 SE of the draws.
    rng = np.random.default_rng(1)
    values = bt_prob(np.abs(rng.standard_normal(200_000)) * 1.5, 0.0, 1.0)
    tolerance = 4 * values.std() / np.sqrt(values.size)
    assert float(oracle_accuracy(gap_population("normal", 1.5), 0.0, 1.0)) == pytest.approx(values.mean(), abs=tolerance + 1e-4)


def test_sampled_set_accuracy_and_its_standard_error():
    pg = page(query={"n": "5000", "seed": "3"})
    sample = pg.sample
    assert sample["n"] == 5000 and sample["prefers_a"].shape == (5000,)
    assert sample["accuracy"] == pytest.approx(sample["prefers_a"].mean())
    assert sample["se"] == pytest.approx(np.sqrt(sample["accuracy"] * (1 - sample["accuracy"]) / 5000))
    assert abs(sample["accuracy"] - sample["expected"]) < 4 * sample["se"]  # u scatters around Acc* by its SE
    shown = pg.metrics.values()
    assert shown["accuracy"] == pytest.approx(sample["accuracy"]) and shown["se"] == pytest.approx(sample["se"])
    for gap, frequency in zip(pg.freq.data["gap"], pg.freq.data["frequency"]):
        assert frequency == pytest.approx(sample["prefers_a"][sample["gap"] == gap].mean())


def area(pg, name: str):
    """The area `name` of the page's demo (widgets.explorable.figure_first)."""
    demo = next(part for part in pg.__panel__() if "fl-demo" in part.css_classes)
    return next(part for part in demo if name in part.css_classes)


def test_same_seed_same_sample_and_new_seed_button(monkeypatch):
    a, b = (labelled_set(LabelledSetSettings(gaps="seed", tau=0.5, n=200, seed=7)) for _ in range(2))
    np.testing.assert_array_equal(a["prefers_a"], b["prefers_a"])
    assert set(np.unique(a["gap"])) <= set(SEED_GAPS)
    monkeypatch.setattr("widgets.run_controls.secrets.randbelow", lambda high: 42)
    pg = page(query={"seed": "5"})
    button = area(pg, "fl-more")[1][1]  # the seed's row, its button
    button.clicks += 1
    assert pg.seed == 42
    assert f"drawn with seed {pg.seed}," in pg.summary.object


@pytest.mark.parametrize("query,bad", [({"tau": "0.01"}, "tau"), ({"gaps": "uniform"}, "gaps"), ({"n": "ten"}, "n"), ({"seed": "-1"}, "seed")])
def test_bad_link_values_fall_back_with_a_notice(query, bad):
    pg = page(query=query)
    assert pg.notice.visible and f"{bad}=" in pg.notice.object
    assert getattr(pg, bad) == PreferencesPage.param[bad].default


def test_the_predictions_guard_the_ceiling_until_answered():
    pg = page(query={})
    placeholder, results = area(pg, "fl-figures")  # their placeholder, then the plots (one guard, the area itself)
    assert placeholder.visible and not results.visible
    assert pg.compare_card.answer == "comparisons" and pg.ceiling_card.answer == "ceiling"
    assert "about 0.79" in pg.ceiling_card.choices["ceiling"]
    pg.compare_card.commit("scores")
    assert not results.visible  # the comparisons question guards only its own answer
    pg.ceiling_card.commit("ceiling")
    assert results.visible and not placeholder.visible and "Right." in pg.ceiling_card.view.verdict


def test_probability_and_ceiling_columns_are_equations_12_and_13():
    p = probability_columns(0.8)
    np.testing.assert_array_equal(p["gap"], GAP_AXIS)
    np.testing.assert_allclose(p["p"], 1 / (1 + np.exp(-GAP_AXIS / 0.8)), rtol=1e-12)
    curve = ceiling_columns(SEED_GAPS)
    np.testing.assert_array_equal(curve["tau"], TAU_AXIS)
    by_hand = [(1 / (1 + np.exp(-0.0 / t)) + 1 / (1 + np.exp(-1.0 / t)) + 1 / (1 + np.exp(-2.0 / t))) / 3 for t in TAU_AXIS]
    np.testing.assert_allclose(curve["acc"], by_hand, rtol=1e-12)


def test_label_frequencies_of_a_normal_set_are_per_half_unit_bin():
    sample = labelled_set(LabelledSetSettings(gaps="normal", s=1.5, tau=1.0, n=400, seed=2))
    columns = frequency_columns(sample)
    counted = {}
    for gap, prefers_a in zip(sample["gap"], sample["prefers_a"]):
        centre = min(int(gap // 0.5), 7) * 0.5 + 0.25  # bins 0 to 0.5, ..., 3.5 to 4, the last taking every larger gap
        counted.setdefault(centre, []).append(prefers_a)
    assert list(columns["gap"]) == sorted(counted)
    for centre, frequency, pairs in zip(columns["gap"], columns["frequency"], columns["pairs"]):
        assert pairs == len(counted[centre]) and frequency == pytest.approx(np.mean(counted[centre]))
    assert sum(columns["pairs"]) == 400


def test_legends_stand_under_the_plots_not_over_their_data():
    """A legend inside the plot area covered a data point (the sample's gap-1 dot); each stands below its plot area."""
    from bokeh.models import ColumnDataSource, Legend, Span

    from app.pages.reward_model.figures import pairs_figure

    figures = (probability_figure(ColumnDataSource(), ColumnDataSource()),
               ceiling_figure(ColumnDataSource(), ColumnDataSource(), Span(location=1.0, dimension="height")),
               pairs_figure(ColumnDataSource(), ColumnDataSource()))
    for fig in figures:
        assert not [r for r in fig.center if isinstance(r, Legend)]
        assert [r for r in fig.below if isinstance(r, Legend)] and fig.height > 300
