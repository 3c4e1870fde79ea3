"""The baselines page's columns (app/pages/baselines/figures.py) against the seed's two-action numbers, worked by hand."""

import numpy as np
import pytest

from app.pages.baselines.figures import line_columns, point_columns


def test_line_columns_are_the_seeds_lines():
    # Seed 001 section 4 at p = 0.5: g1 = (11 - b) * 0.5, g2 = (10 - b) * (-0.5), mean p(1 - p) = 0.25 for every b.
    columns = line_columns(0.5)
    b = np.arange(151) / 10
    np.testing.assert_array_equal(columns["b"], b)
    np.testing.assert_allclose(columns["g1"], (11 - b) * 0.5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(columns["g2"], (10 - b) * -0.5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(columns["mean"], np.full(151, 0.25), rtol=0, atol=1e-12)


def test_point_columns_at_p_03_and_b_4():
    # g1 = 7 * 0.7 = 4.9, g2 = 6 * (-0.3) = -1.8, mean 0.3 * 0.7 = 0.21, the lines cross at 0.7 * 11 + 0.3 * 10 = 10.7.
    dots, cross = point_columns(0.3, 4.0)
    assert dots["b"] == [4.0, 4.0] and dots["g"] == pytest.approx([4.9, -1.8], abs=1e-12)
    assert dots["colour"][0] != dots["colour"][1]  # each dot in its own line's colour
    assert cross["b"] == pytest.approx([10.7], abs=1e-12) and cross["g"] == pytest.approx([0.21], abs=1e-12)
