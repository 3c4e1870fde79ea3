"""The settings of the language-model work, in one place and without torch: seed 000 sections 6.11 and 6.12.

`LMSource` is what a model's replies depend on: the model, the reward that scores them, the
reply length, the prompts, the seed and the device. `LMSettings` adds a live REINFORCE run's
training settings (engines/lm/reinforce.py); `LMFrontierSettings` adds the sampled frontier's
M prompts and m replies (engines/lm/frontier.py). A run and the frontier drawn under it share
one definition of each source setting and its default. Nothing here imports torch, so a page
can read the defaults without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import assets
from engines.settings import finite, require, whole

EMBEDDED = "embedded"
"""The id of the model shipped in assets/models/embedded/."""
EMBEDDED_DIR = assets.path("models", "embedded")
"""Where the embedded model's files lie."""
DEVICES = ("auto", "cpu", "cuda", "mps")
"""Device choices: 'auto' is CUDA where available, else Apple's mps, else the CPU; 'cuda:N' is also accepted."""
PROMPT_SETS = ("reviews", "feelings")
"""'reviews': the bundled movie-review openings; 'feelings': seed 001's lab prompts (engines.lm.preferences)."""
REWARD_PREFIX = "reward-model:"
"""Reward names of the form 'reward-model:PATH' load the reward model saved at PATH (engines.lm.reward_model)."""
LOCAL_REWARDS = ("vader",)
"""Rewards that read no model files (engines.lm.rewards)."""
SEED_LR = 2e-5
"""The seed's learning rate for GPT-2 small (124M parameters)."""
MODEL_LR = {EMBEDDED: 7e-5}
"""Learning rates that differ from the seed's, by model. The embedded model has 0.9M parameters,
not GPT-2's 124M; at 7e-5 its beta = 0 run follows the seed's GPT-2 run (English at step 50,
repeating by step 100, one word on a loop by step 150) and its beta = 0.05 run keeps more than
half its word diversity; at 3e-4 the beta = 0 run had collapsed by step 50, and at 1e-4 the
beta = 0.05 run kept only 0.49 of it. See assets/models/embedded/README.md for the measured runs."""


def default_lr(model: str) -> float:
    """The learning rate used when none is given: MODEL_LR[model], else the seed's 2e-5."""
    return MODEL_LR.get(model, SEED_LR)



def is_folder(name: str) -> bool:
    """Whether a model name means a folder (a path) rather than a hub id."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or Path(name).expanduser().is_dir()


def is_classifier(reward: str) -> bool:
    """Whether a reward is a classifier's files: not VADER, nor a saved reward model (a file of the runs folder only)."""
    return not (reward in LOCAL_REWARDS or reward.startswith(REWARD_PREFIX))

@dataclass(frozen=True)
class LMSource:
    """What a language model's scored replies depend on, shared by a run and its frontier."""

    model: str = EMBEDDED
    """Policy and reference model: 'embedded', a hub id (gpt2, distilgpt2) or a local folder."""
    reward: str = "vader"
    """Reward: 'vader' (no download), 'lvwerra/distilbert-imdb' (the seed's), a classifier id or folder, or 'reward-model:PATH'."""
    T: int = 24
    """Tokens per reply; at least 1 (a prompt and its reply must fit the model's positions)."""
    prompt_tokens: int = 8
    """Review prompts are cut to this many tokens (feeling prompts are used whole); at least 1."""
    prompt_set: str = "reviews"
    """'reviews' (movie-review openings, cut to prompt_tokens) or 'feelings' (seed 001's lab prompts, whole)."""
    seed: int = 0
    """Seed of the random draws (a run's prompts of each step, the replies sampled); a whole number >= 0."""
    device: str = "auto"
    """'auto' (CUDA if available, else CPU), 'cpu' or 'cuda'."""

    def __post_init__(self):
        require(isinstance(self.model, str) and self.model.strip() != "", "model must name a model: 'embedded', a hub id or a folder.")
        require(isinstance(self.reward, str) and self.reward.strip() != "", "reward must name a reward, e.g. 'vader'.")
        require(whole(self.T, 1), f"T must be a whole number of tokens >= 1, got {self.T}.")
        require(whole(self.prompt_tokens, 1), f"prompt_tokens must be a whole number >= 1, got {self.prompt_tokens}.")
        require(self.prompt_set in PROMPT_SETS, f"prompt_set must be one of {', '.join(PROMPT_SETS)}, got {self.prompt_set!r}.")
        require(whole(self.seed, 0), f"seed must be a whole number >= 0, got {self.seed}.")
        require(isinstance(self.device, str) and (self.device in DEVICES or self.device.startswith("cuda:")),
                f"device must be one of {', '.join(DEVICES)}, got {self.device!r}.")


@dataclass(frozen=True)
class LMSettings(LMSource):
    """One live REINFORCE run on a language model, seed 000 section 6.11."""

    beta: float = 0.05
    """KL penalty per nat of log-ratio to the reference; >= 0 (0 = no penalty)."""
    lr: float | None = None
    """Adam learning rate; > 0; unset = the model's default (2e-5 as in the seed, 7e-5 for 'embedded')."""
    steps: int = 300
    """Training steps; at least 1."""
    prompts: int = 16
    """Prompts per step; at least 1."""
    replies: int = 4
    """Replies K sampled per prompt; at least 2 (the leave-one-out baseline needs two)."""
    clip: float = 1.0
    """Gradient clipping: largest gradient norm; > 0."""
    eval_every: int = 50
    """Held-out evaluation every this many steps (and at the start and the end); at least 1."""
    eval_prompts: int = 64
    """Held-out prompts per evaluation; 1 to 64 (the bundled held-out prompts)."""
    eval_replies: int = 4
    """Replies sampled per held-out prompt; at least 1."""
    keep_samples: int = 4
    """Replies kept per step for display (one each from the first prompts); 0 to prompts."""

    def __post_init__(self):
        super().__post_init__()
        require(finite(self.beta) and self.beta >= 0, f"beta must be a number >= 0, got {self.beta}.")
        require(self.lr is None or (finite(self.lr) and self.lr > 0), f"lr must be a positive number, got {self.lr}.")
        require(whole(self.steps, 1), f"steps must be a whole number >= 1, got {self.steps}.")
        require(whole(self.prompts, 1), f"prompts must be a whole number >= 1, got {self.prompts}.")
        require(whole(self.replies, 2), f"replies must be at least 2 (the leave-one-out baseline needs two), got {self.replies}.")
        require(finite(self.clip) and self.clip > 0, f"clip must be a positive gradient norm, got {self.clip}.")
        require(whole(self.eval_every, 1), f"eval_every must be a whole number >= 1, got {self.eval_every}.")
        require(whole(self.eval_prompts, 1) and self.eval_prompts <= 64, f"eval_prompts must lie between 1 and 64, got {self.eval_prompts}.")
        require(whole(self.eval_replies, 1), f"eval_replies must be a whole number >= 1, got {self.eval_replies}.")
        require(whole(self.keep_samples, 0) and self.keep_samples <= self.prompts, f"keep_samples must lie between 0 and prompts = {self.prompts}, got {self.keep_samples}.")

    @property
    def learning_rate(self) -> float:
        """The learning rate in force: `lr` if given, else `default_lr(model)`."""
        return self.lr if self.lr is not None else default_lr(self.model)


@dataclass(frozen=True)
class LMFrontierSettings(LMSource):
    """The sampled reward-KL frontier of a live run's reference model on its held-out prompts (section 6.12)."""

    prompts: int = 64
    """Held-out prompts M (the first M, as the live run's evaluation takes them); 1 to 64."""
    samples: int = 32
    """Replies m sampled from pi_ref per prompt; 2 to 4096 (the frontier's KL stops at log m nats)."""

    def __post_init__(self):
        super().__post_init__()
        require(whole(self.prompts, 1, 64), f"prompts must be a whole number from 1 to 64 (the held-out prompts), got {self.prompts}.")
        require(whole(self.samples, 2, 4096), f"samples must be a whole number from 2 to 4096 per prompt, got {self.samples}.")
