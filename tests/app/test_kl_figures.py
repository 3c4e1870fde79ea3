"""The KL page's column functions against the closed form worked by hand, on reply spaces small enough to write out."""

import math

import numpy as np
import pytest

from app.pages.kl.figures import (
    PAIR_REFERENCE,
    best_reachable,
    distribution_columns,
    frontier_columns,
    lm_view_end,
    pair_columns,
    reply_space,
    reward_columns,
    two_replies_logp,
)
from app.pages.kl.text import PAIR
from engines.kl_optimal import ReplySpace, optimal_policy

THREE = ReplySpace(replies=("up", "flat", "down"), ref_logp=np.log([0.25, 0.25, 0.5]), r=np.array([1.0, 0.0, -1.0]))
"""Three replies, the best one the least likely under the reference."""


def test_the_distributions_are_sorted_by_reward_with_pi_star_in_closed_form():
    order = np.argsort(THREE.r, kind="stable")
    columns = distribution_columns(THREE, order, optimal_policy(THREE, 0.5))
    # pi*(y) = pi_ref(y) exp(r(y) / beta) / Z at beta = 0.5, in the order down, flat, up
    weights = np.array([0.5 * math.exp(-2.0), 0.25, 0.25 * math.exp(2.0)])
    assert list(columns) == ["rank", "reply", "r", "ref", "pi"]  # the CSV's columns, in this order
    assert columns["reply"] == ["down", "flat", "up"] and columns["rank"].tolist() == [0, 1, 2]
    assert columns["r"].tolist() == [-1.0, 0.0, 1.0]
    np.testing.assert_allclose(columns["ref"], [0.5, 0.25, 0.25], rtol=1e-15)
    np.testing.assert_allclose(columns["pi"], weights / weights.sum(), rtol=1e-12)
    rewards = reward_columns(THREE, order)  # the rewards panel's own source: the same ranks and rewards
    assert rewards["rank"].tolist() == [0, 1, 2] and rewards["r"].tolist() == [-1.0, 0.0, 1.0]


def test_the_rewards_panel_has_every_reply_of_the_page_in_reward_order():
    space, order, _ = reply_space(False)
    columns = reward_columns(space, order)
    assert columns["rank"].tolist() == list(range(216)) and np.all(np.diff(columns["r"]) >= 0)
    assert (columns["r"][0], columns["r"][-1]) == (-1.0, 1.0)  # awful awful awful, superb superb superb


def test_frontier_columns_read_a_sweep_and_start_empty():
    sweep = optimal_policy(THREE, [10.0, 1.0, 0.1])
    columns = frontier_columns(sweep)
    assert columns["beta"] is sweep.beta and columns["kl"] is sweep.kl and columns["reward"] is sweep.reward
    empty, again = frontier_columns(None), frontier_columns(None)
    assert empty == {"beta": [], "kl": [], "reward": []} and empty["kl"] is not again["kl"]  # each source its own


def test_the_highest_reward_the_reference_reaches():
    never_up = ReplySpace(replies=THREE.replies, ref_logp=np.array([-np.inf, np.log(0.5), np.log(0.5)]), r=THREE.r)
    assert best_reachable(THREE) == 1.0 and best_reachable(never_up) == 0.0
    assert best_reachable(reply_space(False)[0]) == 1.0 and best_reachable(reply_space(True)[0]) == 0.5  # good good good


@pytest.mark.parametrize("gap,beta", [(1.0, 0.2), (1.0, 0.05), (0.0, 1.0), (2.5, 1.0)])
def test_two_replies_split_as_a_logistic_of_gap_over_beta(gap, beta):
    logp = two_replies_logp(gap, beta)
    better, worse = 1.0 / (1.0 + math.exp(-gap / beta)), 1.0 / (1.0 + math.exp(gap / beta))  # e^(±gap/beta) / (e^(±gap/beta) + 1)
    np.testing.assert_allclose(np.exp(logp), [better, worse], rtol=1e-12)
    columns = pair_columns(logp)
    assert columns["reply"] == list(PAIR) and columns["ref"] == list(PAIR_REFERENCE) == [0.5, 0.5]
    np.testing.assert_array_equal(columns["pi"], np.exp(logp))


def test_the_worse_reply_keeps_a_finite_log_probability_far_below_the_float_range():
    gap, beta = 5.0, 10**-2.5  # the slider's ends: gap / beta = 1581, e^-1581 is 0 as a float
    logp = two_replies_logp(gap, beta)
    assert logp[1] == pytest.approx(-gap / beta, rel=1e-12) and logp[0] == pytest.approx(0.0, abs=1e-300)
    assert pair_columns(logp)["pi"].tolist() == [1.0, 0.0]


@pytest.mark.parametrize("kl,end", [
    ([], 1.1 * math.log(32)),  # no run: log m and a margin
    ([0.0, 1.0], 1.1 * math.log(32)),  # within log m
    ([0.0, 5.0], 1.1 * 5.0),  # past log m: the furthest evaluation and a margin
    ([0.0, 18.0], 1.1 * 3 * math.log(32)),  # far past: stops at 3 log m
])
def test_the_live_figure_shows_log_m_and_the_runs_up_to_three_times_it(kl, end):
    assert lm_view_end(np.array(kl), 32) == pytest.approx(end)  # up to the order of the float products
