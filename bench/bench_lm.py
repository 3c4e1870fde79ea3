"""Timings of the live REINFORCE step (seed 000 section 6.11): the engine against the seed's own loop.

    python -m bench.bench_lm            # embedded model on CPU, engine and seed's loop interleaved
    python -m bench.bench_lm --cuda     # also GPT-2 small's architecture (random weights) on CUDA, 300 steps

The reference is the chapter's code as printed: `sample` with past_key_values, then
`token_logits` forward passes for the policy (with gradient) and the reference (no_grad),
log_softmax over the whole vocabulary, the same reward, the same Adam and clipping. Both
train their own copy of the same starting model on the same prompts, one step each in turn,
so the machine's load falls on both alike.

The engine does the same three passes with less work: each prompt goes through a model once
and its key-value cache serves its K replies (the seed runs it K times in each pass), the last
reply token is never fed forward, and log pi is gathered against one logsumexp instead of a
whole (N, T, V) log_softmax. The gradient is the same (tests/engines/lm/test_sampling.py).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from engines.lm.models import cache_keyword, output_cache
from engines.lm.reinforce import LMRun
from engines.lm.settings import LMSettings


@torch.no_grad()
def seed_sample(model, x, R_LEN, EOS, generator):
    """The chapter's `sample`, with the cache passed under this transformers version's name."""
    cache_kw = cache_keyword(model)
    out = model(x, use_cache=True)
    past, logits, new = output_cache(out), out.logits[:, -1], []
    for _ in range(R_LEN):
        logits[:, EOS] = -float("inf")  # ban end-of-text: every reply has 24 tokens
        nxt = torch.multinomial(F.softmax(logits.float(), -1), 1, generator=generator)  # sample at temperature 1
        new.append(nxt)
        out = model(nxt, use_cache=True, **{cache_kw: past})  # feed the new token, reuse the cache
        past, logits = output_cache(out), out.logits[:, -1]
    return torch.cat([x, torch.cat(new, 1)], 1)


def seed_token_logits(model, seq, P_LEN, EOS):
    """Logits that predicted each reply token, end-of-text banned as in sampling."""
    lg = model(seq).logits[:, P_LEN - 1 : -1].float()
    lg[..., EOS] = -float("inf")
    return lg


def seed_step(policy, ref, opt, reward, tokenizer, x, prompts, K, R_LEN, BETA, generator):
    """The chapter's training step, line for line, plus the clipping to norm 1 it mentions."""
    EOS, P_LEN, N_PROMPTS = tokenizer.eos_token_id, x.shape[1], x.shape[0] // K
    seq = seed_sample(policy, x, R_LEN, EOS, generator)  # 16 prompts x 4 replies
    lg = seed_token_logits(policy, seq, P_LEN, EOS)  # forward pass WITH gradient
    logp = F.log_softmax(lg, -1).gather(-1, seq[:, P_LEN:, None])[..., 0]  # log pi of each sampled token
    with torch.no_grad():
        ref_logp = F.log_softmax(seed_token_logits(ref, seq, P_LEN, EOS), -1).gather(-1, seq[:, P_LEN:, None])[..., 0]
        R, _ = reward.score(prompts, tokenizer.batch_decode(seq[:, P_LEN:].tolist()))  # log-odds, one per reply
        kl_tok = logp.detach() - ref_logp  # per-token log-ratio
        r_tok = -BETA * kl_tok  # KL penalty at every token
        r_tok[:, -1] += torch.as_tensor(R, dtype=r_tok.dtype, device=r_tok.device)  # the score arrives at the last token
        G = r_tok.flip(1).cumsum(1).flip(1)  # reward-to-go G_t
        Gk = G.view(N_PROMPTS, K, R_LEN)
        b = (Gk.sum(1, keepdim=True) - Gk) / (K - 1)  # leave-one-out baseline
        A = (Gk - b).view(-1, R_LEN)  # advantage of every token
    loss = -(A * logp).mean()  # the REINFORCE loss of Section 6.5
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    opt.step()


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def compare(run: LMRun, steps: int, warmup: int = 2) -> tuple[float, float]:
    """Median seconds per step of the engine and of the seed's loop, interleaved on the same prompts."""
    s, dev = run.settings, run.device
    policy = copy.deepcopy(run.policy)
    opt = torch.optim.Adam(policy.parameters(), lr=s.learning_rate)
    rng, seed_rng = np.random.default_rng(s.seed), np.random.default_rng(s.seed)
    gen, seed_gen = torch.Generator(dev).manual_seed(s.seed), torch.Generator(dev).manual_seed(s.seed)
    engine, seed = [], []
    for i in range(warmup + steps):
        _sync(dev)
        start = time.perf_counter()
        run.step(i + 1, rng, gen)
        _sync(dev)
        engine.append(time.perf_counter() - start)
        batch = seed_rng.choice(len(run.train_texts), s.prompts, replace=False)  # the engine's prompts
        x = run.train_ids[batch].repeat_interleave(s.replies, 0).to(dev)
        prompts = [run.train_texts[j] for j in batch for _ in range(s.replies)]
        start = time.perf_counter()
        seed_step(policy, run.ref, opt, run.reward, run.tokenizer, x, prompts, s.replies, s.T, s.beta, seed_gen)
        _sync(dev)
        seed.append(time.perf_counter() - start)
    return statistics.median(engine[warmup:]), statistics.median(seed[warmup:])


class WrappedTokenizer:
    """The embedded tokenizer for a model with GPT-2's 50,257-token vocabulary: ids beyond it decode modulo its size."""

    def __init__(self, inner, vocab: int = 50257):
        self.inner, self.vocab, self.eos_token_id = inner, vocab, vocab - 1

    def __call__(self, texts):
        return self.inner(texts)

    def __len__(self):
        return self.vocab

    def batch_decode(self, rows):
        V = len(self.inner)
        return self.inner.batch_decode([[t % V for t in row] for row in rows])


def gpt2_small_run(device: str, steps: int, layers: int = 12) -> LMRun:
    """GPT-2 small's architecture with random weights (no download), at the seed's batch."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from engines.lm.models import load_causal_lm

    _, tokenizer = load_causal_lm("embedded", torch.device("cpu"))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=layers))  # 124M parameters with 12 layers
    settings = LMSettings(model="gpt2", device=device, steps=steps, eval_every=steps)
    return LMRun(settings, policy=model, tokenizer=WrappedTokenizer(tokenizer))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each loop (default: 10)")
    parser.add_argument("--cuda", action="store_true", help="also time GPT-2 small's architecture on CUDA")
    args = parser.parse_args(argv)

    run = LMRun(LMSettings(device="cpu", beta=0.05))
    engine, seed = compare(run, args.steps)
    print(f"live REINFORCE step, embedded model ({run.parameters / 1e6:.1f}M parameters) on CPU ({torch.get_num_threads()} threads), "
          f"16 prompts x 4 replies x 24 tokens: engine {engine:.3f} s/step, seed's loop {seed:.3f} s/step, "
          f"ratio {seed / engine:.2f}x (goal >= 1.5x)")

    if args.cuda:
        run = gpt2_small_run("cuda", 300)
        engine, seed = compare(run, 10)
        print(f"GPT-2 small architecture (random weights) on {torch.cuda.get_device_name()}: engine {engine:.3f} s/step, "
              f"seed's loop {seed:.3f} s/step, ratio {seed / engine:.2f}x")
        run = gpt2_small_run("cuda", 300)
        torch.cuda.synchronize()
        start = time.perf_counter()
        results = list(run.steps())
        torch.cuda.synchronize()
        total = time.perf_counter() - start
        train = sum(r.step_time for r in results if hasattr(r, "step_time"))
        print(f"GPT-2 small architecture, 300 steps of 16 x 4 x 24 on CUDA: {train:.1f} s of steps, {total:.1f} s with the "
              f"start and end evaluations (goal < 60 s; the seed: about 8 minutes on an Apple M5 Pro)")


if __name__ == "__main__":
    main()
