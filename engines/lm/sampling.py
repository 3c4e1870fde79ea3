"""Sampling replies from a causal language model, and the per-token quantities of a reply: seed 000 section 6.11.

Seed 000's `sample` draws y_t ~ pi(. | s_t) at temperature 1 with end-of-text banned, one
token at a time, and its training step scores each reply token under the policy and the
reference:

    logp_t     = log pi_theta(y_t | s_t)                    (token_logp)
    H_t        = -sum_v pi(v | s_t) log pi(v | s_t)          (token_entropy)
    KL         = sum_t sum_v pi_theta(v | s_t) (log pi_theta(v | s_t) - log pi_ref(v | s_t))   (exact_kl)

The end-of-text ban is applied both when sampling and when computing logits, so the policy
sampled from and the policy differentiated are the same distribution over the vocabulary
without end-of-text. The prompts arrive as token tables: cut to P tokens (the review
openings) or whole and right-padded (the lab prompts, which differ in length and so go
through the model one length at a time, `per_length`).
"""

from __future__ import annotations

import inspect

import torch
import torch.nn.functional as F

from engines.lm.models import autocast, cache_keyword, output_cache
from engines.lm.prompts import feeling_prompts
from engines.lm.review_corpus import bundled_prompts
from engines.settings import require

BANNED_LOGIT = -1e9
"""Logit given to end-of-text: exp underflows to exactly 0 in float32, and 0 * logit stays finite."""


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
    as if each row had gone through on its own. The output head runs at the last position only
    (`logits_to_keep`, where the model takes it): the others' logits predict prompt tokens, not y_0.
    """
    out = model(x, use_cache=True, **last_logits_only(model))
    cache = output_cache(out)
    if K > 1:
        cache.batch_repeat_interleave(K)  # (N_p, ...) -> (N, ...), N = N_p K
    return cache, out.logits[:, -1].repeat_interleave(K, 0)  # (N, V)


def last_logits_only(model) -> dict[str, int]:
    """The keyword that makes `model` compute logits at the last position only, where its forward takes one."""
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


@torch.inference_mode()
def sample_replies(model, x: torch.Tensor, T: int, eos: int | None, generator: torch.Generator, K: int = 1) -> torch.Tensor:
    """Seed 000 section 6.11's `sample`: K replies of T tokens y_t ~ pi(. | s_t) to each prompt, temperature 1, EOS banned.

    `x` is (N_p, P) prompt ids; returns (N_p K, T) reply ids, the K replies to each prompt in
    consecutive rows. The prompt goes through the model once (`prefill`), then each new token
    reuses the key-value cache; no forward follows the last token.
    """
    return sample_with_logits(model, x, T, eos, generator, K, keep_logits=False)[0]


def sample_with_logits(model, x: torch.Tensor, T: int, eos: int | None, generator: torch.Generator, K: int = 1,
                       keep_logits: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`sample_replies`, keeping the (N, T, V) float32 logits that predicted each sampled token, EOS banned (`reply_logits`'s).

    Called under gradient, the logits carry it: the pass that drew the replies is then also the policy's
    differentiated forward pass, the same function of the parameters as `reply_logits` computes afresh. Tokens are
    drawn from detached copies, so sampling itself is never differentiated.
    """
    cache_kw = cache_keyword(model)
    kept = []
    with autocast(x.device):
        cache, logits = prefill(model, x, K)  # (N, V) logits that predict y_0
        y = torch.empty(x.shape[0] * K, T, dtype=torch.long, device=x.device)
        for t in range(T):
            if keep_logits:
                kept.append(logits)
            probs = F.softmax(ban(logits.detach().float().clone(), eos), -1)  # (N, V), EOS has probability 0
            y[:, t] = torch.multinomial(probs, 1, generator=generator)[:, 0]
            if t < T - 1:
                out = model(y[:, t : t + 1].clone(), use_cache=True, **{cache_kw: cache})  # a copy: the embedding's backward keeps it
                cache, logits = output_cache(out), out.logits[:, -1]
    return y, ban(torch.stack(kept, 1).float(), eos) if keep_logits else None  # (N, T), (N, T, V)


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


def prompt_ids(tokenizer, texts: list[str], P: int) -> tuple[torch.Tensor, list[str]]:
    """The prompts cut to their first P tokens, (M, P), and their texts; shorter prompts are dropped."""
    ids = [e[:P] for e in tokenizer(texts)["input_ids"] if len(e) >= P]
    return torch.tensor(ids, dtype=torch.long).view(len(ids), P), tokenizer.batch_decode(ids)


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
    With a single length this is the plain call fn(x, *rows_of). `fn` may return a tuple of such tensors.
    """
    values = torch.unique(lengths)
    if len(values) == 1:
        return fn(x[:, : int(values[0])], *rows_of)
    groups = [torch.nonzero(lengths == L)[:, 0] for L in values]
    outs = [fn(x[rows, : int(L)], *(t[rows] for t in rows_of)) for L, rows in zip(values, groups)]
    order = torch.argsort(torch.cat(groups))
    if isinstance(outs[0], tuple):  # several results per row: each put back in row order
        return tuple(torch.cat(parts)[order] for parts in zip(*outs))
    return torch.cat(outs)[order]


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
