"""Seed 001's lab prompts and their one fixed split into training and held-out prompts."""

import pytest

from engines.lm.prompts import FEELING_HELDOUT, feeling_prompts, load_prompts


def test_feeling_prompts_are_split_once():
    train, held = feeling_prompts("train"), feeling_prompts("heldout")
    assert len(held) == FEELING_HELDOUT and len(train) == len(load_prompts()) - FEELING_HELDOUT
    assert set(train) | set(held) == set(load_prompts()) and not set(train) & set(held)
    assert feeling_prompts("heldout") == held  # the same split every time
    with pytest.raises(ValueError):
        feeling_prompts("test")
