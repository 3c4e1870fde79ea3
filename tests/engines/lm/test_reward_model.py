"""Seed 001 section 8: the reward model on synthetic token ids, its three held-out readings, the probe, the file."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.bradley_terry import oracle_accuracy
from engines.lm.preferences import PreferencePairs, gold_score, label_pairs, prompt_table, split_pairs
from engines.lm.reward_model import (
    PAD,
    PROBE_REPLIES,
    READOUT,
    REWARD_PREFIX,
    UNKNOWN,
    LearnedReward,
    RewardModel,
    RewardModelSettings,
    build_vocabulary,
    encode_tokens,
    gold_order_accuracy,
    iter_train_reward_model,
    join_sequences,
    load_reward_model,
    pairwise_accuracy,
    probe,
    rankdata,
    save_reward_model,
    spearman,
    tau_sweep,
)

GOOD_TOKEN = 5
"""In the synthetic pairs, g(y) is the number of times this token id occurs in y."""


def synthetic_pairs(n=2000, T=6, V=12, tau_label=0.5, seed=0):
    """Random replies over V token ids after random prompts of 2 or 3 ids; g counts GOOD_TOKEN."""
    rng = np.random.default_rng(seed)
    prompt_ids = prompt_table([rng.integers(V, V + 5, k) for k in rng.integers(2, 4, n)])
    ids_a, ids_b = rng.integers(0, V, (n, T)), rng.integers(0, V, (n, T))
    g_a, g_b = (ids_a == GOOD_TOKEN).sum(1).astype(float), (ids_b == GOOD_TOKEN).sum(1).astype(float)
    blank = np.array([""] * n)
    return PreferencePairs(prompt=blank, prompt_ids=prompt_ids, ids_a=ids_a, ids_b=ids_b, text_a=blank,
                           text_b=blank, g_a=g_a, g_b=g_b, label=label_pairs(g_a, g_b, tau_label, seed),
                           tau_label=tau_label, seed=seed, model="synthetic")


SMALL = RewardModelSettings(heldout=0.5, d_model=16, layers=1, heads=2, dropout=0.0, steps=150, batch=64, lr=3e-3,
                            eval_every=50, seed=0)
"""Small enough to train in a few seconds on two cores."""


@pytest.fixture(scope="module")
def run():
    return list(iter_train_reward_model(synthetic_pairs(), SMALL))


def test_training_reaches_the_ceiling(run):
    # 1000 held-out pairs: the accuracy must beat chance by 4 binomial standard errors and lie within
    # 4 of them of Acc* (equation 13), the best any model can expect on these labels.
    result = run[-1].trained.evaluation
    se = result.heldout_se
    assert result.pairs == 1000 and se == pytest.approx(math.sqrt(result.heldout_accuracy
                                                                  * (1 - result.heldout_accuracy) / 1000))
    assert result.heldout_accuracy > 0.5 + 4 * se
    assert abs(result.heldout_accuracy - result.acc_star) <= 4 * se
    assert result.gold_order_accuracy > 0.85 and result.spearman > 0.8


def test_progress_reports(run):
    assert [p.step for p in run] == [50, 100, 150]
    assert all(p.trained is None for p in run[:-1]) and run[-1].trained is not None
    assert run[0].loss < math.log(2) + 0.05 and run[-1].loss < run[0].loss
    assert len({p.acc_star for p in run}) == 1
    assert run[-1].heldout_accuracy == run[-1].trained.evaluation.heldout_accuracy


def test_normalizer_is_fitted_on_heldout_responses(run):
    trained = run[-1].trained
    _, held = split_pairs(synthetic_pairs(), SMALL.heldout, SMALL.seed)
    r = np.r_[trained(held.prompt_ids, held.ids_a), trained(held.prompt_ids, held.ids_b)]
    assert r.mean() == pytest.approx(0.0, abs=1e-9) and r.std() == pytest.approx(1.0)


def test_vocabulary_threshold():
    ids = [np.array([[7, 7, 3, -1], [9, 3, 4, -1]])]
    vocab = build_vocabulary(ids, min_count=2)
    assert vocab.tolist() == [3, 7]  # 9 and 4 occur once
    assert encode_tokens(np.array([3, 7, 9, 4, 123, -1]), vocab).tolist() == [3, 4, UNKNOWN, UNKNOWN, UNKNOWN, PAD]
    assert build_vocabulary(ids, min_count=1).tolist() == [3, 4, 7, 9]


def test_rare_tokens_look_the_same(run):
    model = run[-1].trained.model
    prompt = np.array([[12, 13]] * 3)
    scores = model.score(prompt, np.array([[1, 2, 3, 4, 5, 1000], [1, 2, 3, 4, 5, 2000], [1, 2, 3, 4, 5, 6]]))
    assert scores[0] == scores[1] != scores[2]  # 1000 and 2000 have no embedding: one shared unknown id


def test_join_sequences_against_a_loop():
    prompts = prompt_table([[1, 2, 3], [4], [5, 6]])
    replies = np.array([[7, 8], [9, 10], [11, 12]])
    joined, lengths = join_sequences(prompts, replies)
    for row, p, r, n in zip(joined, [[1, 2, 3], [4], [5, 6]], replies, lengths):
        assert row[:n].tolist() == p + r.tolist() and (row[n:] == -1).all()


def test_padding_never_reaches_the_score(run):
    model = run[-1].trained.model
    pairs = synthetic_pairs(n=20, seed=1)
    wide = np.concatenate([pairs.prompt_ids, np.full((20, 3), -1)], axis=1)
    assert np.allclose(model.score(pairs.prompt_ids, pairs.ids_a), model.score(wide, pairs.ids_a), atol=1e-5)
    one_by_one = [model.score(pairs.prompt_ids[i:i + 1], pairs.ids_a[i:i + 1])[0] for i in range(20)]
    assert np.allclose(one_by_one, model.score(pairs.prompt_ids, pairs.ids_a), atol=1e-5)


def test_spearman_hand_example_with_ties():
    assert rankdata([10, 20, 20, 5]).tolist() == [2.0, 3.5, 3.5, 1.0]
    # ranks of x: 1, 2.5, 2.5, 4; of y: 1, 3, 2, 4. Centred: (-1.5, 0, 0, 1.5) and (-1.5, 0.5, -0.5, 1.5),
    # so rho = 4.5 / sqrt(4.5 * 5) = 3 / sqrt(10).
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(3 / math.sqrt(10))
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(9))))
def test_spearman_without_ties_matches_the_textbook_formula(perm):
    n = len(perm)
    d = np.arange(n) - np.array(perm)
    assert spearman(np.arange(n), perm) == pytest.approx(1 - 6 * (d**2).sum() / (n * (n**2 - 1)))


def test_accuracies_by_hand():
    r_a, r_b = np.array([1.0, 0.0, 2.0, 3.0]), np.array([0.0, 1.0, 2.0, 1.0])
    label = np.array([True, True, False, False])
    assert pairwise_accuracy(r_a, r_b, label) == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert gold_order_accuracy(r_a, r_b, [1, 0, 3, 5], [0, 0, 1, 6]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert math.isnan(gold_order_accuracy(r_a, r_b, [1, 1, 1, 1], [1, 1, 1, 1]))


def test_save_load_round_trip(run, tmp_path):
    trained = run[-1].trained
    path = tmp_path / "rm.pt"
    save_reward_model(trained, path)
    assert isinstance(torch.load(path, weights_only=True), dict)  # plain content, no pickled classes
    back = load_reward_model(path)
    pairs = synthetic_pairs(n=50, seed=2)
    assert np.array_equal(back(pairs.prompt_ids, pairs.ids_a), trained(pairs.prompt_ids, pairs.ids_a))
    assert back.normalizer == trained.normalizer and back.evaluation == trained.evaluation
    assert back.settings == trained.settings and back.lm == "synthetic"
    assert np.array_equal(back.model.vocab.numpy(), trained.model.vocab.numpy())


def test_corrupt_model_files_are_refused(run, tmp_path):
    path = tmp_path / "rm.pt"
    save_reward_model(run[-1].trained, path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00\x01 nothing here" * 20)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    broken = tmp_path / "broken.pt"
    stored = torch.load(path, weights_only=True)
    del stored["state_dict"]["head.weight"]
    torch.save(stored, broken)
    for bad, says in [(truncated, "truncated or corrupt"), (garbage, "truncated or corrupt"),
                      (foreign, "not a Feedback Lab reward model"), (broken, "incomplete or inconsistent"),
                      (tmp_path / "missing.pt", "no reward model file")]:
        with pytest.raises(ValueError, match=says) as error:
            load_reward_model(bad)
        assert str(bad) in str(error.value) and str(error.value).endswith(".")


def test_probe_runs(run):
    # A toy tokenizer: one id per distinct word, so the trained model has embeddings for none of them.
    table = {}

    def encode(text):
        return [table.setdefault(w, 100 + len(table)) for w in text.split()]

    rows = probe(run[-1].trained, encode)
    assert [r.name for r in rows] == [name for name, _ in PROBE_REPLIES]
    assert [r.g for r in rows] == gold_score([text for _, text in PROBE_REPLIES]).tolist()
    g = {r.name: r.g for r in rows}
    assert g["one positive word repeated"] == 1 - 8 and g["only positive words"] == 3 - 7
    assert g["three positive words"] == 3 and g["neutral"] == 0
    assert all(np.isfinite(r.r_phi) and r.unknown == len(encode(r.text)) for r in rows)


def test_tau_sweep_acc_star_falls():
    pairs = synthetic_pairs(n=300)
    quick = RewardModelSettings(heldout=0.5, d_model=8, layers=1, heads=1, dropout=0.0, steps=5, eval_every=5)
    rows = tau_sweep(pairs, (0.25, 1.0, 4.0), quick)
    assert [r.tau_label for r in rows] == [0.25, 1.0, 4.0]
    ceilings = [r.evaluation.acc_star for r in rows]
    assert ceilings[0] > ceilings[1] > ceilings[2] > 0.5
    _, held = split_pairs(pairs, 0.5, 0)
    assert ceilings[1] == pytest.approx(float(oracle_accuracy(held.g_a, held.g_b, 1.0)))


@pytest.mark.parametrize("bad", [dict(heldout=0.0), dict(heldout=1.0), dict(min_count=0), dict(d_model=30, heads=4),
                                 dict(layers=0), dict(dropout=1.0), dict(steps=0), dict(lr=-1.0),
                                 dict(lr=math.inf), dict(seed=-1), dict(batch=0)])
def test_invalid_settings_raise(bad):
    with pytest.raises(ValueError):
        RewardModelSettings(**bad)


def test_a_model_reads_its_last_token():
    model = RewardModel(np.arange(10), max_len=8, d_model=8, layers=1, heads=1, dropout=0.0)
    x, lengths = model.inputs(np.array([[1, 2, -1]]), np.array([[3, 4]]))
    assert x.tolist() == [[4, 5, 6, 7, READOUT, PAD]] and lengths.tolist() == [5]  # language-model id i -> i + 3
    long_x, long_len = model.inputs(np.array([[1, 2, 3, 4, 5]]), np.array([[6, 7, 8, 9]]))
    assert long_len.tolist() == [8] and long_x.tolist() == [[6, 7, 8, 9, 10, 11, 12, READOUT]]  # the last 7, read-out


def test_learned_reward_for_the_live_run(run, tmp_path):
    trained = dataclasses.replace(run[-1].trained, lm="embedded")  # read texts with the embedded tokenizer
    path = tmp_path / "rm.pt"
    save_reward_model(trained, path)
    reward = LearnedReward.from_name(f"{REWARD_PREFIX}{path}")
    prompts, replies = ["My sister opened the letter and felt so"] * 2, [" happy.", " sad and tired."]
    R, p = reward.score(prompts, replies)
    assert R.shape == p.shape == (2,) and np.allclose(p, 1 / (1 + np.exp(-R)))
    ids = reward.tokenizer(prompts)["input_ids"], reward.tokenizer(replies)["input_ids"]
    assert np.allclose(R, trained(prompt_table(ids[0]), prompt_table(ids[1])))
    assert reward.gold(prompts, replies).tolist() == [1.0, -2.0]
    with pytest.raises(ValueError, match="reward-model:PATH"):
        LearnedReward.from_name(str(path))
