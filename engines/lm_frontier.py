"""The reward-KL frontier of a language model, approximated by its own samples: seed 000 section 6.12.

"What beta means" gives the best policy under E[R] - beta KL(pi || pi_ref) in closed form,
pi* = pi_ref exp(R / beta) / Z (Ziegler et al. 2019, page 6, who use it to estimate the best
reward reachable at each KL). A language model's replies cannot be enumerated, so pi_ref(. | x)
is replaced by m replies sampled from it, each of weight 1/m, exactly as the live run samples
(engines/lm_reinforce.py: temperature 1, end-of-text banned, T tokens, the same held-out prompts
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

from engines.lm_models import DEVICES, EMBEDDED, load_causal_lm, resolve_device
from engines.lm_reinforce import PROMPT_SETS, context_length, run_prompts, sample_per_prompt
from engines.lm_rewards import load_reward
from engines.settings import require, whole

ROWS = 256
"""Replies sampled in one batch (whole prompts at a time, at least one prompt): bounds the memory of a batch."""


@dataclass(frozen=True)
class LMFrontierSettings:
    """The sampled reward-KL frontier of a live run's reference model on its held-out prompts."""

    model: str = EMBEDDED
    """The reference model pi_ref: 'embedded', a hub id (gpt2, distilgpt2) or a local folder."""
    reward: str = "vader"
    """Reward R(x, y): 'vader', a classifier id or folder, or 'reward-model:PATH', as in the live run."""
    prompts: int = 64
    """Held-out prompts M (the first M, as the live run's evaluation takes them); 1 to 64."""
    samples: int = 32
    """Replies m sampled from pi_ref per prompt; 2 to 4096 (the frontier's KL stops at log m nats)."""
    T: int = 24
    """Tokens per reply, as the run's T; 1 to 512."""
    prompt_tokens: int = 8
    """Review prompts are cut to this many tokens (feeling prompts are used whole); 1 to 512."""
    prompt_set: str = "reviews"
    """'reviews' (movie-review openings, cut to prompt_tokens) or 'feelings' (seed 001's lab prompts, whole)."""
    seed: int = 0
    """Seed of the replies sampled; a whole number >= 0."""
    device: str = "auto"
    """'auto' (CUDA if available, else CPU), 'cpu' or 'cuda'."""

    def __post_init__(self):
        require(isinstance(self.model, str) and self.model.strip() != "", "model must name a model: 'embedded', a hub id or a folder.")
        require(isinstance(self.reward, str) and self.reward.strip() != "", "reward must name a reward, e.g. 'vader'.")
        require(whole(self.prompts, 1, 64), f"prompts must be a whole number from 1 to 64 (the held-out prompts), got {self.prompts}.")
        require(whole(self.samples, 2, 4096), f"samples must be a whole number from 2 to 4096 per prompt, got {self.samples}.")
        require(whole(self.T, 1, 512), f"T must be a whole number of tokens from 1 to 512, got {self.T}.")
        require(whole(self.prompt_tokens, 1, 512), f"prompt_tokens must be a whole number from 1 to 512, got {self.prompt_tokens}.")
        require(self.prompt_set in PROMPT_SETS, f"prompt_set must be one of {', '.join(PROMPT_SETS)}, got {self.prompt_set!r}.")
        require(whole(self.seed, 0), f"seed must be a whole number >= 0, got {self.seed}.")
        require(self.device in DEVICES or self.device.startswith("cuda:"), f"device must be one of {', '.join(DEVICES)}, got {self.device!r}.")


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
