"""Seed 000 section 6.11's reward: log-odds of a positive review, from VADER (bundled) or a classifier."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.lm.rewards import REWARDS, VADER_CLIP, VaderReward, load_reward, register_reward, vader_log_odds

ROOT = Path(__file__).resolve().parents[3]


def test_vader_mapping_values():
    R, p = vader_log_odds([0.0, 0.6, -0.6, 1.0, -1.0, 0.999])
    np.testing.assert_allclose(p, [0.5, 0.8, 0.2, 0.999, 0.001, 0.999])
    np.testing.assert_allclose(R, [0.0, math.log(4), -math.log(4), math.log(999), -math.log(999), math.log(999)])
    assert math.log(999) == pytest.approx(6.907, abs=5e-4)  # the cap |R| <= logit(1 - 1e-3)


@settings(max_examples=50, deadline=None)
@given(st.floats(-1, 1), st.floats(-1, 1))
def test_vader_mapping_is_a_monotone_log_odds(a, b):
    (Ra, Rb), (pa, pb) = vader_log_odds([a, b])
    assert VADER_CLIP <= pa <= 1 - VADER_CLIP
    assert 1 / (1 + math.exp(-Ra)) == pytest.approx(pa, rel=1e-9)  # P(positive) = sigma(R)
    if a < b:
        assert Ra <= Rb


def test_vader_scores_prompt_plus_reply():
    reward = load_reward("vader")
    prompts = ["The film was", "The film was", "The film was"]
    replies = [" wonderful and superb, a masterpiece.", " boring, dull and a terrible waste of time.", " about a farmer in Kansas."]
    R, p = reward.score(prompts, replies)
    assert R[0] > 2 and R[1] < -2 and R[2] == 0.0
    compound = [reward.analyzer.polarity_scores(x + y)["compound"] for x, y in zip(prompts, replies)]
    np.testing.assert_allclose((R, p), vader_log_odds(compound))


def test_register_a_reward():
    class Length:
        name = "length"

        def __init__(self, device="cpu"):
            pass

        def score(self, prompts, replies):
            R = np.array([float(len(y)) for y in replies])
            return R, 1 / (1 + np.exp(-R))

    register_reward("length", Length)
    try:
        R, _ = load_reward("length").score(["a"], ["abc"])
        assert R[0] == 3.0
    finally:
        del REWARDS["length"]
    assert isinstance(load_reward("vader"), VaderReward)


@pytest.mark.server
def test_classifier_offline_gives_one_clear_sentence(tmp_path):
    """No network and an empty cache: the seed's classifier is refused in one sentence."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    code = (
        "from engines.lm.rewards import load_reward\n"
        "from engines.lm.models import ModelNotAvailable\n"
        "try:\n    load_reward('lvwerra/distilbert-imdb')\nexcept ModelNotAvailable as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.stdout.strip() == (
        "The reward classifier 'lvwerra/distilbert-imdb' is not on this machine and cannot be downloaded "
        "without network; use the 'vader' reward."
    )


# ----------------------------------------------------------------------------- a saved reward model as the reward


@pytest.fixture(scope="module")
def saved_reward_model(tmp_path_factory):
    """A reward model trained for three steps on 24 pairs from the embedded model, saved to a file."""
    from engines.lm.preferences import PairSettings, make_pairs
    from engines.lm.reward_model import RewardModelSettings, save_reward_model, train_reward_model

    pairs = make_pairs(PairSettings(pairs=24, T=6, device="cpu"))
    trained = train_reward_model(pairs, RewardModelSettings(d_model=8, layers=1, heads=1, steps=3, batch=8, eval_every=3))
    path = tmp_path_factory.mktemp("reward-models") / "rm.pt"
    save_reward_model(trained, path)
    return path, trained


def test_load_reward_reads_a_saved_reward_model(saved_reward_model):
    from engines.lm.preferences import gold_score, prompt_table
    from engines.lm.reward_model import LearnedReward

    path, trained = saved_reward_model
    reward = load_reward(f"reward-model:{path}")
    assert isinstance(reward, LearnedReward) and reward.name == f"reward-model:{path}"
    prompts, replies = ["My sister opened the letter and felt so"] * 2, [" happy and proud.", " sad."]
    R, p = reward.score(prompts, replies)
    ids = [reward.tokenizer(texts)["input_ids"] for texts in (prompts, replies)]
    np.testing.assert_allclose(R, trained(prompt_table(ids[0]), prompt_table(ids[1])))  # normalised, equation 15
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-R)))
    np.testing.assert_array_equal(reward.gold(prompts, replies), gold_score(replies))


def test_missing_or_corrupt_reward_model_is_one_sentence(tmp_path):
    with pytest.raises(ValueError, match=r"^there is no reward model file at .*nothere\.pt\.$"):
        load_reward(f"reward-model:{tmp_path / 'nothere.pt'}")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match=r"corrupt\.pt is not a readable reward model file"):
        load_reward(f"reward-model:{corrupt}")
