"""Rewards for the live run (seed 000 section 6.11): a score R(x, y) in log-odds for prompt plus reply.

A reward is anything with a `name` and `score(prompts, replies) -> (R, p_positive)`, two
float arrays of shape (N,): R in log-odds units (0 means 50/50) and P(positive) =
1 / (1 + e^-R). The live run adds R at the last token of each reply.

- `vader`: the VADER sentiment lexicon (the vaderSentiment package ships it, no download).
  VADER's compound score c lies in [-1, 1]; we read it as a probability and take its log-odds,

      P(positive) = clip((c + 1) / 2, 1e-3, 1 - 1e-3),    R = log(P / (1 - P)),

  so a neutral text scores R = 0, c = 0.6 scores R = 1.39, and R is capped at
  logit(0.999) = +6.91 (and -6.91), about the range of the seed's classifier (+5.7 at the top).
- `lvwerra/distilbert-imdb`: the seed's classifier, R = logit_pos - logit_neg, as in the seed.
  Any other sequence-classification model (a hub id or a folder) is read the same way.
- `reward-model:PATH`: a reward model saved by the reward-models page or `feedback-lab
  train-reward` (engines/lm/reward_model.py), R = (r_phi - mu) / sigma of seed 001 equation 15.
  It also has `gold(prompts, replies)`, the gold score g of the same replies, which the
  live run reports beside R.
- `register_reward(name, factory)` adds one.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np
import torch

from engines.lm.models import autocast, from_pretrained, transformers_classes
from engines.lm.reward_model import LearnedReward
from engines.lm.settings import REWARD_PREFIX

VADER_CLIP = 1e-3
"""P(positive) from VADER is kept in [VADER_CLIP, 1 - VADER_CLIP], so |R| <= logit(1 - VADER_CLIP) = 6.91."""
SEED_CLASSIFIER = "lvwerra/distilbert-imdb"


class Reward(Protocol):
    name: str

    def score(self, prompts: list[str], replies: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(R, p_positive), each (N,), for the N texts prompt + reply."""


def vader_log_odds(compound) -> tuple[np.ndarray, np.ndarray]:
    """R = logit(P), P = clip((c + 1) / 2, 1e-3, 1 - 1e-3), for VADER compound scores c in [-1, 1]."""
    p = np.clip((np.asarray(compound, dtype=float) + 1.0) / 2.0, VADER_CLIP, 1.0 - VADER_CLIP)
    return np.log(p) - np.log1p(-p), p


class VaderReward:
    """The VADER lexicon's compound sentiment of prompt + reply, on a log-odds scale."""

    name = "vader"

    def __init__(self, device=None):
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

        self.analyzer = SentimentIntensityAnalyzer()

    def score(self, prompts, replies):
        compound = [self.analyzer.polarity_scores(x + y)["compound"] for x, y in zip(prompts, replies)]
        return vader_log_odds(compound)


class ClassifierReward:
    """A sentiment classifier's log-odds R = logit_pos - logit_neg (seed 000 section 6.11)."""

    def __init__(self, name: str = SEED_CLASSIFIER, device: torch.device | str = "cpu", batch: int = 64):
        AutoModelForSequenceClassification, AutoTokenizer = transformers_classes("AutoModelForSequenceClassification", "AutoTokenizer")
        self.name, self.device, self.batch = name, torch.device(device), batch
        self.tokenizer = from_pretrained(AutoTokenizer, name, what="reward classifier")
        self.model = from_pretrained(AutoModelForSequenceClassification, name, what="reward classifier")
        self.model.to(self.device).eval()
        labels = {str(v).lower(): int(k) for k, v in self.model.config.id2label.items()}
        self.pos = next((labels[k] for k in ("positive", "pos", "label_1") if k in labels), 1)
        self.neg = next((labels[k] for k in ("negative", "neg", "label_0") if k in labels), 0)

    @torch.inference_mode()
    def score(self, prompts, replies):
        texts = [x + y for x, y in zip(prompts, replies)]
        R = []
        for i in range(0, len(texts), self.batch):
            enc = self.tokenizer(texts[i : i + self.batch], return_tensors="pt", padding=True, truncation=True)
            with autocast(self.device):
                logits = self.model(**enc.to(self.device)).logits.float()  # (n, labels)
            R.append((logits[:, self.pos] - logits[:, self.neg]).cpu().numpy())
        R = np.concatenate(R).astype(float)
        return R, 1.0 / (1.0 + np.exp(-R))


REWARDS: dict[str, Callable[..., Reward]] = {
    "vader": VaderReward,
    SEED_CLASSIFIER: lambda device="cpu": ClassifierReward(SEED_CLASSIFIER, device),
}


def register_reward(name: str, factory: Callable[..., Reward]) -> None:
    """Make `load_reward(name, device)` call `factory(device)`."""
    REWARDS[name] = factory


def load_reward(name: str, device: torch.device | str = "cpu") -> Reward:
    """The registered reward `name`, a saved reward model 'reward-model:PATH', or any sequence
    classifier (hub id or folder) by that name.

    A missing or damaged reward-model file raises ValueError with one sentence naming it.
    """
    if name in REWARDS:
        return REWARDS[name](device)
    if name.startswith(REWARD_PREFIX):
        return LearnedReward.from_name(name, device)
    return ClassifierReward(name, device)
