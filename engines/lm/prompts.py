"""The prompts a language model is asked to continue, as text (no torch).

Two sets: the bundled movie-review openings (`review_corpus.bundled_prompts`, seed 000
section 6.11's prompts) and seed 001's lab prompts, eight-word openings that stop just
before a feeling ("My sister opened the letter and felt so"), read from
`assets/preferences/prompts.txt`. The lab prompts are split once into the ones a run
trains on and the FEELING_HELDOUT it is evaluated on.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

import assets
from engines.settings import require

PROMPTS_PATH = assets.path("preferences", "prompts.txt")
FEELING_HELDOUT = 64
"""Lab prompts held out for evaluation (the rest are trained on), as many as the most eval_prompts allows."""
FEELING_SPLIT_SEED = 0
"""Seed of the one fixed permutation that splits the lab prompts, so every run holds out the same ones."""


def read_lines(path: Path) -> tuple[str, ...]:
    """The non-empty lines of a text file that do not start with '#', stripped."""
    lines = (line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines())
    return tuple(line for line in lines if line and not line.startswith("#"))


@functools.cache
def load_prompts(path: Path = PROMPTS_PATH) -> tuple[str, ...]:
    """The lab's prompts, one a line: eight-word openings that stop before a feeling."""
    return read_lines(path)


def feeling_prompts(split: str) -> list[str]:
    """Seed 001's lab prompts, split once: FEELING_HELDOUT of them ('heldout') by a fixed permutation, the rest 'train'."""
    require(split in ("train", "heldout"), f"the prompt split must be 'train' or 'heldout', got {split!r}.")
    prompts = load_prompts()
    held = np.zeros(len(prompts), dtype=bool)
    held[np.random.default_rng(FEELING_SPLIT_SEED).permutation(len(prompts))[:FEELING_HELDOUT]] = True
    return [p for p, h in zip(prompts, held) if h == (split == "heldout")]
