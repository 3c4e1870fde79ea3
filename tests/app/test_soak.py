"""The memory soak's growth per cycle (bench/soak.py): a least-squares slope and its standard error."""

import math

import numpy as np
import pytest

from bench.soak import slope


def test_readings_on_a_line_give_its_slope_with_no_error():
    per_cycle, se = slope([0, 10, 20, 30], [300.0, 301.0, 302.0, 303.0])
    assert per_cycle == pytest.approx(0.1) and se == pytest.approx(0.0, abs=1e-12)


def test_the_standard_error_is_the_textbook_one():
    # y = a + b x + e: se(b) = sqrt(sum(e^2) / (n - 2) / sum((x - mean x)^2)); here the residuals are +-1 by construction
    x = np.array([0, 10, 20, 30, 40])
    residuals = np.array([1.0, -1.0, 0.0, -1.0, 1.0])  # orthogonal to 1 and to x, so the fitted line is a + b x itself
    per_cycle, se = slope(list(x), list(300 + 0.05 * x + residuals))
    assert per_cycle == pytest.approx(0.05)
    assert se == pytest.approx(math.sqrt(4 / 3 / 1000))


def test_two_readings_give_their_difference_per_cycle_and_no_error():
    per_cycle, se = slope([0, 50], [333.5, 339.2])
    assert per_cycle == pytest.approx(5.7 / 50) and math.isnan(se)
