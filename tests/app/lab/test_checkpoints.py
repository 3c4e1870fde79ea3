"""The lab's checkpoints called directly: the seed's answers pass, and typical wrong answers get the right sentence.

Each wrong answer below is a mistake learners make (a sum in the wrong direction, a baseline that
includes the sample's own reward, the temperature multiplied instead of divided, ...); the test
checks that its checkpoint fails and that the sentence names that mistake.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from app.lab import checkpoints as cp
from engines.lm.preferences import BUNDLED_PAIRS, load_pairs, relabel
from engines.lm.reward_model import RewardModelSettings, load_reward_model, train_reward_model
from engines.toy_target import sample, token_logprobs

# --- the seed's answers (section 5's code, section 8's loss) ------------------------------------------------------

def returns_to_go(rewards):
    return rewards.flip(-1).cumsum(-1).flip(-1)


def reinforce_loss(logp, returns, baseline=0.0):
    return -((returns - baseline).detach() * logp).sum(-1).mean()


def loo_baseline(returns):
    return (returns.sum(0, keepdim=True) - returns) / (returns.shape[0] - 1)


def bt_prob(g_a, g_b, tau_label):
    return 1.0 / (1.0 + np.exp(-(np.asarray(g_a) - np.asarray(g_b)) / tau_label))


def bt_loss(reward_w, reward_l):
    return -F.logsigmoid(reward_w - reward_l).mean()


def fit_normalizer(raw_scores):
    return float(np.mean(raw_scores)), float(np.std(raw_scores))


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.fixture(scope="module")
def pairs():
    return load_pairs(BUNDLED_PAIRS)


def failed(checkpoint, *phrases):
    assert not checkpoint.passed, checkpoint
    for phrase in phrases:
        assert phrase in checkpoint.message, checkpoint.message
    assert "Traceback" not in checkpoint.message and len(checkpoint.message) < 400


# --- Exercise 0 ---------------------------------------------------------------------------------------------------

RESPONSES = sample(np.zeros((6, 8, 8)), 4, np.random.default_rng(0))
UNIFORM = np.zeros((6, 8, 8))


def test_exercise0_passes_the_seed_answer_and_says_the_numbers():
    check = cp.exercise0(token_logprobs(UNIFORM, RESPONSES).sum(-1), (1 / 8) ** 6)
    assert check.passed and "-12.48" in check.message and "3.8e-06" in check.message


def test_exercise0_catches_unsummed_tokens_one_symbol_base_ten_and_blanks():
    good = token_logprobs(UNIFORM, RESPONSES).sum(-1)
    failed(cp.exercise0(token_logprobs(UNIFORM, RESPONSES), (1 / 8) ** 6), "one number per token", "sum over the last axis")
    failed(cp.exercise0(good, 1 / 8), "chance of one symbol")
    failed(cp.exercise0(good / math.log(10), (1 / 8) ** 6), "base-10")
    failed(cp.exercise0(None, None), "still None")


# --- Exercise 1 ---------------------------------------------------------------------------------------------------

def test_exercise1_passes_the_seed_code_within_its_standard_errors():
    check = cp.exercise1(returns_to_go, reinforce_loss)
    assert check.passed, check
    assert "standard errors" in check.message


@pytest.mark.parametrize("wrong,phrases", [
    (lambda r: r.cumsum(-1), ("wrong direction",)),                          # forgot the flips
    (lambda r: r.sum(-1, keepdim=True).expand_as(r).clone(), ("whole response's reward",)),
    (lambda r: r.flip(0).cumsum(0).flip(0), ("across the samples",)),         # flipped the wrong axis
    (lambda r: r, ("unchanged",)),
    (stub, ("still the stub",)),
], ids=["left-to-right", "total", "sample-axis", "no-sum", "stub"])
def test_exercise1_catches_wrong_returns(wrong, phrases):
    failed(cp.exercise1(wrong, reinforce_loss), *phrases)


@pytest.mark.parametrize("wrong,phrases", [
    (lambda l, r, b=0.0: ((r - b).detach() * l).sum(-1).mean(), ("wrong sign",)),
    (lambda l, r, b=0.0: -((r - b).detach() * l).sum(), ("N = 4 times too large",)),
    (lambda l, r, b=0.0: -((r - b).detach() * l).mean(), ("T = 3 times too small",)),
    (lambda l, r, b=0.0: -(r.detach() * l).sum(-1).mean(), ("ignores its baseline",)),
    (lambda l, r, b=0.0: -((r - b) * l).sum(-1).mean(), ("differentiates through the returns", ".detach()")),
    (lambda l, r, b=0.0: -((r - b).detach() * l).sum(-1), ("one number",)),
], ids=["sign", "sum-over-samples", "mean-over-tokens", "baseline-ignored", "no-detach", "not-a-scalar"])
def test_exercise1_catches_wrong_losses(wrong, phrases):
    failed(cp.exercise1(returns_to_go, wrong), *phrases)


def test_the_training_waits_for_its_checkpoint(capsys):
    assert cp.train_toy(returns_to_go, reinforce_loss, ready=[cp.Checkpoint(1, False, "no")]) is None
    assert "runs once checkpoint 1 passes" in capsys.readouterr().out
    cp.variance_table(loo_baseline, returns_to_go, ready=[cp.Checkpoint(1, False, ""), cp.Checkpoint(2, False, "")])
    assert "runs once checkpoints 1 and 2 pass" in capsys.readouterr().out


def test_the_toy_training_with_the_seed_code_raises_J_from_one_eighth(capsys):
    J = cp.train_toy(returns_to_go, reinforce_loss, ready=[cp.Checkpoint(1, True, "")], steps=40)
    assert J[0] == pytest.approx(1 / 8) and J[-1] > 0.5
    assert "step 0: J = 0.125" in capsys.readouterr().out


# --- Exercise 2 ---------------------------------------------------------------------------------------------------

def test_exercise2_passes_the_seed_code():
    check = cp.exercise2(loo_baseline)
    assert check.passed, check
    assert "(1 - 1/16) = 0.9375" in check.message


@pytest.mark.parametrize("wrong,phrases", [
    (lambda r: r.mean(0, keepdim=True).expand_as(r), ("includes the reply's own reward",)),
    (lambda r: r.mean(0, keepdim=True), ("includes the reply's own reward",)),
    (lambda r: (r.sum(0, keepdim=True) - r) / r.shape[0], ("divide by N - 1",)),
    (lambda r: (r.sum(-1, keepdim=True) - r) / (r.shape[-1] - 1), ("along the T positions",)),
    (lambda r: torch.zeros_like(r), ("(1/3, 1, 4/3, 4/3)",)),
], ids=["batch-mean", "batch-mean-row", "over-N", "token-axis", "zero"])
def test_exercise2_catches_wrong_baselines(wrong, phrases):
    failed(cp.exercise2(wrong), *phrases)


def test_the_variance_table_ranks_token_loo_none_against_the_exact_variances(capsys):
    ready = [cp.Checkpoint(1, True, ""), cp.Checkpoint(2, True, "")]
    measured = cp.variance_table(loo_baseline, returns_to_go, ["token", "loo", "none"], ready=ready, batches=200)
    out = capsys.readouterr().out
    assert "token, loo, none" in out and "was right" in out
    assert set(measured) == {"none", "loo", "token"}
    assert measured["loo"] < measured["none"] and measured["token"] < measured["none"]


# --- Exercise 3 ---------------------------------------------------------------------------------------------------

def test_exercise3_passes_equation_12_against_the_labels_of_the_pairs_file(pairs):
    check = cp.exercise3(bt_prob, pairs)
    assert check.passed, check


@pytest.mark.parametrize("wrong,phrases", [
    (lambda a, b, t: bt_prob(b, a, t), ("chance that b is preferred",)),
    (lambda a, b, t: 1 / (1 + np.exp(-(np.asarray(a) - b) * t)), ("multiplies the gap by tau_label",)),
    (lambda a, b, t: bt_prob(a, b, 1.0), ("ignores tau_label",)),
    (lambda a, b, t: (np.asarray(a) - b) / t, ("outside [0, 1]",)),
], ids=["reversed", "times-tau", "no-tau", "no-sigmoid"])
def test_exercise3_catches_wrong_raters(pairs, wrong, phrases):
    failed(cp.exercise3(wrong, pairs), *phrases)


def test_exercise3_catches_labels_from_a_noisier_rater_than_the_file_says(pairs):
    """The frequency check has the power to see a rater at tau_label = 1 in a file that claims 0.5."""
    noisier = replace(pairs, label=relabel(pairs, 1.0, 0).label)
    failed(cp.exercise3(bt_prob, noisier), "too far from your probability")


def test_the_binomial_tail_matches_a_direct_sum():
    n, p = 7, 0.3
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    for k in range(n + 1):
        assert cp.binomial_two_sided(k, n, p) == pytest.approx(min(1.0, 2 * min(sum(pmf[: k + 1]), sum(pmf[k:]))))


# --- Exercise 4 ---------------------------------------------------------------------------------------------------

def test_exercise4_passes_the_seed_loss():
    assert cp.exercise4(bt_loss).passed


@pytest.mark.parametrize("wrong,phrases", [
    (lambda w, l: -F.logsigmoid(l - w).mean(), ("swaps winner and loser",)),
    (lambda w, l: F.logsigmoid(w - l).mean(), ("is negative",)),
    (lambda w, l: -F.logsigmoid(w - l).sum(), ("sums over the pairs",)),
    (lambda w, l: -torch.log(torch.sigmoid(w - l)).mean(), ("underflows", "F.logsigmoid")),
    (lambda w, l: -F.logsigmoid(w - l), ("one number",)),
], ids=["swapped", "no-minus", "sum", "log-of-sigmoid", "not-a-scalar"])
def test_exercise4_catches_wrong_losses(wrong, phrases):
    failed(cp.exercise4(wrong), *phrases)


# --- Exercise 5 and the save ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_model(pairs):
    """A reward model trained for a few steps: enough to have held-out scores to normalise and a file to save."""
    return train_reward_model(pairs, RewardModelSettings(steps=3, d_model=16, heads=2, layers=1, eval_every=3))


def test_exercise5_without_a_model_checks_the_hand_example_and_saves_nothing(pairs, tmp_path):
    check = cp.exercise5(fit_normalizer, None, pairs, folder=tmp_path)
    assert check.passed and "wait for" in check.message and not list(tmp_path.iterdir())


def test_exercise5_normalises_the_heldout_scores_and_saves_a_model_that_reads_back(pairs, small_model, tmp_path, capsys):
    check = cp.exercise5(fit_normalizer, small_model, pairs, folder=tmp_path)
    assert check.passed, check
    (path,) = tmp_path.glob("*.pt")
    back = load_reward_model(path)
    scores = cp.heldout_scores(small_model, pairs)
    assert (back.normalizer.mu, back.normalizer.sigma) == pytest.approx((scores.mean(), scores.std()))
    assert f"--reward reward-model:{path}" in capsys.readouterr().out


def test_exercise5_accepts_the_sample_standard_deviation(pairs):
    assert cp.exercise5(lambda raw: (np.mean(raw), np.std(raw, ddof=1)), None, pairs).passed


@pytest.mark.parametrize("wrong,phrases", [
    (lambda raw: (np.std(raw), np.mean(raw)), ("returns (sigma, mu)",)),
    (lambda raw: (np.mean(raw), np.var(raw)), ("is the variance",)),
    (lambda raw: np.mean(raw), ("two numbers",)),
    (lambda raw: (np.median(raw) + 1, np.ptp(raw)), ("expected (2.500",)),
], ids=["swapped", "variance", "one-number", "wrong-statistics"])
def test_exercise5_catches_wrong_normalisers(pairs, wrong, phrases, tmp_path):
    failed(cp.exercise5(wrong, None, pairs, folder=tmp_path), *phrases)


def test_exercise5_catches_a_normaliser_fitted_on_the_hand_example_only(pairs, small_model, tmp_path):
    failed(cp.exercise5(lambda raw: (2.5, float(np.std([1.0, 2.0, 3.0, 4.0]))), small_model, pairs, folder=tmp_path),
           "held-out scores", "not 0 and 1")
    assert not list(tmp_path.iterdir())


def test_a_checkpoint_never_raises_and_shows_as_a_coloured_box():
    check = cp.exercise4(lambda w, l: 1 / 0)
    failed(check, "ZeroDivisionError")
    assert str(check).startswith("Checkpoint 4 failed: ") and "✘" in check._repr_html_()
    assert "✔" in cp.exercise4(bt_loss)._repr_html_()
    failed(cp.exercise4("not yet"), "not a function")
