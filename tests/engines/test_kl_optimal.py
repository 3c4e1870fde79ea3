"""The closed-form regularised optimum against the seed's numbers and a brute-force ascent."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from engines.kl_optimal import (
    FrontierSettings,
    ReplySpaceSettings,
    ascend_objective,
    boost_factor,
    enumerate_replies,
    objective,
    optimal_logp,
    optimal_policy,
    without_word,
)

betas = st.floats(0.01, 5.0)


def test_seed_exchange_rate():
    # seed 000 section 6.12: a log-odds gap of 1 between two equally likely replies
    assert boost_factor(1.0, 0.2) == pytest.approx(148.4, abs=0.05)
    assert boost_factor(1.0, 0.05) == pytest.approx(4.85e8, rel=1e-3)
    assert f"{boost_factor(1.0, 0.05):.1e}" == "4.9e+08"
    two = optimal_logp(np.log([0.5, 0.5]), np.array([1.0, 0.0]), np.array([0.2, 0.05]))
    np.testing.assert_allclose(np.exp(two[:, 0] - two[:, 1]), [np.exp(5), np.exp(20)], rtol=1e-9)


def test_enumeration_against_a_plain_loop():
    s = ReplySpaceSettings(length=2)
    space = enumerate_replies(s)
    assert len(space.replies) == len(s.words) ** 2
    i = 0
    for a in range(len(s.words)):
        for b in range(len(s.words)):
            assert space.replies[i] == f"{s.words[a]} {s.words[b]}"
            assert space.ref_logp[i] == pytest.approx(np.log(s.reference[a] * s.reference[b]))
            assert space.r[i] == pytest.approx((s.valence[a] + s.valence[b]) / 2)
            i += 1
    assert np.exp(space.ref_logp).sum() == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(betas)
def test_closed_form_is_where_brute_force_ascent_lands(beta):
    space = enumerate_replies(ReplySpaceSettings())
    closed = optimal_policy(space, beta)
    climbed = ascend_objective(space, beta)
    np.testing.assert_allclose(np.exp(climbed), np.exp(closed.logp[0]), atol=1e-8)
    assert objective(space, climbed, beta) == pytest.approx(closed.objective[0], abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(betas, st.integers(0, 10_000))
def test_no_perturbed_policy_beats_the_closed_form(beta, seed):
    space = enumerate_replies(ReplySpaceSettings(length=2))
    best = optimal_policy(space, beta)
    rng = np.random.default_rng(seed)
    for scale in (1e-3, 1e-1, 1.0):
        other = best.logp[0] + scale * rng.standard_normal(best.logp.shape[1])
        other -= np.log(np.exp(other).sum())
        assert objective(space, other, beta) <= best.objective[0] + 1e-12


@settings(max_examples=25, deadline=None)
@given(betas)
def test_a_reply_the_reference_never_writes_stays_at_zero(beta):
    reference = (0.0, 0.2, 0.2, 0.3, 0.2, 0.1)  # "superb", the best word, is never written
    space = enumerate_replies(ReplySpaceSettings(reference=reference))
    best = optimal_policy(space, beta)
    never = ~np.isfinite(space.ref_logp)
    assert never.any()
    assert np.all(np.exp(best.logp[0][never]) == 0.0)
    assert np.isfinite(best.kl[0]) and np.isfinite(best.reward[0])
    assert np.exp(best.logp[0]).sum() == pytest.approx(1.0)


def test_without_a_word_the_others_share_its_probability():
    settings = without_word(ReplySpaceSettings(), "superb")
    others = 0.16 + 0.2 + 0.3 + 0.2 + 0.1  # the seed's reference without superb's 0.04
    assert settings.reference == (0.0, 0.16 / others, 0.2 / others, 0.3 / others, 0.2 / others, 0.1 / others)
    assert (settings.words, settings.valence, settings.length) == (ReplySpaceSettings().words, ReplySpaceSettings().valence, 3)
    with pytest.raises(ValueError, match="not a word"):
        without_word(settings, "brilliant")
    with pytest.raises(ValueError, match="writes no word"):
        without_word(ReplySpaceSettings(words=("a", "b"), valence=(0.0, 1.0), reference=(1.0, 0.0)), "a")


def test_frontier_moves_monotonically():
    space = enumerate_replies(ReplySpaceSettings())
    best = optimal_policy(space, [5.0, 1.0, 0.2, 0.05, 0.01])
    assert np.all(np.diff(best.reward) > 0) and np.all(np.diff(best.kl) > 0)
    assert best.reward[-1] == pytest.approx(space.r.max(), abs=1e-3)  # beta -> 0: the best reply only
    assert best.kl[0] < 1e-2  # large beta: back at the reference


@pytest.mark.parametrize("bad", [dict(reference=(0.5, 0.5, 0, 0, 0, 0.1)), dict(length=7), dict(betas=(0.0,)),
                                 dict(betas=(float("nan"),)), dict(valence=(1.0,)), dict(words=("a", "a"))])
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        FrontierSettings(**bad)


def test_command(capsys):
    main(["figures", "kl-optimal", "--betas", "0.2", "0.05", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert [round(row["boost"], 1) for row in result["frontier"]] == [148.4, 485165195.4]
    main(["figures", "kl-optimal"])
    assert "148.4" in capsys.readouterr().out
