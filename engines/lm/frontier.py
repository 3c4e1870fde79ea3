"""The reward-KL frontier of a language model, approximated by its own samples: seed 000 section 6.12.

"What beta means" gives the best policy under E[R] - beta KL(pi || pi_ref) in closed form,
pi* = pi_ref exp(R / beta) / Z (Ziegler et al. 2019, page 6, who use it to estimate the best
reward reachable at each KL). A language model's replies cannot be enumerated, so pi_ref(. | x)
is replaced by m replies sampled from it, each of weight 1/m, exactly as the live run samples
(engines/lm/reinforce.py: temperature 1, end-of-text banned, T tokens, the same held-out prompts
as its evaluation). On those samples pi* is a softmax of R / beta (engines/kl_optimal.py,
`sampled_frontier`).

What the approximation is: the exact frontier of the sampled distribution. Averaged over the
draw of the samples, each of its points is reached by a real policy of the model, "draw m
replies from pi_ref, keep reply i with probability w_i", with the same E[R] and a true
KL(. || pi_ref) no larger: the kept reply is a function of the m samples and the choice among
them, and the choice costs E[sum_i w_i log(m w_i)] nats against a uniform one (data
processing). So, up to the Monte Carlo noise of M prompts, the curve lies on or below the true
frontier: a lower bound on the best reward at each KL, which stops at log m nats.

`LMFrontier(settings).steps()` is a generator of `FrontierProgress`, one per batch of
prompts sampled and scored; stop iterating to stop it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from engines.lm.models import load_causal_lm, resolve_device
from engines.lm.rewards import load_reward
from engines.lm.sampling import context_length, run_prompts, sample_per_prompt
from engines.lm.settings import LMFrontierSettings

ROWS = 256
"""Replies sampled in one batch (whole prompts at a time, at least one prompt): bounds the memory of a batch."""


@dataclass(frozen=True)
class FrontierProgress:
    """The prompts sampled and scored so far."""

    prompts: tuple[str, ...]
    """The prompts done, in order, (M_done,)."""
    rewards: np.ndarray
    """R(x, y_i) of the m replies to each prompt done, (M_done, m)."""
    total: int
    """Prompts M asked for."""
    best_replies: tuple[str, ...]
    """The highest-reward reply to each prompt done (what pi* writes as beta -> 0), (M_done,)."""
    seconds: float
    """Wall-clock seconds since the models were loaded."""


def heldout_prompts(tokenizer, settings: LMFrontierSettings, positions: int | None):
    """The live run's held-out prompts: (M, P_max) ids, (M,) lengths, M texts, the first M as its evaluation takes them."""
    s = settings
    ids, lengths, texts = run_prompts(tokenizer, s.prompt_set, "heldout", s.prompt_tokens, s.T, positions, s.prompts, "prompts")
    return ids[: s.prompts], lengths[: s.prompts], texts[: s.prompts]


class LMFrontier:
    """Loads the reference model and the reward, then `steps()` samples and scores, batch by batch.

    `model`, `tokenizer` and `reward` may be given (already in memory, or small test stand-ins).
    """

    def __init__(self, settings: LMFrontierSettings, model=None, tokenizer=None, reward=None):
        self.settings = s = settings
        self.device = resolve_device(s.device)
        if model is None:
            model, tokenizer = load_causal_lm(s.model, self.device)
        self.model, self.tokenizer = model.to(self.device).eval(), tokenizer
        self.reward = reward if reward is not None else load_reward(s.reward, self.device)
        self.eos = tokenizer.eos_token_id
        self.ids, self.lengths, self.texts = heldout_prompts(tokenizer, s, context_length(model))

    def steps(self):
        """Yield a FrontierProgress after each batch of about ROWS replies; the last holds all M prompts."""
        s = self.settings
        generator = torch.Generator(self.device).manual_seed(s.seed)
        per_batch = max(1, ROWS // s.samples)
        started = time.perf_counter()
        rewards, best = [], []
        for start in range(0, s.prompts, per_batch):
            x = self.ids[start : start + per_batch].to(self.device)  # (c, P_max)
            lengths = self.lengths[start : start + per_batch].to(self.device)
            y = sample_per_prompt(self.model, x, lengths, s.samples, s.T, self.eos, generator)  # (c m, T), the live run's sampler
            prompts = [t for t in self.texts[start : start + per_batch] for _ in range(s.samples)]
            replies = self.tokenizer.batch_decode(y.tolist())
            R, _ = self.reward.score(prompts, replies)
            R = np.asarray(R, dtype=float).reshape(len(x), s.samples)  # (c, m)
            rewards.append(R)
            best += [replies[i * s.samples + int(np.argmax(row))] for i, row in enumerate(R)]
            done = start + len(x)
            yield FrontierProgress(prompts=tuple(self.texts[:done]), rewards=np.concatenate(rewards), total=s.prompts,
                                   best_replies=tuple(best), seconds=time.perf_counter() - started)


def lm_frontier(settings: LMFrontierSettings, **models) -> FrontierProgress:
    """Run `LMFrontier(settings, **models).steps()` to the end: the last FrontierProgress (all M prompts)."""
    last = None
    for last in LMFrontier(settings, **models).steps():
        pass
    return last
