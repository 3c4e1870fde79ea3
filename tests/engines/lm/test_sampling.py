"""Seed 000 section 6.11's sampling and the per-token quantities of a reply, against plain loops on tiny models."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.lm.sampling import (
    BANNED_LOGIT,
    ban,
    exact_kl,
    per_length,
    reply_logits,
    sample_replies,
    token_entropy,
    token_logp,
)
from tests.engines.lm.tiny_models import EOS, huge_eos_gpt2, slow_logp, tiny_gpt2

# ----------------------------------------------------------------------------- the end-of-text ban


def test_eos_is_never_sampled_even_when_its_logit_is_huge():
    model = huge_eos_gpt2()
    x = torch.randint(4, 10, (64, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert model(x).logits[:, -1].argmax(-1).eq(EOS).all()  # left alone, EOS wins everywhere
    y = sample_replies(model, x, 24, EOS, torch.Generator().manual_seed(2))
    assert y.shape == (64, 24) and not y.eq(EOS).any()
    y_free = sample_replies(model, x, 24, None, torch.Generator().manual_seed(2))
    assert y_free.eq(EOS).all()  # without the ban every token would be EOS


def test_scoring_renormalises_without_eos():
    model = huge_eos_gpt2()
    x = torch.randint(4, 10, (4, 5), generator=torch.Generator().manual_seed(3))
    y = sample_replies(model, x, 6, EOS, torch.Generator().manual_seed(4)).clone()  # an ordinary tensor, as gather's index under gradient
    seq = torch.cat([x, y], 1)
    lg = reply_logits(model, x, y, EOS)  # (4, 6, V)
    assert torch.all(lg[..., EOS] == BANNED_LOGIT)
    np.testing.assert_allclose(token_logp(lg, seq[:, 5:]).detach(), slow_logp(model, seq, 5), atol=1e-4)
    probs = F.softmax(lg.detach(), -1)
    assert torch.all(probs[..., EOS] == 0.0)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)


def test_shared_prompt_pass_gives_the_full_forward_logits_and_gradient():
    """K replies sharing one pass of their prompt: the same logits and the same loss gradient as each
    row's whole sequence through the model on its own (seed 000 section 6.11's `token_logits`)."""
    K, P, T = 3, 5, 6
    g = torch.Generator().manual_seed(5)
    x = torch.randint(4, 12, (2, P), generator=g)  # (N_p, P)
    shared, whole = tiny_gpt2(seed=4), tiny_gpt2(seed=4)
    y = sample_replies(shared, x, T, EOS, g, K).clone()  # (N_p K, T)
    assert y.shape == (2 * K, T)
    A = torch.randn(2 * K, T, generator=g)  # any per-token weights

    lg = reply_logits(shared, x, y, EOS)  # (N, T, V)
    (-(A * token_logp(lg, y)).mean()).backward()
    seq = torch.cat([x.repeat_interleave(K, 0), y], 1)  # (N, P + T): every row whole
    lg_whole = ban(whole(seq).logits[:, P - 1 : -1].float(), EOS)
    (-(A * token_logp(lg_whole, y)).mean()).backward()

    np.testing.assert_allclose(lg.detach(), lg_whole.detach(), atol=1e-5)
    np.testing.assert_allclose(token_logp(lg, y).detach(), slow_logp(shared, seq, P), atol=1e-4)
    for (name, a), b in zip(shared.named_parameters(), whole.parameters()):
        np.testing.assert_allclose(a.grad, b.grad, atol=1e-6, err_msg=name)


def test_ban_sets_rather_than_adds():
    logits = torch.tensor([[0.0, 1.0, 2.0, 1e12]])
    assert ban(logits, EOS)[0, EOS] == BANNED_LOGIT
    assert torch.equal(ban(logits, None), logits)


# ----------------------------------------------------------------------------- KL and entropy


def random_logits(seed, N=3, T=4, V=7):
    g = torch.Generator().manual_seed(seed)
    return ban(3 * torch.randn(N, T, V, generator=g, dtype=torch.float64), EOS)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_exact_kl_and_entropy_against_brute_force(seed):
    lg, ref_lg = random_logits(seed), random_logits(seed + 1)
    N, T, V = lg.shape
    kl, H = exact_kl(lg, ref_lg), token_entropy(lg)
    for i in range(N):
        total = 0.0
        for t in range(T):
            z = sum(math.exp(lg[i, t, v]) for v in range(V) if v != EOS)
            zr = sum(math.exp(ref_lg[i, t, v]) for v in range(V) if v != EOS)
            h = 0.0
            for v in range(V):
                if v == EOS:
                    continue
                p, q = math.exp(lg[i, t, v]) / z, math.exp(ref_lg[i, t, v]) / zr
                total += p * math.log(p / q)
                h -= p * math.log(p)
            assert float(H[i, t]) == pytest.approx(h, abs=1e-9)
        assert float(kl[i]) == pytest.approx(total, abs=1e-9)
    assert torch.all(kl >= 0)
    assert torch.allclose(exact_kl(lg, lg), torch.zeros(N, dtype=lg.dtype))


def test_k1_estimate_agrees_with_exact_kl():
    """Seed 000 section 6.12: the mean log-ratio of sampled tokens estimates the exact KL (within 4 standard errors)."""
    lg, ref_lg = random_logits(5, N=1, T=1), random_logits(6, N=1, T=1)
    n = 20_000
    tokens = torch.multinomial(F.softmax(lg[0, 0], -1), n, replacement=True, generator=torch.Generator().manual_seed(7))
    log_ratio = F.log_softmax(lg[0, 0], -1)[tokens] - F.log_softmax(ref_lg[0, 0], -1)[tokens]  # (n,)
    se = float(log_ratio.std()) / math.sqrt(n)
    assert float(log_ratio.mean()) == pytest.approx(float(exact_kl(lg, ref_lg)[0]), abs=4 * se)


# ----------------------------------------------------------------------------- prompts of many lengths


def test_per_length_matches_one_prompt_at_a_time():
    """Reply logits of prompts with 2, 3 and 5 tokens, grouped by length, equal a forward pass per row."""
    policy = tiny_gpt2(seed=3)
    lengths = torch.tensor([3, 5, 2, 3, 5])
    g = torch.Generator().manual_seed(0)
    x = torch.randint(4, 12, (5, 5), generator=g)  # right-padded: row i uses its first lengths[i] ids
    y = torch.randint(4, 12, (5, 4), generator=g)
    with torch.no_grad():
        grouped = per_length(lambda xp, yp: reply_logits(policy, xp, yp, EOS), lengths, x, y)
        rows = [reply_logits(policy, x[i : i + 1, : lengths[i]], y[i : i + 1], EOS) for i in range(5)]
    np.testing.assert_allclose(grouped, torch.cat(rows), atol=1e-5)
    one = per_length(lambda xp: xp.sum(1), torch.full((5,), 5), x)
    assert torch.equal(one, x.sum(1))  # one length: the plain call
