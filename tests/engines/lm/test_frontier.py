"""The sampled reward-KL frontier (seed 000 section 6.12): against the exact one, its bounds, and the sampler."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from engines.kl_optimal import ReplySpaceSettings, enumerate_replies, frontier_reward_at, optimal_policy, sampled_frontier
from engines.lm.frontier import LMFrontier, LMFrontierSettings, lm_frontier
from engines.lm.review_corpus import bundled_prompts
from engines.lm.sampling import prompt_ids, sample_per_prompt
from tests.engines.lm.tiny_models import EOS, Length, huge_eos_gpt2, tiny_gpt2

BETAS = np.geomspace(1e-2, 1e2, 41)
reward_arrays = arrays(float, st.tuples(st.integers(1, 4), st.integers(2, 12)), elements=st.floats(-7, 7))


def as_samples(space, m):
    """The reply space written out as m samples: each reply as many times as m pi_ref(y) (a whole number here)."""
    counts = np.exp(space.ref_logp) * m
    assert np.allclose(counts, np.round(counts)) and round(counts.sum()) == m
    return np.repeat(space.r, np.round(counts).astype(int))  # (m,)


def test_samples_that_are_the_reply_space_give_the_exact_frontier():
    # Reference probabilities in sixteenths: 16 samples hold every two-word reply in its exact proportion.
    spaces = [enumerate_replies(ReplySpaceSettings(words=("good", "plot", "dull"), valence=v, reference=(0.25, 0.5, 0.25), length=2))
              for v in ((1.0, 0.0, -1.0), (0.3, 0.9, -0.4))]
    rewards = np.stack([as_samples(space, 16) for space in spaces])  # (2, 16): two prompts
    sampled = sampled_frontier(rewards, BETAS)
    exact = [optimal_policy(space, BETAS) for space in spaces]
    np.testing.assert_allclose(sampled.kl, np.mean([e.kl for e in exact], axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sampled.reward, np.mean([e.reward for e in exact], axis=0), rtol=1e-9, atol=1e-12)
    assert sampled.ceiling == pytest.approx(math.log(16))


def test_each_sample_weighted_by_a_loop():
    rewards = np.array([[0.5, -1.0, 2.0, 2.0], [0.0, 0.1, 0.2, 0.3]])
    beta = 0.7
    kl = reward = 0.0
    for row in rewards:
        w = [math.exp(r / beta) for r in row]
        w = [x / sum(w) for x in w]
        kl += sum(x * math.log(len(row) * x) for x in w) / len(rewards)
        reward += sum(x * r for x, r in zip(w, row)) / len(rewards)
    f = sampled_frontier(rewards, beta)
    assert f.kl[0] == pytest.approx(kl, rel=1e-12) and f.reward[0] == pytest.approx(reward, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(reward_arrays)
def test_kl_stays_between_zero_and_log_m(rewards):
    f = sampled_frontier(rewards, np.geomspace(1e-4, 1e4, 61))
    assert np.all(f.kl >= 0) and np.all(f.kl <= math.log(rewards.shape[1]) + 1e-9)
    assert np.all(f.reward <= f.best_reward + 1e-9) and np.all(f.reward >= f.reference_reward - 1e-9)


@settings(max_examples=40, deadline=None)
@given(reward_arrays)
def test_the_frontier_climbs_as_beta_falls(rewards):
    f = sampled_frontier(rewards, np.geomspace(1e3, 1e-3, 61))  # falling beta
    assert np.all(np.diff(f.kl) >= -1e-9) and np.all(np.diff(f.reward) >= -1e-9)


def test_the_two_ends_of_the_frontier():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(5, 32))
    f = sampled_frontier(rewards, [1e4, 1e-4])
    assert f.kl[0] < 1e-6 and f.reward[0] == pytest.approx(rewards.mean(), abs=1e-4)  # large beta: the reference
    assert f.reward[1] == pytest.approx(rewards.max(1).mean(), abs=1e-9)  # small beta: the best sample of each prompt
    assert f.kl[1] == pytest.approx(math.log(32), abs=1e-9) == f.ceiling  # one sample of 32 kept: the most KL there is
    tied = np.array([[1.0, 1.0, 0.0, 0.0]])  # two best samples share pi*: log(4/2)
    assert sampled_frontier(tied, 1e-4).kl[0] == pytest.approx(math.log(2), abs=1e-9)


def test_reading_the_frontier_at_a_kl():
    f = sampled_frontier(np.random.default_rng(1).normal(size=(3, 16)), BETAS)
    np.testing.assert_allclose(frontier_reward_at(f, f.kl), f.reward, atol=1e-12)
    assert np.isnan(frontier_reward_at(f, f.ceiling + 0.1))  # beyond the frontier's reach


@pytest.mark.parametrize("bad", [np.zeros((0, 4)), np.zeros(4), np.array([[0.0, np.nan]])])
def test_bad_rewards_are_refused(bad):
    with pytest.raises(ValueError):
        sampled_frontier(bad, 1.0)


def test_the_sampler_writes_t_tokens_without_end_of_text():
    model = huge_eos_gpt2()  # left alone, every token would be end-of-text
    x = torch.randint(4, 10, (3, 5), generator=torch.Generator().manual_seed(0))
    y = sample_per_prompt(model, x, torch.full((3,), 5), 8, 6, EOS, torch.Generator().manual_seed(1))
    assert y.shape == (3 * 8, 6) and not y.eq(EOS).any()


def test_the_sampler_groups_the_replies_prompt_by_prompt():
    model = tiny_gpt2(seed=4)
    x = torch.randint(4, 12, (2, 5), generator=torch.Generator().manual_seed(0))
    y = sample_per_prompt(model, x, torch.full((2,), 5), 300, 1, EOS, torch.Generator().manual_seed(1))  # (600, 1)
    with torch.no_grad():
        logits = model(x).logits[:, -1]
        logits[:, EOS] = -math.inf
        probs = torch.softmax(logits, -1)  # (2, V): the first reply token's law for each prompt
    for i in range(2):
        counts = torch.bincount(y[300 * i : 300 * (i + 1), 0], minlength=probs.shape[1]).double()
        expected = 300 * probs[i].double()
        keep = expected > 0
        chi2 = float((((counts - expected) ** 2)[keep] / expected[keep]).sum())
        assert chi2 < 40, f"prompt {i}: replies do not follow its own next-token distribution (chi2 {chi2:.1f})"


def test_the_embedded_model_frontier_streams_its_prompts():
    s = LMFrontierSettings(prompts=3, samples=4, T=5, device="cpu")
    steps = list(LMFrontier(s, reward=Length()).steps())
    assert [len(p.prompts) for p in steps] == [3]  # 12 replies: one batch
    last = steps[-1]
    tokenizer = LMFrontier(s, reward=Length()).tokenizer
    _, texts = prompt_ids(tokenizer, bundled_prompts("heldout"), s.prompt_tokens)
    assert list(last.prompts) == texts[:3] and last.rewards.shape == (3, 4)
    assert [len(r.split()) for r in last.best_replies] == list(last.rewards.max(1))
    again = lm_frontier(s, reward=Length())
    np.testing.assert_array_equal(again.rewards, last.rewards)  # the seed fixes the samples


def test_many_prompts_arrive_in_batches():
    s = LMFrontierSettings(prompts=5, samples=128, T=2, device="cpu")  # 2 prompts per batch of 256 replies
    steps = list(LMFrontier(s, reward=Length()).steps())
    assert [len(p.prompts) for p in steps] == [2, 4, 5] and steps[-1].rewards.shape == (5, 128)
    np.testing.assert_array_equal(steps[1].rewards, steps[-1].rewards[:4])


@pytest.mark.parametrize("bad", [dict(prompts=0), dict(prompts=65), dict(samples=1), dict(T=0), dict(prompt_set="x"),
                                 dict(seed=-1), dict(device="tpu"), dict(model=" "), dict(samples=2.5)])
def test_invalid_settings_are_refused(bad):
    with pytest.raises(ValueError):
        LMFrontierSettings(**bad)
