"""REINFORCE with a leave-one-out baseline on a language model: seed 000 sections 6.11 and 6.12.

Each step samples K replies of T tokens to each of N_p prompts from the policy pi_theta
(temperature 1, no top-k or top-p, end-of-text banned), scores prompt + reply with a
reward R(x, y) in log-odds, and ascends the REINFORCE estimate with per-token shaped rewards

    r_t = -beta (log pi_theta(y_t | s_t) - log pi_ref(y_t | s_t)) + 1[t = T-1] R(x, y)
    G_t = sum_{t' >= t} r_t'                    (reward-to-go)
    b_t^(i) = 1/(K-1) sum_{j != i} G_t^(j)      (leave-one-out over the K replies to one prompt)
    loss = -mean_{i,t} (G_t^(i) - b_t^(i)) log pi_theta(y_t^(i) | s_t^(i))

with Adam and gradient clipping to norm 1. The end-of-text ban is applied both when
sampling and when computing log-probabilities, so the policy sampled from and the policy
differentiated are the same distribution over the vocabulary without end-of-text.

`LMRun(settings).steps()` is a generator: one `StepResult` per training step and one
`EvalResult` (held-out prompts, the seed's `[eval]` line) at the start, every `eval_every`
steps and at the end; stop iterating to stop the run.

Prompts are the bundled movie-review openings cut to `prompt_tokens` tokens, or seed 001's
lab prompts whole (`prompt_set="feelings"`, the prompts a learned reward model was trained
on; they differ in length, so sampling and scoring go through one prompt length at a time).
When the reward also has `gold(prompts, replies)` (a learned reward model), every result
carries the mean gold score g of the same replies, the truth beside the proxy.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch
import torch.nn.functional as F

from engines.lm_models import (
    autocast,
    cache_keyword,
    load_causal_lm,
    output_cache,
    resolve_device,
)
from engines.lm_rewards import load_reward
from engines.lm_results import EvalResult, Sample, StepResult
from engines.lm_settings import LMSettings
from engines.policy_gradient import loo_baseline, returns_to_go, shaped_rewards
from engines.preferences import load_prompts
from engines.review_corpus import bundled_prompts
from engines.settings import require

BANNED_LOGIT = -1e9
"""Logit given to end-of-text: exp underflows to exactly 0 in float32, and 0 * logit stays finite."""
FEELING_HELDOUT = 64
"""Lab prompts held out for evaluation (the rest are trained on), as many as the most eval_prompts allows."""
FEELING_SPLIT_SEED = 0
"""Seed of the one fixed permutation that splits the lab prompts, so every run holds out the same ones."""


# ----------------------------------------------------------------------------- the pieces of one step


def ban(logits: torch.Tensor, eos: int | None) -> torch.Tensor:
    """Set the end-of-text logit to BANNED_LOGIT in place and return `logits` (set, not added: a huge logit is banned too).

    In place, as the seed's `logits[:, EOS] = -inf`, so no copy of a (N, T, V) tensor is made.
    """
    if eos is not None:
        logits[..., eos] = BANNED_LOGIT
    return logits


def prefill(model, x: torch.Tensor, K: int):
    """The prompt through the model once: (N_p, P) ids -> (its key-value cache repeated for K replies each, (N, V) last logits).

    The K replies to one prompt share its first P positions, so those are computed once per
    prompt and the cache is repeated, not recomputed K times. Under gradient the repeat is
    differentiable, so the prompt positions' gradient is the sum over the K replies, exactly
    as if each row had gone through on its own.
    """
    out = model(x, use_cache=True)
    cache = output_cache(out)
    if K > 1:
        cache.batch_repeat_interleave(K)  # (N_p, ...) -> (N, ...), N = N_p K
    return cache, out.logits[:, -1].repeat_interleave(K, 0)  # (N, V)


@torch.inference_mode()
def sample_replies(model, x: torch.Tensor, T: int, eos: int | None, generator: torch.Generator, K: int = 1) -> torch.Tensor:
    """Seed 000 section 6.11's `sample`: K replies of T tokens y_t ~ pi(. | s_t) to each prompt, temperature 1, EOS banned.

    `x` is (N_p, P) prompt ids; returns (N_p K, T) reply ids, the K replies to each prompt in
    consecutive rows. The prompt goes through the model once (`prefill`), then each new token
    reuses the key-value cache; no forward follows the last token.
    """
    cache_kw = cache_keyword(model)
    with autocast(x.device):
        cache, logits = prefill(model, x, K)  # (N, V) logits that predict y_0
        y = torch.empty(x.shape[0] * K, T, dtype=torch.long, device=x.device)
        for t in range(T):
            probs = F.softmax(ban(logits.float(), eos), -1)  # (N, V), EOS has probability 0
            y[:, t] = torch.multinomial(probs, 1, generator=generator)[:, 0]
            if t < T - 1:
                out = model(y[:, t : t + 1], use_cache=True, **{cache_kw: cache})
                cache, logits = output_cache(out), out.logits[:, -1]
    return y


def reply_logits(model, x: torch.Tensor, y: torch.Tensor, eos: int | None) -> torch.Tensor:
    """(N, T, V) float32 logits that predicted each reply token y_t, EOS banned, for (N_p, P) prompts and (N, T) replies.

    The token shift: the prompt's last position predicts y_0 and reply position t predicts
    y_{t+1}, so the last reply token is never fed. The K = N / N_p replies to each prompt
    lie in consecutive rows and share one pass of the prompt (`prefill`). The same logits as
    one forward pass of the whole sequence, with gradient when called under it.
    """
    K, T = y.shape[0] // x.shape[0], y.shape[1]
    with autocast(x.device):
        cache, first = prefill(model, x, K)  # first: (N, V), predicts y_0
        if T == 1:
            logits = first[:, None]  # (N, 1, V)
        else:
            rest = model(y[:, :-1], use_cache=True, **{cache_keyword(model): cache}).logits  # (N, T-1, V)
            logits = torch.cat([first[:, None], rest], 1)  # (N, T, V)
    return ban(logits.float(), eos)


def token_logp(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log pi(y_t | s_t) = logit_{y_t} - log sum_v exp(logit_v), (N, T, V) and (N, T) -> (N, T)."""
    return logits.gather(-1, tokens[..., None])[..., 0] - torch.logsumexp(logits, -1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """H_t = -sum_v pi(v | s_t) log pi(v | s_t), (N, T, V) -> (N, T), in nats."""
    logp = F.log_softmax(logits, -1)
    return -(logp.exp() * logp).sum(-1)  # banned EOS: 0 * (-1e9) = 0


def exact_kl(logits: torch.Tensor, ref_logits: torch.Tensor) -> torch.Tensor:
    """Seed 000 section 6.12's exact KL per reply, (N, T, V) twice -> (N,):

        KL = sum_t sum_v pi_theta(v | s_t) (log pi_theta(v | s_t) - log pi_ref(v | s_t))
    """
    logp, ref_logp = F.log_softmax(logits, -1), F.log_softmax(ref_logits, -1)
    return (logp.exp() * (logp - ref_logp)).sum((-1, -2))


def loo_advantages(r: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(G, A): reward-to-go G_t and A_t = G_t - b_t, b the leave-one-out mean of the other K-1 replies.

    `r` is (N, T) with the K replies to each prompt in consecutive rows.
    """
    N, T = r.shape
    G = returns_to_go(r)  # (N, T)
    Gk = G.view(N // K, K, T)  # (prompts, K, T)
    A = (Gk - loo_baseline(Gk, axis=1)).view(N, T)
    return G, A


def distinct_n(texts: list[str], n: int) -> float:
    """Distinct-n: unique n-grams of words over all n-grams, pooled over `texts` (words: lower-cased, split on spaces)."""
    grams = [tuple(w[i : i + n]) for w in (t.lower().split() for t in texts) for i in range(len(w) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


# ----------------------------------------------------------------------------- the run


def prompt_ids(tokenizer, texts: list[str], P: int) -> tuple[torch.Tensor, list[str]]:
    """The prompts cut to their first P tokens, (M, P), and their texts; shorter prompts are dropped."""
    ids = [e[:P] for e in tokenizer(texts)["input_ids"] if len(e) >= P]
    return torch.tensor(ids, dtype=torch.long).view(len(ids), P), tokenizer.batch_decode(ids)


def feeling_prompts(split: str) -> list[str]:
    """Seed 001's lab prompts, split once: FEELING_HELDOUT of them ('heldout') by a fixed permutation, the rest 'train'."""
    require(split in ("train", "heldout"), f"the prompt split must be 'train' or 'heldout', got {split!r}.")
    prompts = load_prompts()
    held = np.zeros(len(prompts), dtype=bool)
    held[np.random.default_rng(FEELING_SPLIT_SEED).permutation(len(prompts))[:FEELING_HELDOUT]] = True
    return [p for p, h in zip(prompts, held) if h == (split == "heldout")]


def whole_prompt_ids(tokenizer, texts: list[str], pad: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Prompts uncut: (M, P_max) ids right-padded with `pad`, (M,) their lengths, and their texts."""
    ids = tokenizer(texts)["input_ids"]
    lengths = torch.tensor([len(e) for e in ids], dtype=torch.long)
    table = torch.full((len(ids), int(lengths.max())), pad, dtype=torch.long)
    for i, e in enumerate(ids):
        table[i, : len(e)] = torch.tensor(e, dtype=torch.long)
    return table, lengths, tokenizer.batch_decode(ids)


def per_length(fn, lengths: torch.Tensor, x: torch.Tensor, *rows_of: torch.Tensor) -> torch.Tensor:
    """fn(x[rows, :L], *(t[rows] for t in rows_of)) for each prompt length L, results back in row order.

    `x` is (N, P_max) right-padded prompt ids with (N,) `lengths`; the models take prompts
    of one length (no padding, no attention mask), so rows go through one length at a time.
    With a single length this is the plain call fn(x, *rows_of).
    """
    values = torch.unique(lengths)
    if len(values) == 1:
        return fn(x[:, : int(values[0])], *rows_of)
    groups = [torch.nonzero(lengths == L)[:, 0] for L in values]
    outs = [fn(x[rows, : int(L)], *(t[rows] for t in rows_of)) for L, rows in zip(values, groups)]
    return torch.cat(outs)[torch.argsort(torch.cat(groups))]


def context_length(model) -> int | None:
    """The most positions the model attends over (GPT-2: n_positions), or None when its config does not say."""
    config = model.config
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)


def run_prompts(tokenizer, prompt_set: str, split: str, prompt_tokens: int, T: int, positions: int | None,
                wanted: int, what: str) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """The prompts of a run's split ('train' or 'heldout'): (M, P_max) ids, (M,) lengths and their M texts.

    'reviews': the bundled movie-review openings cut to their first `prompt_tokens` tokens;
    'feelings': seed 001's lab prompts whole, right-padded. Refused in one sentence when fewer
    than `wanted` are usable (`what` names the setting to lower) or when a prompt plus T reply
    tokens would not fit the model's `positions`.
    """
    if prompt_set == "reviews":
        ids, texts = prompt_ids(tokenizer, bundled_prompts(split), prompt_tokens)
        lengths = torch.full((len(ids),), prompt_tokens, dtype=torch.long)
        require(len(texts) >= wanted, f"only {len(texts)} {split} prompts have {prompt_tokens} tokens; ask for fewer {what}.")
    else:
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0  # never read: each prompt is cut to its own length
        ids, lengths, texts = whole_prompt_ids(tokenizer, feeling_prompts(split), pad)
        require(len(texts) >= wanted, f"there are only {len(texts)} {split} prompts; ask for fewer {what}.")
    require(positions is None or ids.shape[1] + T <= positions,
            f"a prompt of {ids.shape[1]} tokens + T = {ids.shape[1] + T} exceeds the model's {positions} positions.")
    return ids, lengths, texts


def sample_per_prompt(model, x: torch.Tensor, lengths: torch.Tensor, K: int, T: int, eos: int | None,
                      generator: torch.Generator) -> torch.Tensor:
    """(N_p K, T) replies to (N_p, P_max) right-padded prompts of (N_p,) `lengths`, K each in consecutive rows."""
    return per_length(lambda xp: sample_replies(model, xp, T, eos, generator, K).unflatten(0, (-1, K)),
                      lengths, x).flatten(0, 1)  # (N_p, K, T) -> (N, T)


def mean_gold(reward, prompts: list[str], replies: list[str]) -> float | None:
    """Mean gold score g of the replies when `reward` has `gold(prompts, replies)`, else None."""
    gold = getattr(reward, "gold", None)
    return None if gold is None else float(np.mean(gold(prompts, replies)))


class LMRun:
    """A live run: loads the models and the reward, then `steps()` trains and yields results.

    `policy` and `tokenizer` may be given (a model already in memory, or a tiny test model);
    the reference is a frozen copy of the policy as it starts.
    """

    def __init__(self, settings: LMSettings, policy=None, tokenizer=None, reward=None):
        self.settings = s = settings
        self.device = resolve_device(s.device)
        if policy is None:
            policy, tokenizer = load_causal_lm(s.model, self.device)
        self.policy, self.tokenizer = policy.to(self.device).eval(), tokenizer
        self.ref = copy.deepcopy(self.policy).requires_grad_(False)
        self.reward = reward if reward is not None else load_reward(s.reward, self.device)
        self.eos = tokenizer.eos_token_id
        positions = context_length(policy)
        self.train_ids, self.train_lengths, self.train_texts = run_prompts(
            tokenizer, s.prompt_set, "train", s.prompt_tokens, s.T, positions, s.prompts, "prompts")
        eval_ids, eval_lengths, eval_texts = run_prompts(
            tokenizer, s.prompt_set, "heldout", s.prompt_tokens, s.T, positions, s.eval_prompts, "eval_prompts")
        self.eval_ids, self.eval_lengths, self.eval_texts = eval_ids[: s.eval_prompts], eval_lengths[: s.eval_prompts], eval_texts[: s.eval_prompts]
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=s.learning_rate)
        self.parameters = sum(p.numel() for p in self.policy.parameters())

    def decode_tokens(self, y: torch.Tensor) -> list[tuple[str, ...]]:
        """(N, T) ids -> each reply as a tuple of T token strings."""
        pieces = self.tokenizer.batch_decode(y.reshape(-1, 1).tolist())
        T = y.shape[1]
        return [tuple(pieces[i : i + T]) for i in range(0, len(pieces), T)]

    def sample(self, x: torch.Tensor, lengths: torch.Tensor, K: int, generator: torch.Generator) -> torch.Tensor:
        """(N_p K, T) replies of the policy to (N_p, P_max) prompts of (N_p,) `lengths`, K each in consecutive rows."""
        return sample_per_prompt(self.policy, x, lengths, K, self.settings.T, self.eos, generator)

    def logits(self, model, x: torch.Tensor, lengths: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(N, T, V) logits of `model` (policy or reference) that predicted each token of the (N, T) replies `y`."""
        K = y.shape[0] // x.shape[0]
        return per_length(lambda xp, yp: reply_logits(model, xp, yp.flatten(0, 1), self.eos).unflatten(0, (-1, K)),
                          lengths, x, y.unflatten(0, (-1, K))).flatten(0, 1)  # (N_p, K, T, V) -> (N, T, V)

    def step(self, step: int, rng: np.random.Generator, generator: torch.Generator) -> StepResult:
        """One training step: seed 000 section 6.11's fifteen lines."""
        s, K, dev = self.settings, self.settings.replies, self.device
        started = time.perf_counter()
        batch = rng.choice(len(self.train_texts), s.prompts, replace=False)
        x, lengths = self.train_ids[batch].to(dev), self.train_lengths[batch].to(dev)  # (N_p, P), (N_p,): each prompt once
        y = self.sample(x, lengths, K, generator)  # (N, T), N = N_p K, no gradient
        y = y.clone()  # an ordinary tensor again: backward keeps it as gather's index, which an inference tensor cannot be
        lg = self.logits(self.policy, x, lengths, y)  # (N, T, V) WITH gradient
        logp = token_logp(lg, y)  # log pi_theta(y_t | s_t)
        with torch.inference_mode():
            ref_logp = token_logp(self.logits(self.ref, x, lengths, y), y)  # log pi_ref(y_t | s_t)
        prompts = [self.train_texts[i] for i in batch for _ in range(K)]
        replies = self.tokenizer.batch_decode(y.tolist())
        R, p_pos = self.reward.score(prompts, replies)  # (N,) log-odds, P(positive)
        with torch.no_grad():
            kl_tok = logp.detach() - ref_logp  # (N, T) per-token log-ratio
            r = shaped_rewards(logp.detach(), ref_logp, torch.as_tensor(R, dtype=torch.float32, device=dev), s.beta)
            _, A = loo_advantages(r, K)  # (N, T) advantage of every token
            entropy = token_entropy(lg.detach()).mean()
        loss = -(A * logp).mean()  # the REINFORCE loss of seed 000 section 6.5
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), s.clip)
        self.opt.step()
        kl_rows = kl_tok.cpu().numpy()
        keep = [i * K for i in range(s.keep_samples)]
        tokens = self.decode_tokens(y[keep]) if keep else []
        samples = tuple(
            Sample(prompts[i], toks, tuple(float(v) for v in kl_rows[i]), float(R[i])) for i, toks in zip(keep, tokens)
        )
        return StepResult(
            step=step, reward=float(np.mean(R)), p_positive=float(np.mean(p_pos)), kl=float(kl_rows.sum(1).mean()),
            entropy=float(entropy), grad_norm=float(grad_norm), loss=loss.item(), step_time=time.perf_counter() - started,
            samples=samples, gold=mean_gold(self.reward, prompts, replies),
        )

    @torch.inference_mode()
    def evaluate(self, step: int) -> EvalResult:
        """Seed 000 section 6.11's `[eval]`: eval_prompts held-out prompts x eval_replies replies.

        The same sampling noise at every evaluation (a generator re-seeded from `seed`), so
        two evaluations differ only by what the policy learned. Rows go through in chunks of
        prompts x replies to bound the (rows, T, V) tensors' memory.
        """
        s = self.settings
        generator = torch.Generator(self.device).manual_seed(s.seed + 1)
        K, chunk = s.eval_replies, max(s.prompts * s.replies // s.eval_replies, 1)  # prompts per chunk
        y, logp, ref_logp, kl, ent = [], [], [], [], []
        for x, lengths in zip(self.eval_ids.to(self.device).split(chunk), self.eval_lengths.to(self.device).split(chunk)):
            yc = self.sample(x, lengths, K, generator)  # (n K, T)
            lg, ref_lg = self.logits(self.policy, x, lengths, yc), self.logits(self.ref, x, lengths, yc)  # (n K, T, V)
            y.append(yc)
            logp.append(token_logp(lg, yc))
            ref_logp.append(token_logp(ref_lg, yc))
            kl.append(exact_kl(lg, ref_lg))
            ent.append(token_entropy(lg))
        y = torch.cat(y)
        logp, ref_logp = torch.cat(logp).cpu().numpy(), torch.cat(ref_logp).cpu().numpy()
        prompts = [t for t in self.eval_texts for _ in range(s.eval_replies)]
        replies = self.tokenizer.batch_decode(y.tolist())
        R, p_pos = self.reward.score(prompts, replies)
        return EvalResult(
            step=step, reward=float(np.mean(R)), p_positive=float(np.mean(p_pos)),
            kl_exact=float(torch.cat(kl).mean()), kl=float((logp - ref_logp).sum(1).mean()),
            entropy=float(torch.cat(ent).mean()), ref_perplexity=float(np.exp(-ref_logp.mean())),
            distinct_1=distinct_n(replies, 1), distinct_2=distinct_n(replies, 2), beta=s.beta,
            prompts=tuple(prompts), replies=tuple(replies), tokens=tuple(self.decode_tokens(y)),
            logp=logp, ref_logp=ref_logp, R=np.asarray(R, dtype=float), gold=mean_gold(self.reward, prompts, replies),
        )

    def steps(self):
        """Yield EvalResult(0), then a StepResult per step and an EvalResult every eval_every steps and at the end."""
        s = self.settings
        rng = np.random.default_rng(s.seed)
        generator = torch.Generator(self.device).manual_seed(s.seed)
        yield self.evaluate(0)
        for step in range(1, s.steps + 1):
            yield self.step(step, rng, generator)
            if step % s.eval_every == 0 or step == s.steps:
                yield self.evaluate(step)


def train_lm(settings: LMSettings, **models) -> tuple[list[StepResult], list[EvalResult]]:
    """Run `LMRun(settings, **models).steps()` to the end: (step results, evaluations)."""
    results = list(LMRun(settings, **models).steps())
    return [r for r in results if isinstance(r, StepResult)], [r for r in results if isinstance(r, EvalResult)]
