"""The make-pairs and train-reward commands, on the embedded model and on a small synthetic pairs file."""

import argparse
import json
import math

import numpy as np
import pytest

from app.cli.preferences import (
    add_make_pairs_arguments,
    add_train_reward_arguments,
    run_make_pairs,
    run_train_reward,
)
from engines.bradley_terry import bt_prob
from engines.lm.preferences import (
    REPLY_TOKENS,
    PreferencePairs,
    gold_score,
    label_pairs,
    load_pairs,
    load_prompts,
    prompt_table,
    save_pairs,
)
from engines.lm.reward_model import load_reward_model


def make_pairs_cli(argv):
    parser = argparse.ArgumentParser(prog="feedback-lab make-pairs")
    add_make_pairs_arguments(parser)
    return run_make_pairs(parser.parse_args(argv))


def train_reward_cli(argv):
    parser = argparse.ArgumentParser(prog="feedback-lab train-reward")
    add_train_reward_arguments(parser)
    return run_train_reward(parser.parse_args(argv))


@pytest.fixture(scope="module")
def embedded_pairs(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "pairs.npz"
    assert make_pairs_cli(["--pairs", "80", "--tau-label", "0.5", "--seed", "1", "--device", "cpu",
                           "--out", str(path)]) == 0
    return load_pairs(path)


def test_make_pairs_writes_the_lab_data(embedded_pairs):
    pairs = embedded_pairs
    assert len(pairs) == 80 and pairs.ids_a.shape == (80, REPLY_TOKENS) and pairs.model == "embedded"
    assert set(pairs.prompt) <= set(load_prompts())
    np.testing.assert_array_equal(pairs.g_a, gold_score(pairs.text_a))
    np.testing.assert_array_equal(pairs.g_b, gold_score(pairs.text_b))
    assert pairs.tau_label == 0.5 and pairs.seed == 1
    assert not np.array_equal(pairs.ids_a, pairs.ids_b)


def test_labels_in_the_file_follow_equation_12(embedded_pairs):
    # Pool the pairs by gold gap; at each gap the share labelled "a preferred" must lie within
    # 4 binomial standard errors of sigma(gap / tau_label). A gap held by fewer than 20 pairs is skipped.
    pairs = embedded_pairs
    gap = pairs.g_a - pairs.g_b
    checked = 0
    for value in np.unique(gap):
        at = gap == value
        if at.sum() < 20:
            continue
        p = float(bt_prob(value, 0.0, pairs.tau_label))
        se = max(math.sqrt(p * (1 - p) / at.sum()), 1e-12)
        assert abs(pairs.label[at].mean() - p) <= 4 * se + 1e-9
        checked += 1
    assert checked >= 1


def test_make_pairs_refuses_bad_settings(capsys):
    assert make_pairs_cli(["--tau-label", "0", "--out", "x.npz"]) == 2
    err = capsys.readouterr().err
    assert "tau_label must be a positive finite number" in err and err.count("\n") == 1


def synthetic_file(path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    ids_a, ids_b = rng.integers(0, 12, (n, 6)), rng.integers(0, 12, (n, 6))
    g_a, g_b = (ids_a == 5).sum(1).astype(float), (ids_b == 5).sum(1).astype(float)
    blank = np.array([""] * n)
    save_pairs(PreferencePairs(prompt=blank, prompt_ids=prompt_table([[20, 21]] * n), ids_a=ids_a, ids_b=ids_b,
                               text_a=blank, text_b=blank, g_a=g_a, g_b=g_b, label=label_pairs(g_a, g_b, 0.5, seed),
                               model="embedded"), path)
    return path


SMALL = ["--steps", "40", "--d-model", "16", "--layers", "1", "--heads", "2", "--eval-every", "20"]


def test_train_reward_json(tmp_path, capsys):
    pairs = synthetic_file(tmp_path / "pairs.npz")
    out = tmp_path / "rm.pt"
    assert train_reward_cli(["--pairs", str(pairs), "--out", str(out), "--json", *SMALL]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert {"heldout_accuracy", "acc_star", "gold_order_accuracy", "spearman"} <= set(result)
    assert 0 <= result["heldout_accuracy"] <= 1 and 0.5 <= result["acc_star"] <= 1
    assert "step    40/40" in captured.err
    trained = load_reward_model(out)
    assert trained.evaluation.heldout_accuracy == result["heldout_accuracy"]


def test_train_reward_table(tmp_path, capsys):
    pairs = synthetic_file(tmp_path / "pairs.npz")
    assert train_reward_cli(["--pairs", str(pairs), "--out", str(tmp_path / "rm.pt"), *SMALL]) == 0
    out = capsys.readouterr().out
    for row in ("held-out accuracy", "Acc* (the ceiling)", "accuracy against g", "Spearman with g", "saved to"):
        assert row in out


def test_train_reward_refuses_a_corrupt_file(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    assert train_reward_cli(["--pairs", str(bad), "--out", str(tmp_path / "rm.pt")]) == 2
    err = capsys.readouterr().err
    assert "is not a readable pairs file" in err and err.count("\n") == 1
    assert not (tmp_path / "rm.pt").exists()
