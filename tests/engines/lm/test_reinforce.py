"""Seed 000 sections 6.11 and 6.12: the REINFORCE step on a language model, piece by piece (tests.engines.lm.tiny_models)."""

import threading
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.lm.reinforce import LMRun, distinct_n, reply_advantages
from engines.lm.results import EvalResult, StepResult, worked_example
from engines.lm.sampling import reply_logits, sample_replies, token_logp
from engines.lm.settings import SEED_LR, LMSettings, default_lr
from engines.policy_gradient import shaped_rewards
from tests.engines.lm.tiny_models import EOS, GoldLength, Length, slow_logp, tiny_gpt2

# ----------------------------------------------------------------------------- the worked example


def test_worked_example_identities_on_a_tiny_model():
    """A reply's T log-ratios sum to its k1 estimate; r_t sums to R - beta * sum; G_0 is the shaped reward."""
    policy, ref = tiny_gpt2(seed=1), tiny_gpt2(seed=2)
    P, T, beta, R = 8, 24, 0.05, 5.246
    g = torch.Generator().manual_seed(0)
    x = torch.randint(4, 12, (2, P), generator=g)
    y = sample_replies(policy, x, T, EOS, g)
    seq = torch.cat([x, y], 1)  # sampled under inference mode; the concatenation is an ordinary tensor
    with torch.no_grad():
        logp = token_logp(reply_logits(policy, x, y, EOS), y)
        ref_logp = token_logp(reply_logits(ref, x, y, EOS), y)
    np.testing.assert_allclose(logp, slow_logp(policy, seq, P), atol=1e-4)
    np.testing.assert_allclose(ref_logp, slow_logp(ref, seq, P), atol=1e-4)

    k1 = float((slow_logp(policy, seq, P)[0] - slow_logp(ref, seq, P)[0]).sum())
    ex = worked_example(
        EvalResult(0, 0, 0, 0, 0, 0, 0, 0, 0, beta, ("x", "x"), ("y", "y"), (("t",) * T,) * 2,
                   logp.numpy(), ref_logp.numpy(), np.array([R, 0.0])), 0)
    assert ex.log_ratio.sum() == pytest.approx(k1, abs=1e-3)
    assert ex.r.sum() == pytest.approx(R - beta * k1, abs=1e-3)
    assert ex.G[0] == pytest.approx(R - beta * k1, abs=1e-3)
    assert ex.G[-1] == pytest.approx(ex.r[-1]) and ex.r[-1] == pytest.approx(R - beta * ex.log_ratio[-1])
    np.testing.assert_allclose(ex.r[:-1], -beta * ex.log_ratio[:-1], atol=1e-6)


def test_seed_worked_example_rows():
    """Seed 000 section 6.12's rows: r_t = -0.05 (log pi - log ref), plus R = +5.246 at the last token."""
    rows = {0: (-1.318, -1.256, +0.003), 1: (-2.378, -4.295, -0.096), 5: (-4.295, -5.872, -0.079),
            8: (-5.204, -10.049, -0.242), 16: (-5.414, -3.723, +0.085), 23: (-0.141, -0.385, +5.233)}
    logp, ref_logp = np.zeros((1, 24)), np.zeros((1, 24))
    for t, (lp, lr, _) in rows.items():
        logp[0, t], ref_logp[0, t] = lp, lr
    r = shaped_rewards(logp, ref_logp, np.array([5.246]), 0.05)
    for t, (_, _, r_t) in rows.items():
        # the seed printed log pi, log ref, R and r_t to 3 decimals: each rounding is at most 0.0005
        slack = 0.0005 + 0.05 * 2 * 0.0005 + (0.0005 if t == 23 else 0.0)
        assert r[0, t] == pytest.approx(r_t, abs=slack + 1e-9)
    assert 5.246 - 0.05 * 13.638 == pytest.approx(4.564, abs=5e-4)  # the seed's G_0 line


# ----------------------------------------------------------------------------- the leave-one-out baseline


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 5), st.integers(1, 6), st.integers(0, 10_000))
def test_leave_one_out_against_a_loop(prompts, K, T, seed):
    r = torch.from_numpy(np.random.default_rng(seed).normal(size=(prompts * K, T)))
    G, A = reply_advantages(r, K)
    for i in range(prompts * K):
        first = (i // K) * K
        Gi = [sum(float(r[i, u]) for u in range(t, T)) for t in range(T)]
        others = [j for j in range(first, first + K) if j != i]
        for t in range(T):
            b = sum(sum(float(r[j, u]) for u in range(t, T)) for j in others) / (K - 1)
            assert float(G[i, t]) == pytest.approx(Gi[t], abs=1e-9)
            assert float(A[i, t]) == pytest.approx(Gi[t] - b, abs=1e-9)


@pytest.mark.parametrize("advantage", ["mean", "grpo", "none"])
def test_the_other_advantages_against_a_loop(advantage):
    """Position by position over the K replies to one prompt: G - mean(G), (G - mean)/(sample sd + 1e-4), or G."""
    prompts, K, T = 3, 4, 5
    r = torch.from_numpy(np.random.default_rng(7).normal(size=(prompts * K, T)))
    G, A = reply_advantages(r, K, advantage)
    for first in range(0, prompts * K, K):
        for t in range(T):
            group = [float(G[j, t]) for j in range(first, first + K)]
            mean = sum(group) / K
            sd = (sum((g - mean) ** 2 for g in group) / (K - 1)) ** 0.5
            for j, g in zip(range(first, first + K), group):
                expected = {"mean": g - mean, "grpo": (g - mean) / (sd + 1e-4), "none": g}[advantage]
                assert float(A[j, t]) == pytest.approx(expected, abs=1e-9)


def test_an_unknown_advantage_is_refused_in_one_sentence():
    with pytest.raises(ValueError, match="advantage must be one of loo, mean, grpo, none, got 'ppo'."):
        LMSettings(advantage="ppo")


# ----------------------------------------------------------------------------- settings and small helpers


def test_distinct_n():
    texts = ["the film is good", "The film is bad"]
    assert distinct_n(texts, 1) == pytest.approx(5 / 8)
    assert distinct_n(texts, 2) == pytest.approx(4 / 6)
    assert distinct_n(["superb superb superb superb"], 1) == pytest.approx(1 / 4)
    assert distinct_n([], 1) == 0.0


def test_settings_defaults_and_learning_rate():
    s = LMSettings()
    assert (s.prompts, s.replies, s.T, s.prompt_tokens, s.steps, s.clip) == (16, 4, 24, 8, 300, 1.0)
    assert s.learning_rate == default_lr("embedded")
    assert LMSettings(model="gpt2").learning_rate == SEED_LR == 2e-5
    assert LMSettings(lr=1e-3).learning_rate == 1e-3


@pytest.mark.parametrize(
    "bad",
    [dict(beta=-0.1), dict(beta=float("nan")), dict(lr=0.0), dict(steps=0), dict(replies=1), dict(T=0),
     dict(prompt_tokens=0), dict(clip=0.0), dict(seed=-1), dict(device="tpu"), dict(eval_every=0),
     dict(eval_prompts=65), dict(eval_replies=0), dict(keep_samples=17), dict(model="")],
)
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        LMSettings(**bad)


# ----------------------------------------------------------------------------- the gold score beside the reward


def test_feelings_run_carries_the_gold_score():
    """The lab prompts whole (10 to 21 tokens each); StepResult and EvalResult carry the mean g of their replies."""
    from engines.lm.prompts import feeling_prompts
    from engines.lm.reinforce import train_lm

    s = LMSettings(prompt_set="feelings", steps=2, prompts=3, replies=2, T=4, eval_every=2, eval_prompts=3,
                   eval_replies=1, keep_samples=3, device="cpu")
    steps, evals = train_lm(s, reward=GoldLength())
    assert {x.prompt for r in steps for x in r.samples} <= set(feeling_prompts("train"))
    assert list(evals[0].prompts) == feeling_prompts("heldout")[:3]
    for e in evals:
        assert e.gold == pytest.approx(GoldLength().gold(e.prompts, e.replies).mean())
    assert [r.step for r in steps] == [1, 2] and all(r.gold > 0 for r in steps)
    reviews = LMSettings(steps=1, prompts=2, replies=2, T=4, eval_prompts=2, eval_replies=1, keep_samples=0, device="cpu")
    steps, evals = train_lm(reviews, reward=Length())
    assert steps[0].gold is None and evals[0].gold is None


# ----------------------------------------------------------------------------- a run is a function of its settings


def results_without_timing(settings: LMSettings) -> list:
    """Every result of a run of the embedded model, its wall-clock step time left out."""
    return [replace(r, step_time=0.0) if isinstance(r, StepResult) else r for r in LMRun(settings).steps()]


def test_two_runs_with_the_same_settings_give_the_same_numbers_and_replies_even_side_by_side():
    """What lets a class share one computation per distinct run (app/jobs/shared_runs.py): on the CPU with one torch
    thread, a run's metrics, replies and evaluations are a function of its settings, also when two runs step at the
    same time in two threads of one process, as a worker runs them. Another seed gives other numbers."""
    settings = LMSettings(steps=3, prompts=2, replies=2, T=6, eval_every=2, eval_prompts=2, eval_replies=2, keep_samples=2,
                          device="cpu")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = results_without_timing(settings)
        side_by_side: list = [None, None]
        workers = [threading.Thread(target=lambda i=i: side_by_side.__setitem__(i, results_without_timing(settings)))
                   for i in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        other_seed = results_without_timing(replace(settings, seed=1))
    finally:
        torch.set_num_threads(threads)
    assert len(alone) == 3 + 3  # three steps, evaluations at steps 0, 2 and 3
    for run in side_by_side:
        assert len(run) == len(alone)
        for a, b in zip(alone, run):
            assert type(a) is type(b)
            for field in a.__dataclass_fields__:
                x, y = getattr(a, field), getattr(b, field)
                assert np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y, field
    assert [r.reward for r in other_seed] != [r.reward for r in alone]
