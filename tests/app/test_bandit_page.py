"""The bandit page without a browser: every panel's data against the engine, training, the link."""

from dataclasses import replace

import numpy as np
import pytest

from app.pages.bandit import SWEEP, BanditPage, page, theta_of
from app.pages.bandit.figures import B_AXIS
from app.pages.bandit.text import summary_text, training_table
from engines.bandit import (
    BASELINES,
    BanditTrainingSettings,
    exact_gradient,
    exact_total_variance,
    expected_return,
    monte_carlo,
    one_sample_draws,
    optimal_baseline,
    train_bandit,
)

FAST = {"samples": "20000", "seeds": "10", "steps": "10"}
"""Few samples and a tiny training run, so each page builds quickly; tests override what they check."""


def make(**query) -> BanditPage:
    pg = page(query={**FAST, **{k: str(v) for k, v in query.items()}})
    pg.training.job.run.join()  # the training run the page starts on load
    return pg


def test_default_page_is_the_seeds_monte_carlo_check():
    pg = page(query={"seeds": "10", "steps": "10"})
    pg.training.job.run.join()
    assert (pg.means, pg.sd, pg.theta, pg.b, pg.samples) == ((5.0, 6.0, 7.0, 8.0), 1.0, (0.0,) * 4, 6.5, 200_000)
    shown = pg.metrics.values()
    # Exact figures of seed 000 sections 6.4 and 6.7, to 3 decimals.
    assert shown["J"] == pytest.approx(6.5, abs=5e-4) and shown["b_star"] == pytest.approx(6.5, abs=5e-4)
    np.testing.assert_allclose(pg.gradient.data["exact"], [-0.375, -0.125, 0.125, 0.375], atol=5e-4)
    # The seed's Monte Carlo totals (33.028 without, 1.369 with b = 6.5) are another draw of the same
    # quantities: the difference of two independent estimates lies within 4 sqrt(2) of our SE.
    for j, (key, seed_value) in enumerate((("mc_none", 33.028), ("mc_b", 1.369))):
        assert abs(shown[key] - seed_value) < 4 * np.sqrt(2) * pg.mc.total_variance_se[j]
    assert "33.048" in pg.summary.object and "ratio 24.0×" in pg.summary.object
    assert not pg.notice.visible


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"prefer": 4, "logit": 2.0, "b": 7.4},
        {"mu1": 9.0, "mu3": 1.5, "sd": 3.0, "b": 0.0, "seed": 11},
        {"prefer": 2, "logit": 5.0, "b": 12.0, "sd": 0.0, "samples": 5000},
    ],
)
def test_analytic_panels_follow_the_engine(query):
    pg = make(**query)
    mu, sd, theta, b, n, seed = pg.means, pg.sd, pg.theta, pg.b, pg.samples, pg.seed
    mc = monte_carlo(mu, sd, theta, (0.0, b), n, seed)
    grad = pg.gradient.data
    np.testing.assert_array_equal(grad["exact"], exact_gradient(mu, theta))
    # The page sums the same draws in another order (per-arm sums of the noise, engines.bandit.arm_sums_of_noise): equal to rounding.
    np.testing.assert_allclose(grad["mean_none"], mc.mean_estimate[0], rtol=1e-12)
    np.testing.assert_allclose(grad["mean_b"], mc.mean_estimate[1], rtol=1e-12)
    np.testing.assert_allclose(grad["high_b"] - grad["low_b"], 4 * mc.mean_estimate_se[1], rtol=1e-12)  # ± 2 SE
    sweep = monte_carlo(mu, sd, theta, SWEEP, n, seed)
    np.testing.assert_allclose(pg.points.data["mc"], sweep.total_variance, rtol=1e-12)
    np.testing.assert_array_equal(pg.points.data["exact"], exact_total_variance(mu, sd, theta, np.array(SWEEP)))
    np.testing.assert_array_equal(pg.curve.data["exact"], exact_total_variance(mu, sd, theta, B_AXIS))
    b_star = float(optimal_baseline(mu, theta))
    assert pg.marks.data["b"] == [b_star, b] and pg.b_star_rule.location == b_star and pg.b_rule.location == b
    shown = pg.metrics.values()
    assert shown["J"] == pytest.approx(float(expected_return(mu, theta)))
    assert shown["exact_b"] == pytest.approx(float(exact_total_variance(mu, sd, theta, b)))
    assert shown["mc_none"] == pytest.approx(mc.total_variance[0]) and shown["mc_b"] == pytest.approx(mc.total_variance[1])
    assert summary_text(mu, sd, theta, b, n, seed, mc) in pg.summary.object


def test_monte_carlo_means_sit_on_the_exact_gradient_with_and_without_b():
    pg = make(samples=200_000, b=3.0, seed=5)
    grad = pg.gradient.data
    for key in ("none", "b"):  # within 4 standard errors, coordinate by coordinate
        assert np.all(np.abs(grad[f"mean_{key}"] - grad["exact"]) < 4 * grad[f"se_{key}"])


def test_moving_b_alone_gives_the_numbers_of_a_fresh_page():
    pg = make(prefer=3, logit=1.0, section="histogram")
    pg.__panel__()  # drawn: its open section is built, and its data computed
    pg.b = 4.2  # only the b = 0 / current-b Monte Carlo runs again
    fresh = make(prefer=3, logit=1.0, b=4.2, section="histogram")
    fresh.__panel__()
    for key in ("mean_b", "low_b", "high_b", "mean_none"):
        np.testing.assert_array_equal(pg.gradient.data[key], fresh.gradient.data[key])
    assert pg.metrics.values() == fresh.metrics.values()
    assert pg.histogram.data["baseline"].tolist() == fresh.histogram.data["baseline"].tolist()


def test_histogram_shows_the_monte_carlo_samples_with_and_without_b():
    pg = make(samples=30_000, b=6.0, arm=2, seed=3)
    assert pg.histogram.data == {}  # its section not opened yet: nothing computed for it
    pg.section = "histogram"
    r, s = one_sample_draws(pg.means, pg.sd, pg.theta, pg.samples, pg.seed)
    mc = monte_carlo(pg.means, pg.sd, pg.theta, (0.0, 6.0), pg.samples, pg.seed)
    np.testing.assert_allclose((r[:, None] * s).mean(0), mc.mean_estimate[0], atol=1e-12)  # the same samples
    np.testing.assert_allclose(((r - 6.0)[:, None] * s).mean(0), mc.mean_estimate[1], atol=1e-12)
    h = pg.histogram.data
    edges = np.append(h["left"], h["right"][-1])
    assert h["none"].tolist() == np.histogram(r * s[:, 1], edges)[0].tolist()
    assert h["baseline"].tolist() == np.histogram((r - 6.0) * s[:, 1], edges)[0].tolist()
    assert h["none"].sum() == h["baseline"].sum() == 30_000
    assert pg.exact_rule.location == pytest.approx(float(exact_gradient(pg.means, pg.theta)[1]))
    pg.arm = 4
    assert pg.histogram.data["none"].tolist() != h["none"].tolist()


def test_policy_that_prefers_arm_4_and_the_b_buttons():
    # Seed 000 section 6.7: theta = (0, 0, 0, 2), pi = (0.096, 0.096, 0.096, 0.711), total variance
    # 19.5 without a baseline and 1.29 with b = V = 7.42, a ratio of 15.
    pg = make(prefer=4, logit=2.0)
    assert theta_of(4, 2.0) == pg.theta == (0.0, 0.0, 0.0, 2.0)
    pg.b_to_V.clicks += 1
    assert pg.b == 7.42
    shown = pg.metrics.values()
    assert round(shown["exact_none"], 1) == 19.5 and round(shown["exact_b"], 2) == 1.29 and round(shown["ratio"]) == 15
    assert "π = (0.0963, 0.0963, 0.0963, 0.711)" in pg.summary.object
    pg.b_to_star.clicks += 1
    assert pg.b == round(float(optimal_baseline(pg.means, pg.theta)), 2)
    assert pg.metrics.values()["exact_b"] <= shown["exact_b"]


def test_training_curves_and_counts_follow_the_engine():
    pg = make(seeds=40, steps=120, lr=0.1, train_seed=4, section="training")
    view = pg.training.view
    assert view.step == 120
    assert pg.training.job.controls.progress == 1.0 and not pg.training.job.controls.running
    settings = BanditTrainingSettings(seeds=40, steps=120, lr=0.1, seed=4, report_steps=(120,))
    assert pg.training_settings() == view.settings == settings
    data = pg.training.curves.data
    np.testing.assert_array_equal(data["step"], np.arange(121))
    for baseline in BASELINES:
        run = train_bandit(settings, baseline)
        np.testing.assert_allclose(data[f"{baseline}_mean"], run.mean_J(), rtol=1e-12)
        p10, p90 = run.band()
        np.testing.assert_allclose(data[f"{baseline}_p10"], p10, rtol=1e-12)
        np.testing.assert_allclose(data[f"{baseline}_p90"], p90, rtol=1e-12)
        counts = run.argmax_counts()
        assert pg.training.arms.data[baseline] == [counts.get(k, 0) for k in range(1, 5)]
        stats = view.stats[baseline]
        assert stats["worse"] == 40 - counts.get(4, 0)
        assert stats["above_half"] == pytest.approx((run.p_best() > 0.5).mean())
        assert stats["below_tenth"] == pytest.approx((run.p_best() < 0.1).mean())
    assert training_table(view) == pg.training.table.object and "After step 120 of 120, 40 seeds" in pg.training.table.object


def test_training_runs_once_its_section_is_opened():
    pg = make()
    pg.__panel__()  # the page drawn, as a visit draws it
    assert pg.training.view is None and not pg.training.job.run.running and pg.sections.opened == {"estimates"}
    pg.steps = 20  # the axes follow the controls before the section is built
    assert pg.training.steps_range.end == 20 and pg.training.view is None
    pg.section = "training"
    pg.training.job.run.join()
    assert pg.training.view.step == 20 and pg.training.view.settings == pg.training_settings()


def test_a_new_setting_cancels_the_run_under_way():
    pg = make(section="training")
    pg.param.update(seeds=500, steps=2000)  # a long run starts
    pg.steps = 30  # replaces the long run; only the new run's snapshots are drawn
    pg.training.job.run.join()
    assert pg.training.view.settings.steps == 30 and len(pg.training.curves.data["step"]) == 31
    assert pg.training.steps_range.end == 30
    stale = replace(pg.training.view, settings=replace(pg.training.view.settings, lr=0.2), curves={"step": [0]})
    pg.training.show(stale)  # a snapshot of a run whose settings are gone is dropped
    assert len(pg.training.curves.data["step"]) == 31
    pg.training.start()
    pg.close()  # the tab closed
    pg.training.job.run.join(5)
    assert not pg.training.job.run.running


@pytest.mark.parametrize(
    "query,bad",
    [
        ({"samples": "1000000000"}, "samples"),
        ({"prefer": "7"}, "prefer"),
        ({"arm": "0"}, "arm"),
        ({"lr": "abc"}, "lr"),
        ({"steps": "5000"}, "steps"),
        ({"mu2": "nan"}, "mu2"),
        ({"seeds": "501"}, "seeds"),
    ],
)
def test_bad_link_values_fall_back_with_a_notice(query, bad):
    pg = make(**query)
    assert pg.notice.visible and f"{bad}=" in pg.notice.object
    assert getattr(pg, bad) == BanditPage.param[bad].default


def test_link_state_is_applied_and_sessions_are_separate():
    pg = make(prefer=4, logit=2.0, b=7.42, samples=50_000, seed=9, arm=3, mu1=4.5)
    assert (pg.theta, pg.b, pg.samples, pg.seed, pg.arm, pg.mu1) == ((0.0, 0.0, 0.0, 2.0), 7.42, 50_000, 9, 3, 4.5)
    assert not pg.notice.visible
    other = make()
    assert other.b == 6.5 and other.gradient is not pg.gradient


def test_the_predictions_guard_the_estimates_and_the_training_result():
    from engines.bandit import MEANS, training_views

    pg = make()
    pg.__panel__()
    assert not pg.predict_card.revealed and not pg.arm_card.revealed
    pg.predict_card.commit("spread")
    assert pg.predict_card.revealed and not pg.arm_card.revealed
    pg.guide.prompts = False
    assert pg.arm_card.revealed
    # The arm card's answer at the settings its question names: most seeds on arm 4, dozens not, none with a baseline.
    settings = BanditTrainingSettings(means=MEANS, sd=1.0, seeds=200, steps=400, lr=0.05, seed=0, report_steps=(400,))
    *_, view = training_views(settings, 400)
    assert pg.arm_card.answer == "most"
    assert 24 <= view.stats["none"]["worse"] < 100
    assert view.stats["running"]["worse"] == view.stats["value"]["worse"] == 0
