"""The `make-pairs` and `train-reward` commands: preference pairs and a reward model from the command line.

    feedback-lab make-pairs --pairs N --tau-label T --out FILE [--model embedded] [--seed 0]
    feedback-lab train-reward --pairs FILE --out FILE [--steps 600] [--json]

`make-pairs` samples pairs of continuations from a language model, scores them with the
gold score g and labels them with a Bradley-Terry rater (seed 001 sections 7 and 8), then
writes the pairs file. `train-reward` trains the reward model on such a file, prints
held-out accuracy beside Acc*, accuracy against the ordering by g, the rank correlation
with g and the probe of hand-written replies, and saves the model with its normaliser.
Options are the fields of the settings dataclasses, with their defaults and one-line help;
an invalid value or an unreadable file is refused with one sentence and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from app.cli.options import add_settings_options, settings_from_args
from engines.lm.preferences import PairSettings, iter_make_pairs, load_pairs, save_pairs
from engines.lm.reward_model import (
    RewardModelSettings,
    iter_train_reward_model,
    load_reward_model,
    probe_rows,
    save_reward_model,
)


def _fail(command: str, error: Exception) -> int:
    """One sentence on stderr and exit status 2, as argparse refuses a bad option."""
    print(f"feedback-lab {command}: error: {error}", file=sys.stderr)
    return 2


def add_make_pairs_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `make-pairs`: every PairSettings field, and --out."""
    add_settings_options(parser, PairSettings)
    parser.add_argument("--out", type=Path, required=True, help="pairs file to write (.npz)")


def run_make_pairs(args: argparse.Namespace) -> int:
    """Sample, score, label and save the pairs; progress on stderr, a summary on stdout."""
    from engines.lm.models import ModelNotAvailable

    try:
        settings = settings_from_args(PairSettings, args)
    except ValueError as error:
        return _fail("make-pairs", error)
    started = time.perf_counter()
    try:
        for progress in iter_make_pairs(settings):
            print(f"\rsampled {progress.done}/{progress.total} continuations", end="", file=sys.stderr, flush=True)
    except (ModelNotAvailable, ValueError) as error:
        print(file=sys.stderr)
        return _fail("make-pairs", error)
    print(file=sys.stderr)
    pairs = progress.pairs
    save_pairs(pairs, args.out)
    seconds = time.perf_counter() - started
    ties = float((pairs.g_a == pairs.g_b).mean())
    print(f"{len(pairs)} pairs from {settings.model} in {seconds:.1f} s ({len(pairs) / seconds:.0f} pairs/s), "
          f"tau_label {settings.tau_label:g}, equal gold scores in {ties:.0%} of pairs; written to {args.out}")
    return 0


def add_train_reward_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `train-reward`: --pairs, --out, --json and every RewardModelSettings field."""

    parser.add_argument("--pairs", type=Path, required=True, help="pairs file made by make-pairs (.npz)")
    parser.add_argument("--out", type=Path, required=True, help="reward model file to write (.pt)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    add_settings_options(parser, RewardModelSettings)


def render_reward(result: dict) -> str:
    """The held-out readings and the probe as plain-text tables."""
    lines = [
        f"held-out pairs        {result['heldout_pairs']}",
        f"held-out accuracy     {result['heldout_accuracy']:.3f} +/- {result['heldout_se']:.3f} (binomial SE)",
        f"Acc* (the ceiling)    {result['acc_star']:.3f}",
        f"accuracy against g    {result['gold_order_accuracy']:.3f}  (pairs whose gold scores differ)",
        f"Spearman with g       {result['spearman']:.3f}  (held-out responses)",
        f"normaliser            mu {result['mu']:.3f}, sigma {result['sigma']:.3f}",
    ]
    if result["probe"]:
        lines += ["", f"{'reply':<28} {'g':>5} {'r_phi':>7}  text"]
        lines += [f"{row['reply']:<28} {row['g']:>5.0f} {row['r_phi']:>7.2f} {row['text']}" for row in result["probe"]]
    lines += ["", f"saved to {result['out']}"]
    return "\n".join(lines)


def run_train_reward(args: argparse.Namespace) -> int:
    """Train on the pairs file, save the model, print the readings (or one JSON object)."""

    try:
        settings = settings_from_args(RewardModelSettings, args)
        pairs = load_pairs(args.pairs)
    except ValueError as error:
        return _fail("train-reward", error)
    for progress in iter_train_reward_model(pairs, settings):
        print(f"step {progress.step:>5}/{progress.steps}  loss {progress.loss:.3f}  "
              f"held-out accuracy {progress.heldout_accuracy:.3f}  (Acc* {progress.acc_star:.3f})",
              file=sys.stderr, flush=True)
    trained = progress.trained
    save_reward_model(trained, args.out)
    load_reward_model(args.out)  # the file just written must read back
    e = trained.evaluation
    result = {
        "heldout_accuracy": e.heldout_accuracy, "acc_star": e.acc_star,
        "gold_order_accuracy": e.gold_order_accuracy, "spearman": e.spearman,
        "heldout_se": e.heldout_se, "heldout_pairs": e.pairs, "tau_label": pairs.tau_label,
        "mu": trained.normalizer.mu, "sigma": trained.normalizer.sigma,
        "probe": probe_rows(trained), "out": str(args.out),
    }
    print(json.dumps(result) if args.json else render_reward(result))
    return 0
