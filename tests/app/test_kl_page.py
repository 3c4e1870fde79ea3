"""The KL page without a browser: pi_ref, pi*, the frontier and the numbers against the engine."""

import math
import time
from pathlib import Path

import numpy as np
import pytest

from app.jobs.model_jobs import LM_BETAS, LM_SOURCE
from app.pages.kl import KLPage, page
from app.pages.kl.figures import FRONTIER_BETAS, beta_of, reply_space
from app.pages.kl.text import contains_best, probability_text, source_label
from engines.kl_optimal import (
    REFERENCE,
    ReplySpaceSettings,
    boost_factor,
    enumerate_replies,
    optimal_logp,
    optimal_policy,
    sampled_frontier,
    without_word,
)
from widgets.downloads import source_csv
from widgets.style import OKABE_ITO


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
    settings = without_word(ReplySpaceSettings(), "superb") if zero_best else ReplySpaceSettings()
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
    without = without_word(ReplySpaceSettings(), "superb").reference
    assert sum(without) == pytest.approx(1.0) and without[0] == 0.0
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
    from app.pages.kl.text import collapse_text, never_written_text

    pg = page(query={})
    pg.__panel__()
    assert not pg.collapse_card.revealed and not pg.never_card.revealed
    space = reply_space(False)[0]
    best = int(np.argmax(space.r))
    answer = collapse_text(space)
    assert f"“{space.replies[best]}”" in answer and f"{-space.ref_logp[best]:.2f} nats" in answer
    assert "e<sup>5</sup> = 148" in answer and "e<sup>20</sup> ≈ 4.9 × 10<sup>8</sup>" in answer
    assert "“good good good”" in never_written_text(reply_space(True)[0])
    pg.guide.prompts = False
    assert pg.collapse_card.revealed and pg.never_card.revealed


# ----------------------------------------------------------------------------- where the live runs sit


def write_run(root, name, evals, **settings):
    """A run folder by the real RunWriter: config.json and one eval.jsonl line per (step, exact KL, reward)."""
    import dataclasses

    from app.jobs.runs import RunWriter
    from engines.lm.results import EvalResult
    from engines.lm.settings import LMSettings

    base = EvalResult(step=0, reward=0.0, p_positive=0.5, kl_exact=0.0, kl=0.0, entropy=0.8, ref_perplexity=2.0,
                      distinct_1=0.5, distinct_2=0.9, beta=settings.get("beta", 0.05), prompts=("A prompt",),
                      replies=(" good film",), tokens=((" good", " film"),), logp=np.array([[-1.0, -2.0]]),
                      ref_logp=np.array([[-1.5, -1.5]]), R=np.array([1.0]))
    with RunWriter(root / name, {"settings": dataclasses.asdict(LMSettings(**settings))}) as writer:
        for step, kl, reward in evals:
            writer.write(dataclasses.replace(base, step=step, kl_exact=kl, reward=reward))


@pytest.fixture
def runs_dir(tmp_path):
    write_run(tmp_path, "a-beta0", [(0, 0.0, 0.4), (50, 1.0, 0.9), (100, 18.0, 2.8)], beta=0.0)
    write_run(tmp_path, "b-beta0.05", [(0, 0.0, 0.4), (100, 1.5, 2.3)], beta=0.05)
    write_run(tmp_path, "c-short", [(0, 0.0, 0.1), (10, 0.5, 0.3)], beta=0.05, T=12)
    return tmp_path


def test_the_section_starts_from_the_engine_defaults():
    from engines.lm.settings import LMFrontierSettings, LMSettings

    d = LMFrontierSettings()
    assert LM_SOURCE == {k: getattr(LMSettings(), k) for k in LM_SOURCE}  # the live run's defaults, from one definition
    pg = KLPage(query={}, runs_dir="/nonexistent/runs")
    assert (pg.lm_prompts, pg.lm_samples, pg.lm_seed) == (d.prompts, d.samples, d.seed)
    assert pg.param.lm_source.objects == [source_label(LM_SOURCE)] and len(pg.sampled.points.data["kl"]) == 0
    assert "No run's evaluations" in pg.sampled.summary.object
    assert f"log m = {math.log(d.samples):.2f} nats" in pg.sampled.approx.object


@pytest.mark.server
def test_the_page_module_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, app.pages.kl; app.pages.kl.KLPage(query={}); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


def test_runs_of_the_chosen_model_and_reward_are_drawn(runs_dir):
    pg = KLPage(query={}, runs_dir=runs_dir)
    assert len(pg.param.lm_source.objects) == 2 and KLPage.param.lm_source.objects == [source_label(LM_SOURCE)]
    assert pg.sampled.paths.data["xs"] == [[0.0, 1.0, 18.0], [0.0, 1.5]] and pg.sampled.paths.data["ys"] == [[0.4, 0.9, 2.8], [0.4, 2.3]]
    assert pg.sampled.points.data["step"] == [0, 50, 100, 0, 100] and len(set(pg.sampled.paths.data["colour"])) == 2
    assert OKABE_ITO["blue"] not in pg.sampled.paths.data["colour"]  # the frontier's colour
    assert pg.sampled.x_range.end == pytest.approx(1.1 * 3 * math.log(32))  # the 18-nat point is left out of the view
    assert "1 lie right of the view (up to 18.0 nats)" in pg.sampled.summary.object
    short = next(label for label in pg.param.lm_source.objects if "T = 12" in label)
    pg.lm_source = short
    assert pg.sampled.paths.data["xs"] == [[0.0, 0.5]] and pg.sampled.points.data["reward"] == [0.1, 0.3]
    linked = KLPage(query={"lm_source": short, "lm_samples": "64"}, runs_dir=runs_dir)
    assert linked.lm_source == short and linked.lm_samples == 64 and not linked.notice.visible


@pytest.mark.server
def test_the_sampled_frontier_is_the_engines_and_the_runs_are_read_against_it(runs_dir):
    from engines.lm.frontier import LMFrontierSettings, lm_frontier

    pg = KLPage(query={"lm_prompts": "2", "lm_samples": "4", "lm_seed": "7"}, runs_dir=runs_dir)
    pg.sampled.start()
    pg.sampled.job.run.join(120)
    assert pg.sampled.job.controls.progress == 1.0 and not pg.sampled.job.controls.running
    expected = sampled_frontier(lm_frontier(LMFrontierSettings(prompts=2, samples=4, seed=7)).rewards, LM_BETAS)
    np.testing.assert_array_equal(pg.sampled.curve.data["kl"], expected.kl)
    np.testing.assert_array_equal(pg.sampled.curve.data["reward"], expected.reward)
    assert pg.ceiling_rule.visible and pg.ceiling_rule.location == pytest.approx(math.log(4))
    assert f"<b>{expected.reference_reward:+.3f}</b>" in pg.sampled.status.object and "2 of 2 prompts × 4 replies" in pg.sampled.status.object
    kl = np.asarray(pg.sampled.points.data["kl"])
    frontier = np.asarray(pg.sampled.points.data["frontier_reward"])
    within = kl <= expected.kl.max()
    np.testing.assert_allclose(frontier[within], np.interp(kl[within], expected.kl[::-1], expected.reward[::-1]))
    assert np.all(np.isnan(frontier[~within])) and within[[0, 3]].all() and not within[2]  # KL 0 always, 18 nats never
    below = int((np.asarray(pg.sampled.points.data["reward"])[within] < frontier[within]).sum())
    assert f"{within.sum()} lie within the frontier's reach, a KL of {expected.kl.max():.2f} nats (log m = 1.39" in pg.sampled.summary.object
    assert f"{below} of them below the sampled frontier" in pg.sampled.summary.object
    pg.lm_samples = 8  # another m: the old frontier is dropped
    assert len(pg.sampled.curve.data["kl"]) == 0 and not pg.ceiling_rule.visible and "log m = 2.08" in pg.sampled.approx.object


def test_the_sampling_waits_for_the_device_in_the_queue_and_says_so(runs_dir, cpu_taken):
    from app.jobs.cluster import Queued, current

    pg = KLPage(query={"lm_prompts": "2", "lm_samples": "4"}, runs_dir=runs_dir)
    pg.sampled.start()
    deadline = time.monotonic() + 60
    while not (pg.sampled.job.run.notice.visible and "place 1" in pg.sampled.job.run.notice.object):
        assert time.monotonic() < deadline, "the sampling never said it waits"
        time.sleep(0.05)
    assert pg.sampled.job.run.notice.object == Queued("cpu", 1).waiting("The sampling").sentence and len(pg.sampled.curve.data["kl"]) == 0
    assert current().overview()[0].waiting == ("KL page · frontier, 2 prompts × 4 replies",)
    cpu_taken.free()
    pg.sampled.job.run.join(120)
    assert pg.sampled.job.controls.progress == 1.0 and not pg.sampled.job.run.notice.visible and current().overview() == []


@pytest.mark.server
@pytest.mark.parametrize("offered,sentence", [
    (("embedded",), "This server does not offer the model &#x27;feedback-lab-tests/no-such-model&#x27;; choose one of embedded."),
    (("embedded", "feedback-lab-tests/no-such-model"),
     "The model &#x27;feedback-lab-tests/no-such-model&#x27; is not on this machine yet: a live run of it downloads it, "
     "then its frontier can be sampled."),
])
def test_a_model_that_is_not_offered_or_not_on_this_machine_gives_one_sentence(tmp_path, monkeypatch, offer, offered, sentence):
    offer(models=offered)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_run(tmp_path, "x", [(0, 0.0, 0.1)], model="feedback-lab-tests/no-such-model")
    pg = KLPage(query={}, runs_dir=tmp_path)
    pg.lm_source = next(label for label in pg.param.lm_source.objects if "no-such-model" in label)
    pg.sampled.start()
    pg.sampled.job.run.join(60)
    notice = pg.sampled.job.notice
    assert (notice.object, notice.alert_type, notice.visible) == (sentence, "danger", True) and not pg.sampled.job.controls.running
    pg.lm_source = source_label(LM_SOURCE)  # the page keeps working
    assert "Press Start" in pg.sampled.status.object and not notice.visible


@pytest.mark.parametrize("query,bad", [({"lm_samples": "2000"}, "lm_samples"), ({"lm_prompts": "0"}, "lm_prompts"),
                                       ({"lm_source": "gpt9 · vader"}, "lm_source")])
def test_bad_frontier_link_values_fall_back(query, bad):
    pg = KLPage(query=query, runs_dir="/nonexistent/runs")
    assert pg.notice.visible and f"{bad}=" in pg.notice.object and getattr(pg, bad) == KLPage.param[bad].default
