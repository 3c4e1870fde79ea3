"""The toy target page without a browser: its estimates, tables and training curves against the engine, and the
functions that make its plots' columns against sums done by hand."""

import math

import numpy as np
import pytest

from app.pages.toy_target import (
    T,
    ToyTargetPage,
    V,
    check_yourself_text,
    coordinate,
    page,
)
from app.pages.toy_target.figures import (
    COLOURS,
    coordinate_numbers,
    histogram_columns,
    identity_columns,
    mean_columns,
    training_columns,
    variance_columns,
)
from engines.toy_target import (
    ACTIVE,
    ESTIMATORS,
    THETA,
    Batches,
    ToyTargetSettings,
    TrainingSnapshot,
    draw_batches,
    draw_target,
    exact_gradient,
    exact_variances,
    run_training,
    variance_experiment,
)

QUICK = {"steps": "50", "seeds": "2"}
"""A short training run for the tests that look at the Monte Carlo panels only."""


def ready(query: dict) -> ToyTargetPage:
    """A page whose runs (on their worker threads) have finished."""
    pg = page(query=query)
    pg.experiment.job.run.join()
    pg.training.job.run.join()
    return pg


@pytest.fixture(scope="module")
def default_page():
    return ready({})


def test_default_is_figure_2s_coordinate_and_the_check_yourself_numbers(default_page):
    pg = default_page
    target = draw_target(T, V, 0)
    assert (pg.samples, pg.batches, pg.estimator) == (16, 500, "loo")
    assert coordinate(pg.t, pg.prev, pg.symbol) == (0, 0, int(target[0]))  # the target's first symbol at step 1
    assert not pg.notice.visible
    text = check_yourself_text()
    assert "**-12.48**" in text and "**1/262,144**" in text  # seed 001 section 2
    assert "N = 16 responses all zeros in all but about one batch in 16,384" in text  # 1 - (1 - 8^-6)^16 = 1/16,384.5
    assert "N = 16 responses" in pg.start_card.view.explanation


def test_the_check_yourself_answer_speaks_of_the_batch_size_set():
    pg = page(query={"samples": "64"})  # the module's own example is a batch of 64
    try:
        assert "N = 64 responses all zeros in all but about one batch in 4,096" in pg.start_card.view.explanation
        pg.samples = 8
        assert "N = 8 responses all zeros in all but about one batch in 32,768" in pg.start_card.view.explanation
    finally:
        pg.close()


def test_plots_follow_the_engine(default_page):
    pg, b = default_page, default_page.experiment.drawn
    target = draw_target(T, V, 0)
    J, grad = exact_gradient(THETA, target)
    assert b.drawn == 500 and J == pytest.approx(1 / 8)
    np.testing.assert_allclose(pg.experiment.means.data["exact"], grad[ACTIVE])
    for name in ESTIMATORS:
        np.testing.assert_allclose(pg.experiment.means.data[name], b.estimates[name].mean(0)[ACTIVE])
    coord = (0, 0, int(target[0]))
    assert pg.exact_rule.location == pytest.approx(grad[coord])
    assert pg.metrics.values()["exact"] == pytest.approx(0.0182, abs=5e-5)  # the figure's exact gradient
    for source, name in ((pg.hist_none, "none"), (pg.hist_other, "loo")):
        x = b.estimates[name][(slice(None), *coord)]
        assert sum(source.data["count"]) == 500
        counts, _ = np.histogram(x, np.append(source.data["left"], source.data["right"][-1]))
        np.testing.assert_array_equal(source.data["count"], counts)
    variances = exact_variances(THETA, target, 16)
    assert pg.metrics.values()["sd_none_exact"] == pytest.approx(math.sqrt(variances["none"][coord]))
    assert pg.metrics.values()["sd_other_exact"] == pytest.approx(math.sqrt(variances["loo"][coord]))
    np.testing.assert_allclose(pg.experiment.variance_source.data["exact"], [variances[n].sum() for n in ESTIMATORS])


def test_measured_variances_and_means_agree_with_the_exact_ones(default_page):
    b = default_page.experiment.drawn
    for row in b.variance_rows:
        # Exercise 2's table: measured total variance within 4 of its own standard errors of the exact one.
        assert abs(row["measured"] - row["exact"]) < 4 * row["se"], row["estimator"]
    for name, g in b.estimates.items():
        # Unbiased (batch mean: shrunk by 1 - 1/N): every coordinate's mean within 4 SE of the mean of the estimates.
        expected = b.exact * ((1 - 1 / 16) if name == "batch_mean" else 1.0)
        se = g.std(0, ddof=1) / math.sqrt(b.drawn)
        assert np.all(np.abs(g.mean(0) - expected)[ACTIVE] <= 4 * se[ACTIVE] + 1e-12), name
    sd_none, sd_loo = default_page.metrics.values()["sd_none"], default_page.metrics.values()["sd_other"]
    assert sd_loo < sd_none  # Figure 2: the baseline cuts the spread


def test_a_chunk_is_the_engines_variance_experiment():
    target = draw_target(T, V, 3)
    *_, last = draw_batches(8, 50, 3, 11)
    ex = variance_experiment(THETA, target, 8, 50, np.random.default_rng([11, 0]))
    for name in ESTIMATORS:
        np.testing.assert_array_equal(last.estimates[name], ex.estimates[name])
        np.testing.assert_allclose(last.exact_variances[name], ex.exact_variances[name])
    np.testing.assert_allclose(last.exact, ex.exact)
    *_, longer = draw_batches(8, 120, 3, 11)
    np.testing.assert_array_equal(longer.estimates["loo"][:50], last.estimates["loo"])  # more batches extend the draws


def test_the_coordinate_controls_pick_the_histogram(default_page):
    pg = default_page
    pg.param.update(t=3, prev=2, symbol=5)
    coord = (2, 2, 5)
    assert pg.exact_rule.location == pytest.approx(pg.experiment.drawn.exact[coord])
    assert pg.experiment.focus.data["mean"] == [pytest.approx(pg.experiment.drawn.estimates["loo"].mean(0)[coord])]
    assert "Step 3, context yₜ₋₁ = 2, symbol 5" in pg.summary.object
    assert coordinate(1, 4, 6) == (0, 0, 6)  # step 1 reads the start context whatever prev says
    pg.param.update(t=1, prev=0, symbol=int(draw_target(T, V, 0)[0]))


def test_estimator_choice_redraws_the_histogram_and_retrains():
    pg = ready({**QUICK, "estimator": "token", "section": "training"})
    coord = coordinate(pg.t, pg.prev, pg.symbol)
    x = pg.experiment.drawn.estimates["token"][(slice(None), *coord)]
    assert pg.metrics.values()["sd_other"] == pytest.approx(x.std(ddof=1))
    assert pg.training.snapshot.estimators == ("none", "token")
    assert "token-level rewards" in pg.training.summary.object


def test_training_curves_are_the_engines():
    pg = ready({"steps": "60", "seeds": "3", "lr": "12", "samples": "12", "target_seed": "4", "seed": "2", "section": "training"})
    settings = ToyTargetSettings(target_seed=4, samples=12, seeds=3, steps=60, lr=12.0, seed=2)
    run = run_training(settings, ("none", "loo"))
    assert pg.training.snapshot.step == 60
    np.testing.assert_allclose(np.array(pg.training.curves.data["ys"]), run.J.reshape(6, 61))
    np.testing.assert_array_equal(pg.training.snapshot.steps_to_threshold, run.steps_to_threshold)
    reached = run.steps_to_threshold[run.steps_to_threshold >= 0]
    assert sorted(pg.training.reached.data["step"]) == sorted(reached)
    assert pg.training.job.controls.progress == 1.0 and not pg.training.job.controls.running
    assert len(pg.training.table.data["J"]) == 2 * 3 * 61


def test_training_runs_once_its_section_is_opened():
    pg = ready(QUICK)
    assert pg.sections.opened == set()  # nothing is built before the page is drawn
    pg.__panel__()
    assert pg.training.snapshot is None and pg.sections.opened == {"figure2"}
    pg.section = "training"
    pg.training.job.run.join()
    assert pg.training.snapshot.step == 50 and pg.sections.tabs.active == 3
    pg.sections.tabs.active = 1  # a click on a tab opens its section too
    assert pg.section == "means" and pg.sections.opened == {"figure2", "training", "means"}


def test_a_new_target_inspects_its_first_symbol_unless_the_link_says_otherwise():
    pg = ready({**QUICK, "target_seed": "5"})
    assert pg.symbol == int(draw_target(T, V, 5)[0])
    pg = ready({**QUICK, "target_seed": "5", "symbol": "1"})
    assert pg.symbol == 1


def test_a_newer_setting_replaces_the_run_under_way():
    pg = page(query=QUICK)
    pg.samples = 4
    pg.experiment.job.run.join()
    pg.training.job.run.join()
    assert pg.experiment.drawn.samples == 4 and pg.experiment.drawn.drawn == 500
    np.testing.assert_allclose(pg.experiment.drawn.exact_variances["none"], exact_variances(THETA, draw_target(T, V, 0), 4)["none"])
    pg.close()
    assert not pg.experiment.job.run.running and not pg.training.job.run.running


@pytest.mark.parametrize(
    "query,bad",
    [({"samples": "1"}, "samples"), ({"batches": "1000000000"}, "batches"), ({"estimator": "best"}, "estimator"),
     ({"steps": "abc"}, "steps"), ({"lr": "nan"}, "lr")],
)
def test_bad_link_values_fall_back_with_a_notice(query, bad):
    pg = page(query={**QUICK, **query})
    pg.close()
    assert pg.notice.visible and f"{bad}=" in pg.notice.object
    assert getattr(pg, bad) == ToyTargetPage.param[bad].default


def test_the_predictions_and_the_engines_ranking_of_the_variances(default_page):
    from app.pages.toy_target import RANKING_ANSWER
    from engines.toy_target import exact_variances_at_start

    pg = default_page
    pg.__panel__()
    assert not pg.start_card.revealed and not pg.ranking_card.revealed
    assert pg.start_card.answer == "every" and "-12.48" in pg.start_card.choices["every"]
    totals = {name: float(v.sum()) for name, v in exact_variances_at_start(16, 0).items()}
    ranking = sorted(("none", "loo", "token"), key=totals.get, reverse=True)  # Exercise 2 at N = 16, largest first
    assert RANKING_ANSWER == "-".join(ranking)
    pg.guide.prompts = False
    assert pg.start_card.revealed and pg.ranking_card.revealed
    pg.guide.prompts = True


# --- the plots' columns (app/pages/toy_target/figures.py), on small hand-made results ---------------------------------


def batches_of(estimates: dict, exact: np.ndarray, exact_variances: dict | None = None) -> Batches:
    """Batches as the engine would stream them, but with the numbers a test chooses."""
    drawn = len(next(iter(estimates.values())))
    return Batches(estimates, drawn, samples=4, seed=0, J=0.125, exact=exact, exact_variances=exact_variances or {})


def test_mean_columns_list_every_coordinate_that_can_move():
    exact = np.arange(T * V * V, dtype=float).reshape(T, V, V)
    # Two batches per estimator whose mean is (i + 1) times the exact gradient.
    estimates = {name: np.stack([exact * i, exact * (i + 2)]) for i, name in enumerate(ESTIMATORS)}
    columns = mean_columns(batches_of(estimates, exact))
    assert len(columns["t"]) == T * V * V - (V - 1) * V  # step 1 reads only the start context: 328 of 384
    rows = list(zip(columns["t"], columns["c"], columns["k"]))
    assert len(set(rows)) == len(rows)
    for row, (t, c, k) in enumerate(rows):
        assert 1 <= t <= T and (c == 0 or t > 1)
        assert columns["exact"][row] == (t - 1) * V * V + c * V + k
        for i, name in enumerate(ESTIMATORS):
            assert columns[name][row] == (i + 1) * columns["exact"][row]


def test_identity_line_spans_the_exact_gradients_with_a_margin():
    columns = identity_columns(np.array([0.0, -0.02, 0.06]))  # range 0.08, 15 % of it is 0.012
    np.testing.assert_allclose(columns["x"], [-0.032, 0.072])
    assert columns["y"] == columns["x"]


def test_variance_columns_are_the_tables_rows_by_column():
    rows = [{"estimator": "none", "label": "no baseline", "measured": 2.0, "se": 0.1, "exact": 2.1},
            {"estimator": "loo", "label": "leave-one-out", "measured": 1.0, "se": 0.05, "exact": 0.9}]
    assert variance_columns(rows) == {"estimator": ["none", "loo"], "label": ["no baseline", "leave-one-out"],
                                      "measured": [2.0, 1.0], "se": [0.1, 0.05], "exact": [2.1, 0.9]}


def test_coordinate_numbers_at_one_coordinate():
    # One coordinate (0, 0, 1) of a 1 x 1 x 2 theta; the other one holds numbers that must not be read.
    none = np.zeros((4, 1, 1, 2))
    none[:, 0, 0, 1] = [1.0, 2.0, 3.0, 4.0]
    loo = np.full((4, 1, 1, 2), 9.0)
    loo[:, 0, 0, 1] = 2.5
    exact = np.array([[[7.0, 0.7]]])
    variances = {"none": np.array([[[5.0, 0.09]]]), "loo": np.array([[[5.0, 0.04]]])}
    at = coordinate_numbers(batches_of({"none": none, "loo": loo}, exact, variances), (0, 0, 1), "loo")
    np.testing.assert_array_equal(at["x_none"], [1, 2, 3, 4])
    np.testing.assert_array_equal(at["x_other"], [2.5] * 4)
    assert (at["exact"], at["mean"]) == (0.7, 2.5)
    # sd of 1, 2, 3, 4: sqrt(5 / 3); the squared deviations 2.25, 0.25, 0.25, 2.25 have sd sqrt(4 / 3), so
    # SE(s) = sqrt(4 / 3) / sqrt(4) / (2 sqrt(5 / 3)) = 1 / (2 sqrt(5)).
    assert at["sd_none"] == pytest.approx(math.sqrt(5 / 3)) and at["se_none"] == pytest.approx(1 / (2 * math.sqrt(5)))
    assert (at["sd_other"], at["se_other"]) == (0.0, 0.0)
    assert at["sd_none_exact"] == pytest.approx(0.3) and at["sd_other_exact"] == pytest.approx(0.2)


def test_histogram_columns_share_bins_across_both_estimators():
    none, compared = histogram_columns(np.array([0.0, 10.5, 10.7, 25.0]), np.array([40.0, 3.2]), "token")
    np.testing.assert_array_equal(none["left"], np.arange(40))  # 40 bins of width 1 from the lowest to the highest
    np.testing.assert_array_equal(none["right"], np.arange(1, 41))
    np.testing.assert_array_equal(compared["left"], none["left"])
    assert list(np.nonzero(none["count"])[0]) == [0, 10, 25] and list(none["count"][[0, 10, 25]]) == [1, 2, 1]
    assert list(np.nonzero(compared["count"])[0]) == [3, 39]  # the highest estimate falls in the last bin
    assert compared["colour"] == [COLOURS["token"]] * 40 and compared["label"] == ["token-level rewards"] * 40
    none, compared = histogram_columns(np.array([0.5, 0.5]), np.array([0.5]), "loo")  # every estimate equal
    np.testing.assert_allclose([none["left"][0], none["right"][0]], [0.4995, 0.5005])
    assert list(none["count"]) == [2] and list(compared["count"]) == [1]


def test_training_columns_one_curve_per_estimator_and_seed():
    J = np.arange(12, dtype=float).reshape(2, 2, 3) / 12  # (estimators, seeds, steps + 1)
    snapshot = TrainingSnapshot(step=2, J=J, steps_to_threshold=np.array([[2, -1], [-1, 1]]), estimators=("none", "loo"))
    curves, reached, table = training_columns(snapshot)
    assert [list(x) for x in curves["xs"]] == [[0, 1, 2]] * 4
    np.testing.assert_array_equal(curves["ys"], [J[0, 0], J[0, 1], J[1, 0], J[1, 1]])
    assert curves["colour"] == [COLOURS["none"]] * 2 + [COLOURS["loo"]] * 2
    assert curves["label"] == ["no baseline"] * 2 + ["leave-one-out"] * 2
    assert list(reached["step"]) == [2, 1] and list(reached["J"]) == [J[0, 0, 2], J[1, 1, 1]]
    assert reached["colour"] == [COLOURS["none"], COLOURS["loo"]]
    rows = list(zip(table["estimator"], table["seed"], table["step"], table["J"]))
    assert len(rows) == 12
    assert sorted((e, s, n) for e, s, n, _ in rows) == sorted((e, s, n) for e in ("none", "loo") for s in (0, 1) for n in (0, 1, 2))
    for estimator, seed, step, value in rows:
        assert value == J[("none", "loo").index(estimator), seed, step]
