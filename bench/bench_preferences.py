"""Preference timings: 2,000 pairs from the embedded model on CPU (goal under 60 s), and reward-model training."""

from __future__ import annotations

import time

import torch

from engines.lm.models import load_causal_lm
from engines.lm.preferences import PairSettings, make_pairs
from engines.lm.reward_model import RewardModelSettings, train_reward_model


def main() -> None:
    policy, tokenizer = load_causal_lm("embedded", torch.device("cpu"))
    settings = PairSettings(pairs=2000, device="cpu")
    started = time.perf_counter()
    pairs = make_pairs(settings, policy, tokenizer)
    seconds = time.perf_counter() - started
    print(f"make-pairs {settings.pairs} pairs x 2 x {settings.T} tokens, embedded model, CPU "
          f"({torch.get_num_threads()} threads): {seconds:.1f} s, {settings.pairs / seconds:.0f} pairs/s (goal < 60 s)")
    reward = RewardModelSettings()
    started = time.perf_counter()
    trained = train_reward_model(pairs, reward)
    seconds = time.perf_counter() - started
    e = trained.evaluation
    print(f"train-reward {reward.steps} steps x {reward.batch} pairs on {len(pairs) - e.pairs} pairs: {seconds:.1f} s "
          f"({1000 * seconds / reward.steps:.0f} ms/step); held-out accuracy {e.heldout_accuracy:.3f} "
          f"+/- {e.heldout_se:.3f}, Acc* {e.acc_star:.3f}")


if __name__ == "__main__":
    main()
