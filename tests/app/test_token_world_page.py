"""The token-world page without a browser: heat map, episode, lambda panels and training against the engines."""

import dataclasses

import numpy as np
import pytest

from app.pages.token_world import (
    LAMBDA_GRID,
    MC_LAMBDAS,
    TokenWorldPage,
    page,
    reply_tokens,
)
from app.pages.token_world.figures import critic_columns
from engines.token_world import (
    CHAPTER_REPLY,
    TokenWorldSettings,
    gae_decomposition_exact,
    gae_decomposition_mc,
    one_episode,
    token_values,
)
from engines.token_world_training import train_token_world


def test_default_page_shows_the_seed_world():
    pg = page(query={})
    assert (pg.T, pg.threshold, pg.p_a, pg.lam, pg.critic_noise, pg.gamma) == (6, 4, 0.6, 0.95, 0.15, 1.0)
    # Seed 000 section 6.8: V(start) 0.5443, Q(A) 0.6826, Q(B) 0.3370, A(A) +0.1382, A(B) -0.2074.
    assert {k: pg.metrics.text(k) for k in ("V", "QA", "QB", "AA", "AB")} == {
        "V": "0.5443", "QA": "0.6826", "QB": "0.3370", "AA": "+0.1382", "AB": "-0.2074"
    }
    assert "tokens ABABAA, reward at the end = 1; λ = 0.95" in pg.table.object
    assert "δ₀ = 0 + 1.00 × V(1, 1) − V(0, 0) = 1.00 × 0.6826 − 0.5443 = +0.1382" in pg.why.object
    assert not pg.notice.visible and not pg.threshold_cap.notice.visible


CHANGES = [{}, {"T": 9, "threshold": 7, "p_a": 0.45}, {"gamma": 0.8, "lam": 0.3}, {"critic_noise": 0.0}, {"critic_noise": 0.05, "seed": 7}, {"T": 12, "threshold": 2}]


def test_plot_data_follow_the_engine():
    pg = TokenWorldPage(query={})
    for changes in CHANGES:  # one page, moved from state to state as a reader would
        pg.param.update(**changes)
        check_against_engine(pg)


def check_against_engine(pg):
    T, threshold, p_a, gamma = pg.T, pg.threshold, pg.p_a, pg.gamma
    v = token_values(T, threshold, p_a, gamma)
    cells = pg.cells.data
    assert len(cells["t"]) == T * (T + 1) // 2 and np.all(cells["k"] <= cells["t"])  # unreachable k > t left blank
    np.testing.assert_array_equal(cells["V"], v.V[cells["t"], cells["k"]])

    settings = TokenWorldSettings(
        T=T, threshold=threshold, p_a=p_a, gamma=gamma, lambdas=LAMBDA_GRID, critic_noises=(0.05, pg.critic_noise),
        seed=pg.seed, tokens=reply_tokens(pg.reply, pg.episode_seed, T, p_a), lam=pg.lam, episode_noise=pg.critic_noise,
    )
    d = gae_decomposition_exact(settings)
    for critic, j in zip(("exact", "slight", "chosen"), critic_columns(d.critic_noises, pg.critic_noise)):
        assert d.critic_noises[j] == {"exact": 0.0, "slight": 0.05, "chosen": pg.critic_noise}[critic]
        np.testing.assert_array_equal(pg.curves.data[f"total_{critic}"], d.total[:, j])
        np.testing.assert_array_equal(pg.curves.data[f"bias2_{critic}"], d.bias2[:, j])
    at = gae_decomposition_exact(dataclasses.replace(settings, lambdas=(pg.lam,)))
    assert pg.at_lam.data["total_chosen"][0] == at.total[0, critic_columns(at.critic_noises, pg.critic_noise)[2]]

    e = one_episode(settings)
    np.testing.assert_array_equal(pg.episode.data["gae"], e.gae)
    np.testing.assert_array_equal(pg.episode.data["exact_A"], e.exact_A)
    np.testing.assert_array_equal(pg.path.data["k"], e.k)
    assert all(f"{x:+.3f}" in pg.table.object for x in e.delta)
    assert pg.metrics.values()["V"] == pytest.approx(v.V[0, 0])


def test_exact_critic_at_lambda_zero_is_perfect():
    pg = page(query={"lam": "0"})
    assert pg.curves.data["lam"][0] == 0.0
    assert pg.curves.data["total_exact"][0] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(pg.episode.data["exact_A"], one_episode(TokenWorldSettings(episode_noise=0.0, lam=0.0)).delta)
    assert pg.curves.data["bias2_chosen"][0] > pg.curves.data["bias2_slight"][0] > 0


def test_zero_noise_third_panel_is_the_exact_critic():
    pg = page(query={"critic_noise": "0"})
    np.testing.assert_array_equal(pg.curves.data["total_chosen"], pg.curves.data["total_exact"])
    assert pg.panels == []  # built with its section, on first view, with the controls as they are then
    pg.param.update(lam=0.4, section="lambda")
    assert "V + noise 0.00" in pg.panels[2].title.text
    assert [rule.location for rule in pg.lam_rules] == [0.4] * 3


def test_threshold_is_clamped_to_T_with_a_notice():
    pg = page(query={"T": "10", "threshold": "8"})
    pg.__panel__()  # the page drawn, with its heat map
    assert (pg.T, pg.threshold) == (10, 8) and pg.threshold_cap.slider.end == 10
    pg.T = 5
    assert pg.threshold == 5 and pg.threshold_cap.slider.end == 5
    assert pg.threshold_cap.notice.visible and "threshold 8 was more than T = 5" in pg.threshold_cap.notice.object
    assert len(pg.cells.data["t"]) == 15 and "≥ 5]" in pg.heat.title.text  # redrawn for the clamped world
    pg.T = 7
    assert pg.threshold == 5 and not pg.threshold_cap.notice.visible and pg.threshold_cap.slider.end == 7
    pg.threshold = 9  # a value past T from code or a link is clamped too
    assert pg.threshold == 7 and pg.threshold_cap.notice.visible


def test_link_with_threshold_above_T_is_clamped():
    pg = page(query={"T": "4", "threshold": "6"})
    assert (pg.T, pg.threshold) == (4, 4) and pg.threshold_cap.notice.visible


def test_new_episode_samples_a_reply_and_shows_its_seed(monkeypatch):
    monkeypatch.setattr("app.pages.token_world.secrets.randbelow", lambda high: 4242)
    pg = page(query={})
    pg.new_episode()
    assert (pg.reply, pg.episode_seed) == ("sampled", 4242)
    tokens = reply_tokens("sampled", 4242, 6, 0.6)
    assert f"tokens {tokens}," in pg.table.object and "episode seed **4242**" in pg.episode_note.object
    assert reply_tokens("chapter", 4242, 6, 0.6) == CHAPTER_REPLY
    assert reply_tokens("chapter", 3, 8, 0.6) == reply_tokens("sampled", 3, 8, 0.6)  # ABABAA has 6 tokens


def test_monte_carlo_check_streams_the_engine_estimate():
    pg = page(query={"episodes": "2000", "T": "4", "threshold": "2"})
    pg.mc.start()
    pg.mc.job.run.join(30)
    settings = pg.world_settings(lambdas=MC_LAMBDAS)
    d = gae_decomposition_mc(settings)  # the last snapshot is the full-size estimate
    j = critic_columns(d.critic_noises, pg.critic_noise)[2]
    np.testing.assert_array_equal(pg.mc.points.data["total_chosen"], d.total[:, j])
    assert pg.mc.job.controls.progress == 1.0 and not pg.mc.job.controls.running
    assert "**2,000** sampled episodes" in pg.mc.status.object
    pg.p_a = 0.7  # the check no longer matches the settings: its points are removed
    assert len(pg.mc.points.data["lam"]) == 0 and "settings changed" in pg.mc.status.object


def test_a_monte_carlo_check_under_way_starts_afresh_for_new_settings():
    pg = page(query={"episodes": "100000", "T": "4", "threshold": "2"})
    pg.mc.start()
    assert pg.mc.job.run.running
    pg.p_a = 0.7  # stops the stale check; without a browser session the fresh one starts at once (widgets/debounce.py)
    pg.mc.job.run.join(60)
    d = gae_decomposition_mc(pg.world_settings(lambdas=MC_LAMBDAS))
    np.testing.assert_array_equal(pg.mc.points.data["total_chosen"], d.total[:, critic_columns(d.critic_noises, pg.critic_noise)[2]])
    assert pg.mc.job.controls.progress == 1.0 and "**100,000** sampled episodes" in pg.mc.status.object


def test_training_streams_the_engine_curves_and_the_seed_table():
    pg = page(query={"seeds": "4", "steps": "10", "shift": "true"})
    source = pg.training.curves
    pg.training.start()
    pg.training.job.run.join(30)
    assert pg.training.curves is source  # the run streamed into the plot's source, in place
    result = train_token_world(pg.training_settings())
    assert pg.training_settings().shift == 5.0 and pg.training_settings().report_at == (10,)
    np.testing.assert_allclose(pg.training.curves.data["none"], result.success[0].mean(-1))
    np.testing.assert_allclose(pg.training.curves.data["gae_0.95"], result.success[4].mean(-1))
    assert f"| REINFORCE, leave-one-out baseline | {result.mean_at[1, 0]:.3f} |" in pg.training.result.object
    assert "4 seeds × 10 updates" in pg.training.note.object and "+5 reward shift" in pg.training.note.object
    pg.seeds = 5
    assert "The controls have changed since" in pg.training.note.object


def test_bad_link_values_fall_back_with_a_notice():
    bad = {"T": "20", "threshold": "abc", "p_a": "1.5", "reply": "mine", "episodes": "1000000000", "steps": "100000", "lam": "nan"}
    pg = page(query=bad | {"gamma": "0.9"})
    assert pg.notice.visible and pg.gamma == 0.9  # the valid value is still applied
    for name in bad:
        assert f"{name}=" in pg.notice.object and getattr(pg, name) == TokenWorldPage.param[name].default


def test_sessions_do_not_share_state_and_close_stops_work():
    first, second = page(query={}), page(query={})
    first.lam = 0.2
    assert second.lam == 0.95 and first.curves is not second.curves
    first.param.update(seeds=50, steps=300)
    first.training.start()
    first.close()
    first.training.job.run.join(30)
    assert not first.training.job.run.running and not first.training.job.controls.running


def test_the_prediction_guards_the_lambda_panels_and_its_answer_is_the_engines():
    pg = page(query={})
    pg.__panel__()
    assert not pg.predict_card.revealed
    exact = gae_decomposition_exact(pg.world_settings())
    best = float(exact.lambdas[int(np.argmin(exact.total[:, 0]))])  # the exact critic's column
    assert pg.predict_card.answer == f"{best:g}" == "0"
    pg.predict_card.commit("0.95")
    assert pg.predict_card.revealed and "Not quite" in pg.predict_card.view.verdict
    pg.close()
