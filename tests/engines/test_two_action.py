"""Seed 001 section 4: the two-action table and demo, and the command that prints it."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from engines.two_action import TwoActionDemoSettings, TwoActionSettings, two_action_estimates, variance_minimising_baseline

probabilities = st.floats(0.01, 0.99)
baselines = st.floats(-50, 50)


def test_seed_table():
    est = two_action_estimates(0.5, [0.0, 10.5])
    np.testing.assert_allclose(est.g1, [5.5, 0.25])
    np.testing.assert_allclose(est.g2, [-5.0, 0.25])
    np.testing.assert_allclose(est.mean, [0.25, 0.25])
    np.testing.assert_allclose(est.sd, [5.25, 0.0], atol=1e-12)


def test_seed_demo_sentence_at_defaults():
    est = two_action_estimates(0.5, 0.0)
    sentence = (
        f"the estimate is {est.g1:.2f} if action 1 is sampled and {est.g2:.2f} if action 2 is. "
        f"Mean {est.mean:.4f}, standard deviation {est.sd:.2f}. The two lines cross at b = {est.cross:.2f}."
    )
    assert sentence == (
        "the estimate is 5.50 if action 1 is sampled and -5.00 if action 2 is. "
        "Mean 0.2500, standard deviation 5.25. The two lines cross at b = 10.50."
    )


@settings(max_examples=60, deadline=None)
@given(probabilities, baselines, st.floats(-20, 20), st.floats(-20, 20))
def test_against_enumeration_of_the_two_outcomes(p, b, R1, R2):
    est = two_action_estimates(p, b, R1, R2)
    outcomes = [((R1 - b) * (1 - p), p), ((R2 - b) * (-p), 1 - p)]  # (estimate, probability)
    mean = sum(g * w for g, w in outcomes)
    var = sum(w * (g - mean) ** 2 for g, w in outcomes)
    assert est.mean == pytest.approx(mean, abs=1e-9)
    assert est.sd == pytest.approx(np.sqrt(var), abs=1e-6)
    # the baseline never moves the mean: it is the true gradient p(1-p)(R1-R2)
    assert est.mean == pytest.approx(p * (1 - p) * (R1 - R2), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(probabilities, st.floats(-20, 20), st.floats(-20, 20))
def test_crossing_point_is_the_variance_minimising_baseline(p, R1, R2):
    b_star = variance_minimising_baseline(p, R1, R2)
    assert b_star == pytest.approx((1 - p) * R1 + p * R2, abs=1e-9)
    assert two_action_estimates(p, b_star, R1, R2).sd == pytest.approx(0.0, abs=1e-6)
    for db in (-0.5, 0.5):
        assert two_action_estimates(p, b_star + db, R1, R2).sd > 0


@pytest.mark.parametrize("bad", [dict(p=0.0), dict(p=1.2), dict(p=float("nan")), dict(b=()), dict(R1=float("inf"))])
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        TwoActionSettings(**bad)


@pytest.mark.parametrize("bad", [dict(p=0.0), dict(p=1.0), dict(p=float("nan")), dict(b=float("inf")), dict(b=float("nan"))])
def test_invalid_demo_settings_are_refused(bad):
    with pytest.raises(ValueError):
        TwoActionDemoSettings(**bad)


def test_command_prints_the_seed_table(capsys):
    assert main(["figures", "two-action"]) == 0
    out = capsys.readouterr().out
    assert "5.5" in out and "-5" in out and "5.25" in out and "10.5" in out


def test_command_json_and_refusal(capsys):
    main(["figures", "two-action", "--p", "0.3", "--b", "0", "10.7", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["b_star"] == pytest.approx(10.7)
    assert result["rows"][1]["sd"] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(SystemExit) as exit_info:
        main(["figures", "two-action", "--p", "-0.2"])
    assert exit_info.value.code == 2
    assert "p must lie strictly between 0 and 1" in capsys.readouterr().err
