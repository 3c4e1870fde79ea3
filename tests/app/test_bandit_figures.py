"""The bandit page's columns and numbers (app/pages/bandit/figures.py), from made-up Monte Carlo summaries and the
exact sums of seed 000 section 6.7, without a page or a session.

At the uniform policy on means (5, 6, 7, 8) with sd = 1: J = b* = 6.5, dJ/dtheta = pi (mu - J) = (-0.375, -0.125, 0.125,
0.375), |onehot(a) - pi|^2 = 0.75 for every a, so the total variance is 0.1875 sum_a ((mu_a - b)^2 + 1) - |dJ/dtheta|^2
= 0.75 b^2 - 9.75 b + 33.0625 (33.0625 at b = 0, 1.375 at b = 6.5).
"""

import numpy as np
import pytest

from app.pages.bandit.figures import curve_columns, estimate_numbers, gradient_columns, marks_columns, sweep_columns
from engines.bandit import MonteCarlo

UNIFORM = (0.0, 0.0, 0.0, 0.0)
SEED_MEANS = (5.0, 6.0, 7.0, 8.0)


def summary_of(b, mean_estimate=((0.0,) * 4,) * 2, mean_estimate_se=((0.0,) * 4,) * 2, total_variance=(0.0, 0.0),
               total_variance_se=(0.0, 0.0)) -> MonteCarlo:
    """A Monte Carlo summary with the given numbers, as the engine hands the page one."""
    return MonteCarlo(b=np.asarray(b, dtype=float), mean_score=np.zeros(4), mean_estimate=np.asarray(mean_estimate),
                      mean_estimate_se=np.asarray(mean_estimate_se), total_variance=np.asarray(total_variance),
                      total_variance_se=np.asarray(total_variance_se), b_star=6.5, total_variance_at_b_star=1.375)


def test_gradient_columns_set_the_two_runs_beside_each_arm_with_2_se_bars():
    mean = [[-0.4, -0.1, 0.1, 0.4], [-0.38, -0.12, 0.13, 0.37]]
    se = [[0.05, 0.02, 0.02, 0.05], [0.01, 0.01, 0.01, 0.01]]
    data = gradient_columns(SEED_MEANS, UNIFORM, summary_of((0.0, 6.5), mean, se))
    np.testing.assert_array_equal(data["arm"], [1, 2, 3, 4])
    np.testing.assert_allclose(data["exact"], [-0.375, -0.125, 0.125, 0.375], rtol=1e-12)
    np.testing.assert_allclose(data["x_none"], [0.85, 1.85, 2.85, 3.85], rtol=1e-12)
    np.testing.assert_allclose(data["x_b"], [1.15, 2.15, 3.15, 4.15], rtol=1e-12)
    np.testing.assert_array_equal(data["mean_none"], mean[0])
    np.testing.assert_allclose(data["low_none"], [-0.5, -0.14, 0.06, 0.3], rtol=1e-12)
    np.testing.assert_allclose(data["high_b"], [-0.36, -0.1, 0.15, 0.39], rtol=1e-12)
    np.testing.assert_array_equal(data["se_b"], se[1])


def test_sweep_and_curve_columns_put_the_exact_variance_beside_the_measured():
    swept = summary_of((0.0, 6.5, 12.0), total_variance=(33.0, 1.4, 24.0), total_variance_se=(0.1, 0.01, 0.2))
    data = sweep_columns(SEED_MEANS, 1.0, UNIFORM, swept)
    np.testing.assert_array_equal(data["b"], [0.0, 6.5, 12.0])
    np.testing.assert_allclose(data["exact"], [33.0625, 1.375, 0.75 * 144 - 9.75 * 12 + 33.0625], rtol=1e-12)
    np.testing.assert_allclose(data["low"], [32.8, 1.38, 23.6], rtol=1e-12)
    np.testing.assert_allclose(data["high"], [33.2, 1.42, 24.4], rtol=1e-12)
    curve = curve_columns(SEED_MEANS, 1.0, UNIFORM)
    np.testing.assert_allclose(curve["b"], np.arange(241) * 0.05, rtol=1e-12)
    np.testing.assert_allclose(curve["exact"], 0.75 * curve["b"] ** 2 - 9.75 * curve["b"] + 33.0625, rtol=1e-12)


def test_marks_and_numbers_at_the_seeds_policy():
    marks = marks_columns(SEED_MEANS, 1.0, UNIFORM, 0.0)
    assert marks["b"] == pytest.approx([6.5, 0.0], rel=1e-12)
    assert marks["variance"] == pytest.approx([1.375, 33.0625], rel=1e-12)
    numbers = estimate_numbers(SEED_MEANS, 1.0, UNIFORM, 6.5, summary_of((0.0, 6.5), total_variance=(33.0, 1.5)))
    assert numbers == pytest.approx({"J": 6.5, "b_star": 6.5, "exact_none": 33.0625, "exact_b": 1.375,
                                     "ratio": 33.0625 / 1.375, "mc_none": 33.0, "mc_b": 1.5, "mc_ratio": 22.0}, rel=1e-12)
    # With no noise and b at the only reward there is, the variance is 0 and the ratio infinite.
    zero = estimate_numbers((8.0,) * 4, 0.0, UNIFORM, 8.0, summary_of((0.0, 8.0), total_variance=(48.0, 0.0)))
    assert zero["exact_none"] == 48.0 and zero["exact_b"] == 0.0  # 0.1875 * 4 * 64 at b = 0
    assert zero["ratio"] == zero["mc_ratio"] == float("inf")
