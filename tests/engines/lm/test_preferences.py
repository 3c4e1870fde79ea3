"""Seed 001 sections 7 and 8, the lab's data: prompts, the gold score g(y), rater labels and the pairs file."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.bradley_terry import bt_prob
from engines.lm.preferences import (
    NEGATIVE_PATH,
    POSITIVE_PATH,
    PairSettings,
    PreferencePairs,
    gold_counts,
    gold_score,
    label_pairs,
    load_pairs,
    load_prompts,
    load_words,
    prompt_table,
    relabel,
    save_pairs,
    split_pairs,
    words,
)

POSITIVE, NEGATIVE = load_words(POSITIVE_PATH), load_words(NEGATIVE_PATH)


def synthetic_pairs(n=40, T=6, seed=0, tau_label=0.5):
    """Pairs of random token ids whose gold score is read off their texts."""
    rng = np.random.default_rng(seed)
    vocab = np.array(["happy", "sad", "the", "glad", "film", "proud", "awful", "and"])
    ids_a, ids_b = rng.integers(0, len(vocab), (n, T)), rng.integers(0, len(vocab), (n, T))
    text_a = np.array([" ".join(vocab[row]) for row in ids_a])
    text_b = np.array([" ".join(vocab[row]) for row in ids_b])
    g_a, g_b = gold_score(text_a), gold_score(text_b)
    prompts = load_prompts()
    prompt_ids = prompt_table([rng.integers(100, 110, rng.integers(3, 6)) for _ in range(n)])
    return PreferencePairs(prompt=np.array(prompts[:n]), prompt_ids=prompt_ids, ids_a=ids_a, ids_b=ids_b,
                           text_a=text_a, text_b=text_b, g_a=g_a, g_b=g_b,
                           label=label_pairs(g_a, g_b, tau_label, seed), tau_label=tau_label, seed=seed,
                           model="synthetic")


@pytest.mark.parametrize("text, g", [
    ("", 0),
    (" so quiet that nobody spoke.", 0),
    (" happy", 1),
    (" Happy!", 1),  # case does not matter
    (" happy happy", 1),  # distinct positive words: a repeat adds nothing
    (" happy, glad and proud", 3),
    (" happy, glad, proud and lucky", 3),  # at most three count; four list words are not yet crowded
    (" happy glad proud lucky calm", 2),  # the fifth list word costs a point
    (" sad", -1),
    (" sad and sad", -2),  # every negative word counts
    (" happy but sad", 0),
    (" unhappy", -1),  # whole words only: "unhappy" is on the negative list, "happy" is not inside it
    (" happyish", 0),
    (" happy" * 12, 1 - 8),  # one positive word repeated: P = 1, L = 12
    (" sad" * 6, -6 - 2),
    (" didn't feel happy", 1),
])
def test_gold_score_hand_cases(text, g):
    assert gold_score([text])[0] == g


def test_gold_counts_and_word_split():
    assert words(" She didn't, REALLY.") == ["she", "didn't", "really"]
    P, N, L = gold_counts([" happy glad happy sad", ""])
    assert (P.tolist(), N.tolist(), L.tolist()) == ([2, 0], [1, 0], [4, 0])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["happy", "glad", "proud", "lucky", "sad", "awful", "the", "film", "and"]),
                max_size=20), st.randoms())
def test_gold_score_properties(ws, random):
    g = gold_score([" ".join(ws)])[0]
    assert g <= 3
    shuffled = list(ws)
    random.shuffle(shuffled)
    assert gold_score([" ".join(shuffled)])[0] == g  # a bag of words
    assert gold_score([" ".join(ws + ["the"])])[0] == g  # a word on neither list changes nothing
    P = len({w for w in ws if w in POSITIVE})
    N = sum(w in NEGATIVE for w in ws)
    L = sum(w in POSITIVE or w in NEGATIVE for w in ws)
    assert g == min(P, 3) - N - max(0, L - 4)  # the rule written out once more, per word


def test_assets():
    prompts = load_prompts()
    assert len(prompts) >= 200 and len(set(prompts)) == len(prompts)
    assert "My sister opened the letter and felt so" in prompts
    assert all(len(p.split()) == 8 for p in prompts)  # eight-word openings
    assert all(p.split()[-1] in {"so", "very", "really"} for p in prompts)  # each stops before a feeling
    assert len(POSITIVE) >= 50 and len(NEGATIVE) >= 50 and not POSITIVE & NEGATIVE
    assert all(w == w.lower() and words(w) == [w] for w in POSITIVE | NEGATIVE)


def test_label_frequencies_follow_equation_12():
    # 20000 pairs at each of the gaps 0, 1, 2 and -3; the label frequency of each gap must lie within
    # 4 binomial standard errors sqrt(p (1 - p) / n) of sigma(gap / tau_label).
    n, tau = 20000, 0.5
    gaps = np.repeat([0.0, 1.0, 2.0, -3.0], n)
    labels = label_pairs(gaps, 0.0, tau, seed=3)
    for gap in (0.0, 1.0, 2.0, -3.0):
        p = float(bt_prob(gap, 0.0, tau))
        se = math.sqrt(p * (1 - p) / n)
        assert abs(labels[gaps == gap].mean() - p) <= 4 * se
    assert np.array_equal(label_pairs(gaps, 0.0, tau, seed=3), labels)  # seeded


def test_relabel_and_split():
    pairs = synthetic_pairs(n=50)
    noisy = relabel(pairs, 4.0, seed=1)
    assert noisy.tau_label == 4.0 and np.array_equal(noisy.ids_a, pairs.ids_a) and np.array_equal(noisy.g_b, pairs.g_b)
    train, held = split_pairs(pairs, 0.2, seed=0)
    assert (len(train), len(held)) == (40, 10)
    together = np.sort(np.r_[train.text_a, held.text_a])
    assert np.array_equal(together, np.sort(pairs.text_a))
    ids_w, ids_l = pairs.winner_loser()
    assert np.array_equal(np.where(pairs.label[:, None], ids_w, ids_l), pairs.ids_a)


def test_file_round_trip(tmp_path):
    pairs = synthetic_pairs()
    path = tmp_path / "pairs.npz"
    save_pairs(pairs, path)
    back = load_pairs(path)
    for name in ("prompt", "prompt_ids", "ids_a", "ids_b", "text_a", "text_b", "g_a", "g_b", "label"):
        assert np.array_equal(getattr(back, name), getattr(pairs, name)), name
    assert (back.tau_label, back.seed, back.model) == (0.5, 0, "synthetic")


def test_corrupt_files_are_refused_with_one_sentence(tmp_path):
    path = tmp_path / "pairs.npz"
    save_pairs(synthetic_pairs(), path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a pairs file at all" * 10)
    flipped = tmp_path / "flipped.npz"
    flipped.write_bytes(data[:200] + bytes(b ^ 0xFF for b in data[200:400]) + data[400:])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    for bad, says in [(truncated, "truncated"), (garbage, "truncated"), (flipped, "truncated"),
                      (foreign, "not a Feedback Lab pairs file"), (tmp_path / "missing.npz", "no pairs file")]:
        with pytest.raises(ValueError, match=says) as error:
            load_pairs(bad)
        message = str(error.value)
        assert str(bad) in message and message.count(". ") == 0 and message.endswith(".")


def test_inconsistent_file_is_refused(tmp_path):
    path = tmp_path / "pairs.npz"
    save_pairs(synthetic_pairs(), path)
    with np.load(path) as data:
        stored = dict(data)
    stored["g_a"] = stored["g_a"][:-1]
    np.savez(path, **stored)
    with pytest.raises(ValueError, match="inconsistent: g_a must hold one entry per pair"):
        load_pairs(path)
    del stored["label"]
    np.savez(path, **stored)
    with pytest.raises(ValueError, match="lacks label"):
        load_pairs(path)


@pytest.mark.parametrize("bad", [dict(pairs=0), dict(tau_label=0.0), dict(tau_label=math.nan), dict(T=0),
                                 dict(seed=-1)])
def test_invalid_settings_raise(bad):
    with pytest.raises(ValueError):
        PairSettings(**bad)
