"""Seed 000 sections 6.11 and 6.12: the REINFORCE step on a language model, piece by piece.

Tiny randomly initialised GPT-2 models (a handful of parameters, vocabularies of 7 to 12
tokens) stand in for GPT-2, so every quantity can be checked against a plain loop.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.lm_reinforce import (
    BANNED_LOGIT,
    ban,
    distinct_n,
    exact_kl,
    loo_advantages,
    reply_logits,
    sample_replies,
    token_entropy,
    token_logp,
)
from engines.lm_results import EvalResult, worked_example
from engines.lm_settings import SEED_LR, LMSettings, default_lr
from engines.policy_gradient import shaped_rewards

EOS = 3


def tiny_gpt2(vocab=12, seed=0, width=8):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_positions=40, n_embd=width, n_layer=1, n_head=2, bos_token_id=EOS, eos_token_id=EOS)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # larger weights than the default init, so the policy is far from uniform
        for p in model.parameters():
            p.mul_(20.0 if p.dim() > 1 else 1.0)
    return model


def slow_logp(model, seq, P):
    """log pi(y_t | s_t) by one forward pass per reply token, renormalised over the vocabulary without EOS."""
    N, L = seq.shape
    keep = [v for v in range(model.config.vocab_size) if v != EOS]
    out = torch.zeros(N, L - P)
    with torch.no_grad():
        for t in range(P, L):
            logits = model(seq[:, :t]).logits[:, -1][:, keep]  # drop the EOS column outright
            logp = F.log_softmax(logits.double(), -1)
            for i in range(N):
                out[i, t - P] = logp[i, keep.index(int(seq[i, t]))]
    return out


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


# ----------------------------------------------------------------------------- the end-of-text ban


def huge_eos_gpt2(vocab=10):
    """A GPT-2 whose every position puts a logit of about 800 on EOS and about 0 elsewhere."""
    model = tiny_gpt2(vocab=vocab)
    with torch.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.fill_(1.0)  # every final hidden state is the all-ones vector
        model.transformer.wte.weight.mul_(0.01)
        model.transformer.wte.weight[EOS] = 100.0  # tied head: logit(EOS) = 100 * width
    return model


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


# ----------------------------------------------------------------------------- baseline, KL, entropy


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 5), st.integers(1, 6), st.integers(0, 10_000))
def test_leave_one_out_against_a_loop(prompts, K, T, seed):
    r = torch.from_numpy(np.random.default_rng(seed).normal(size=(prompts * K, T)))
    G, A = loo_advantages(r, K)
    for i in range(prompts * K):
        first = (i // K) * K
        Gi = [sum(float(r[i, u]) for u in range(t, T)) for t in range(T)]
        others = [j for j in range(first, first + K) if j != i]
        for t in range(T):
            b = sum(sum(float(r[j, u]) for u in range(t, T)) for j in others) / (K - 1)
            assert float(G[i, t]) == pytest.approx(Gi[t], abs=1e-9)
            assert float(A[i, t]) == pytest.approx(Gi[t] - b, abs=1e-9)


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


# ----------------------------------------------------------------------------- prompts of many lengths, the gold score


def test_per_length_matches_one_prompt_at_a_time():
    """Reply logits of prompts with 2, 3 and 5 tokens, grouped by length, equal a forward pass per row."""
    from engines.lm_reinforce import per_length

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


def test_feeling_prompts_are_split_once():
    from engines.lm_reinforce import FEELING_HELDOUT, feeling_prompts
    from engines.preferences import load_prompts

    train, held = feeling_prompts("train"), feeling_prompts("heldout")
    assert len(held) == FEELING_HELDOUT and len(train) == len(load_prompts()) - FEELING_HELDOUT
    assert set(train) | set(held) == set(load_prompts()) and not set(train) & set(held)
    assert feeling_prompts("heldout") == held  # the same split every time
    with pytest.raises(ValueError):
        LMSettings(prompt_set="poems")


class Length:
    """A reward without a gold score: R = words in the reply."""

    name = "length"

    def score(self, prompts, replies):
        R = np.array([float(len(y.split())) for y in replies])
        return R, 1 / (1 + np.exp(-R))


class GoldLength(Length):
    """The same reward with a gold score beside it: g = characters in the reply."""

    def gold(self, prompts, replies):
        return np.array([float(len(y)) for y in replies])


def test_feelings_run_carries_the_gold_score():
    """The lab prompts whole (10 to 21 tokens each); StepResult and EvalResult carry the mean g of their replies."""
    from engines.lm_reinforce import feeling_prompts, train_lm

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
