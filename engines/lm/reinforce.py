"""REINFORCE with a leave-one-out baseline on a language model: seed 000 sections 6.11 and 6.12.

Each step samples K replies of T tokens to each of N_p prompts from the policy pi_theta
(temperature 1, no top-k or top-p, end-of-text banned), scores prompt + reply with a
reward R(x, y) in log-odds, and ascends the REINFORCE estimate with per-token shaped rewards

    r_t = -beta (log pi_theta(y_t | s_t) - log pi_ref(y_t | s_t)) + 1[t = T-1] R(x, y)
    G_t = sum_{t' >= t} r_t'                    (reward-to-go)
    b_t^(i) = 1/(K-1) sum_{j != i} G_t^(j)      (leave-one-out over the K replies to one prompt)
    loss = -mean_{i,t} (G_t^(i) - b_t^(i)) log pi_theta(y_t^(i) | s_t^(i))

with Adam and gradient clipping to norm 1. `advantage` swaps G - b for the group's mean, GRPO's
standardised reward or no baseline (seed 000 section 6.10: "RLOO and GRPO keep the baseline and
drop the critic"). The end-of-text ban is applied both when
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

import time

import numpy as np
import torch

from engines.lm.frozen_trunk import TrunkCapture, reference_logits, reference_model, train_top_blocks
from engines.lm.models import load_causal_lm, resolve_device
from engines.lm.results import EvalResult, Sample, StepResult
from engines.lm.rewards import load_reward
from engines.lm.sampling import (
    ban,
    context_length,
    exact_kl,
    per_length,
    reply_logits,
    run_prompts,
    sample_per_prompt,
    sample_with_logits,
    token_entropy,
    token_logp,
)
from engines.lm.settings import LMSettings
from engines.policy_gradient import group_advantages, returns_to_go, shaped_rewards

# ----------------------------------------------------------------------------- the pieces of one step

def reply_advantages(r: torch.Tensor, K: int, advantage: str = "loo") -> tuple[torch.Tensor, torch.Tensor]:
    """(G, A): reward-to-go G_t and its advantage A_t over the K replies to the same prompt, position by position.

    `r` is (N, T) with the K replies to each prompt in consecutive rows. 'loo' is the seed's
    A_t = G_t - b_t, b the leave-one-out mean of the other K-1 replies; 'mean', 'grpo' and
    'none' are engines.policy_gradient.group_advantages's (GRPO standardises G_t over the
    group at each t, which with beta = 0 is the whole reply's reward, as DeepSeekMath does).
    """
    N, T = r.shape
    G = returns_to_go(r)  # (N, T)
    Gk = G.view(N // K, K, T)  # (prompts, K, T)
    A = group_advantages(Gk, advantage, axis=1).view(N, T)
    return G, A


def distinct_n(texts: list[str], n: int) -> float:
    """Distinct-n: unique n-grams of words over all n-grams, pooled over `texts` (words: lower-cased, split on spaces)."""
    grams = [tuple(w[i : i + n]) for w in (t.lower().split() for t in texts) for i in range(len(w) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


# ----------------------------------------------------------------------------- the run


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
        self.trained = train_top_blocks(self.policy, s.trained_blocks)
        self.ref = reference_model(self.policy, self.trained)  # pi_ref: the policy as it starts
        self.trunk = TrunkCapture(self.policy, s.trained_blocks) if s.trained_blocks else None
        self.reward = reward if reward is not None else load_reward(s.reward, self.device)
        self.eos = tokenizer.eos_token_id
        positions = context_length(policy)
        self.train_ids, self.train_lengths, self.train_texts = run_prompts(
            tokenizer, s.prompt_set, "train", s.prompt_tokens, s.T, positions, s.prompts, "prompts")
        eval_ids, eval_lengths, eval_texts = run_prompts(
            tokenizer, s.prompt_set, "heldout", s.prompt_tokens, s.T, positions, s.eval_prompts, "eval_prompts")
        self.eval_ids, self.eval_lengths, self.eval_texts = eval_ids[: s.eval_prompts], eval_lengths[: s.eval_prompts], eval_texts[: s.eval_prompts]
        self.opt = torch.optim.Adam(self.trained, lr=s.learning_rate)
        self.parameters = sum(p.numel() for p in self.policy.parameters())
        self.trained_parameters = sum(p.numel() for p in self.trained)

    def decode_tokens(self, y: torch.Tensor) -> list[tuple[str, ...]]:
        """(N, T) ids -> each reply as a tuple of T token strings."""
        pieces = self.tokenizer.batch_decode(y.reshape(-1, 1).tolist())
        T = y.shape[1]
        return [tuple(pieces[i : i + T]) for i in range(0, len(pieces), T)]

    def sample(self, x: torch.Tensor, lengths: torch.Tensor, K: int, generator: torch.Generator) -> torch.Tensor:
        """(N_p K, T) replies of the policy to (N_p, P_max) prompts of (N_p,) `lengths`, K each in consecutive rows."""
        return sample_per_prompt(self.policy, x, lengths, K, self.settings.T, self.eos, generator)

    def sample_scored(self, x: torch.Tensor, lengths: torch.Tensor, K: int,
                      generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(N, T) replies sampled from the policy, K to each prompt in consecutive rows; the (N, T, V) policy logits that
        predicted them, WITH gradient; and the reference's (N, T, V), without.

        Training every weight, the replies are sampled without gradient, then the policy and the reference each score
        them in one pass. On a frozen trunk (engines/lm/frozen_trunk.py) the sampling pass itself is the policy's
        differentiated pass, and the reference runs only its top blocks, on the trunk's states of that pass. (With
        every weight trained, differentiating through the T token-by-token passes was slower than one more pass:
        9.0 s a step of smollm2-135m at 4 x 4 x 12 against 6.5 s.)
        """
        s = self.settings
        if self.trunk is None:
            y = self.sample(x, lengths, K, generator).clone()  # an ordinary tensor: backward keeps it as gather's index
            lg = self.logits(self.policy, x, lengths, y)
            with torch.inference_mode():
                return y, lg, self.logits(self.ref, x, lengths, y)

        def one_length(xp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            with self.trunk.recording():
                y, lg = sample_with_logits(self.policy, xp, s.T, self.eos, generator, K)  # (n K, T), (n K, T, V)
            with torch.inference_mode():
                ids = torch.cat([xp.repeat_interleave(K, 0), y[:, :-1]], 1)  # (n K, P + T - 1)
                ref_lg = ban(reference_logits(self.ref, s.trained_blocks, self.trunk.hidden(K), ids, s.T).float(), self.eos)
            return tuple(t.unflatten(0, (-1, K)) for t in (y, lg, ref_lg))  # rows per prompt, for per_length

        return tuple(t.flatten(0, 1) for t in per_length(one_length, lengths, x))

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
        y, lg, ref_lg = self.sample_scored(x, lengths, K, generator)  # (N, T), N = N_p K; (N, T, V) WITH gradient; (N, T, V)
        logp = token_logp(lg, y)  # log pi_theta(y_t | s_t)
        ref_logp = token_logp(ref_lg, y)  # log pi_ref(y_t | s_t)
        prompts = [self.train_texts[i] for i in batch for _ in range(K)]
        replies = self.tokenizer.batch_decode(y.tolist())
        R, p_pos = self.reward.score(prompts, replies)  # (N,) log-odds, P(positive)
        with torch.no_grad():
            kl_tok = logp.detach() - ref_logp  # (N, T) per-token log-ratio
            r = shaped_rewards(logp.detach(), ref_logp, torch.as_tensor(R, dtype=torch.float32, device=dev), s.beta)
            _, A = reply_advantages(r, K, s.advantage)  # (N, T) advantage of every token
            entropy = token_entropy(lg.detach()).mean()
        loss = -(A * logp).mean()  # the REINFORCE loss of seed 000 section 6.5
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.trained, s.clip)
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
