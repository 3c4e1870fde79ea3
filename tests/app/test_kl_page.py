"""The KL page without a browser: pi_ref, pi*, the frontier and the numbers against the engine."""

import math

import numpy as np
import pytest

from app.pages.kl import FRONTIER_BETAS, KLPage, beta_of, contains_best, page, probability_text, reference_without, reply_space
from engines.kl_optimal import REFERENCE, ReplySpaceSettings, boost_factor, enumerate_replies, optimal_logp, optimal_policy
from widgets.downloads import source_csv


def test_default_page_is_the_seed_beta_and_exchange_rate():
    pg = page(query={})
    assert pg.beta == 0.2 and not pg.zero_best and pg.gap == 1.0
    assert not pg.notice.visible
    # seed 000 section 6.12: e^(1/0.2) = e^5 = 148 and e^(1/0.05) = e^20 = 4.9e8, computed by the engine
    assert f"= {boost_factor(1.0, 0.2):.0f}" == "= 148"
    assert "e<sup>5</sup> = 148" in pg.two.object
    assert "e<sup>20</sup> ≈ 4.9 × 10<sup>8</sup>" in pg.two.object
    assert "e<sup>5</sup> <strong>= 148</strong>" in pg.two.object  # the current beta is the seed's 0.2


def test_the_slider_passes_through_the_seed_betas_exactly():
    betas = [beta_of(-2.5 + 0.05 * k) for k in range(71)]
    assert len(set(betas)) == 71 and betas == sorted(betas)
    assert {0.2, 0.05, 0.01, 1.0} <= set(betas)
    assert max(abs(math.log10(b) - (-2.5 + 0.05 * k)) for k, b in enumerate(betas)) < 0.025  # still a log scale


@pytest.mark.parametrize("log_beta,zero_best", [(-0.7, False), (-1.3, False), (-2.5, False), (1.0, False), (-1.3, True), (0.0, True)])
def test_plots_and_numbers_follow_the_engine(log_beta, zero_best):
    pg = KLPage(query={})
    pg.param.update(log_beta=log_beta, zero_best=zero_best)
    beta = beta_of(log_beta)
    settings = ReplySpaceSettings(reference=reference_without("superb")) if zero_best else ReplySpaceSettings()
    space = enumerate_replies(settings)
    policy = optimal_policy(space, beta)
    order = np.argsort(space.r, kind="stable")
    assert np.all(np.diff(pg.dist.data["r"]) >= 0)  # sorted by reward
    np.testing.assert_array_equal(pg.dist.data["pi"], np.exp(policy.logp[0])[order])
    np.testing.assert_array_equal(pg.dist.data["ref"], np.exp(space.ref_logp)[order])
    assert pg.dist.data["reply"] == [space.replies[y] for y in order]
    sweep = optimal_policy(space, FRONTIER_BETAS)
    np.testing.assert_array_equal(pg.frontier.data["kl"], sweep.kl)
    np.testing.assert_array_equal(pg.frontier.data["reward"], sweep.reward)
    assert pg.current.data == {"beta": [beta], "kl": [policy.kl[0]], "reward": [policy.reward[0]]}
    shown = pg.metrics.values()
    assert shown["beta"] == beta
    assert shown["reward"] == policy.reward[0] and shown["kl"] == policy.kl[0] and shown["entropy"] == policy.entropy[0]
    assert shown["objective"] == pytest.approx(policy.reward[0] - beta * policy.kl[0], abs=1e-12)
    top = int(np.argmax(policy.logp[0]))
    assert shown["top"] == np.exp(policy.logp[0, top])
    assert f"“{space.replies[top]}”" in pg.summary.object and f"β = {beta:g} " in pg.summary.object


def test_small_beta_collapses_onto_the_best_reply():
    pg = page(query={"log_beta": "-2.5"})
    space, _, _ = reply_space(False)
    best = int(np.argmax(space.r))
    assert space.replies[best] == "superb superb superb"
    assert pg.metrics.values()["top"] == pytest.approx(1.0, abs=1e-9)
    assert pg.metrics.values()["entropy"] == pytest.approx(0.0, abs=1e-6)
    assert pg.metrics.values()["kl"] == pytest.approx(-space.ref_logp[best], abs=1e-6)  # -log pi_ref of the one reply left
    assert "“superb superb superb”" in pg.summary.object


@pytest.mark.parametrize("log_beta", [-2.5, -1.3, 0.0, 1.0])
def test_a_reply_the_reference_never_writes_stays_at_zero(log_beta):
    pg = page(query={"zero_best": "true", "log_beta": str(log_beta)})
    assert sum(reference_without("superb")) == pytest.approx(1.0) and reference_without("superb")[0] == 0.0
    mask = np.array(["superb" in reply.split() for reply in pg.dist.data["reply"]])
    assert mask.sum() == 6**3 - 5**3
    assert np.all(pg.dist.data["pi"][mask] == 0.0) and np.all(pg.dist.data["ref"][mask] == 0.0)
    assert np.all(pg.dist.data["pi"][~mask] > 0)
    _, _, sweep = reply_space(True)
    assert np.all(np.exp(sweep.logp[:, contains_best(pg.space)]) == 0.0)  # at every beta of the sweep
    assert 'π*(“superb superb superb”) = <strong class="fl-zero">0</strong>' in pg.zero.object
    assert "“good good good”" in pg.zero.object and pg.best_rule.location == 0.5
    pg.zero_best = False
    assert pg.dist.data["pi"][mask].sum() > 0 and pg.best_rule.location == 1.0
    assert f"probability {REFERENCE[0]} per word" in pg.zero.object


@pytest.mark.parametrize("gap,log_beta", [(1.0, -1.3), (2.5, 0.0), (0.0, -0.7), (5.0, -2.5)])
def test_two_replies_panel_follows_the_engine(gap, log_beta):
    pg = page(query={"gap": str(gap), "log_beta": str(log_beta)})
    beta = beta_of(log_beta)
    factor = float(boost_factor(gap, beta))
    log_better, log_worse = optimal_logp(np.log([0.5, 0.5]), np.array([gap, 0.0]), beta)
    assert log_better - log_worse == pytest.approx(gap / beta, rel=1e-9)  # the factor is exp(gap / beta)
    text = pg.two.object
    assert f"gap {gap:.1f}, β = {beta:g}:" in text
    if math.isfinite(factor) and factor >= 1e4:
        mantissa, power = f"{factor:.1e}".split("e")
        assert f"≈ {mantissa} × 10<sup>{int(power)}</sup>" in text
    elif math.isfinite(factor):
        assert f"<strong>= {factor:.3g}" in text or f"<strong>= {factor:.0f}" in text
    else:
        assert f"10<sup>{gap / beta / math.log(10):.0f}</sup>" in text and "inf" not in text
    assert f"π*(better) = {probability_text(log_better)}, π*(worse) = {probability_text(log_worse)}." in text
    np.testing.assert_array_equal(pg.pair.data["pi"], np.exp([log_better, log_worse]))
    assert pg.pair.data["ref"] == [0.5, 0.5]


def test_frontier_is_computed_once_per_reply_space():
    a, b = page(query={}), page(query={"log_beta": "0.5"})
    assert a.sweep is b.sweep
    a.zero_best = True
    assert a.sweep is reply_space(True)[2] and a.sweep is not b.sweep


def test_distribution_csv_has_every_reply():
    text = source_csv(page(query={}).dist)
    lines = text.strip().split("\n")
    assert lines[0] == "rank,reply,r,ref,pi" and len(lines) == 1 + 216


@pytest.mark.parametrize(
    "query,bad", [({"log_beta": "-3"}, "log_beta"), ({"log_beta": "nan"}, "log_beta"), ({"zero_best": "maybe"}, "zero_best"), ({"gap": "big"}, "gap")]
)
def test_bad_link_values_fall_back_with_a_notice(query, bad):
    pg = page(query=query)
    assert pg.notice.visible and f"{bad}=" in pg.notice.object
    assert getattr(pg, bad) == KLPage.param[bad].default


def test_the_predictions_guard_the_frontier_and_the_zero_panel():
    from app.pages.kl import collapse_text, never_written_text

    pg = page(query={})
    pg.__panel__()
    assert not pg.collapse_card.revealed and not pg.never_card.revealed
    space = reply_space(False)[0]
    best = int(np.argmax(space.r))
    assert f"“{space.replies[best]}”" in collapse_text() and f"{-space.ref_logp[best]:.2f} nats" in collapse_text()
    assert "e<sup>5</sup> = 148" in collapse_text() and "e<sup>20</sup> ≈ 4.9 × 10<sup>8</sup>" in collapse_text()
    assert "“good good good”" in never_written_text()
    pg.guide.prompts = False
    assert pg.collapse_card.revealed and pg.never_card.revealed
