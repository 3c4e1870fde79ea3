"""Sentences about preference pairs and a reward model trained on them: the data set, one pair, the readings.

The functions read engines.lm.preferences.PreferencePairs and engines.lm.reward_model.TrainedRewardModel
(their attributes only); what equation 12 or 13 computes is handed in by the page.
"""

from __future__ import annotations

import html
from pathlib import Path


def pairs_summary(pairs, source: str, acc_star: float, saved: Path | None = None) -> str:
    """The sentence about the data set: where it came from (`source`, which may quote a file's name), ties, and the
    ceiling Acc* on all of it; and, once these pairs are `saved`, where to."""
    ties = float((pairs.g_a == pairs.g_b).mean())
    return (
        f'<p class="fl-pairs-summary">{len(pairs)} pairs {html.escape(source)}, labelled at τ_label = {pairs.tau_label:.2f} '
        f"(label seed {pairs.seed}): equal gold scores in {100 * ties:.0f}% of pairs, y_a preferred in {100 * pairs.label.mean():.0f}%; "
        f"on all of them <strong>Acc* = {acc_star:.3f}</strong>.</p>"
        + ("" if saved is None else f"<p>Pairs saved to <code>{html.escape(str(saved))}</code>.</p>")
    )


def training_summary(trained) -> str:
    """The sentence under the training curves: the three held-out readings beside the ceiling, and the normaliser."""
    e = trained.evaluation
    return (
        f'<p class="fl-train-summary">On {e.pairs} held-out pairs the reward model predicts the label with accuracy '
        f"<strong>{e.heldout_accuracy:.3f} ± {e.heldout_se:.3f}</strong> (one binomial standard error) against "
        f"the ceiling <strong>Acc* = {e.acc_star:.3f}</strong>; it orders pairs with different gold scores as g does "
        f"in {100 * e.gold_order_accuracy:.1f}% of them, and its rank correlation with g is {e.spearman:.3f}. "
        f"Normaliser (equation 15): μ = {trained.normalizer.mu:.3f}, ς = {trained.normalizer.sigma:.3f}.</p>"
    )


def pair_html(pairs, i: int, p_a: float) -> str:
    """Pair i in full: the prompt, both continuations with their gold scores, the label and `p_a`, its probability
    by equation 12."""
    winner = "a" if pairs.label[i] else "b"
    return (
        f'<div class="fl-pair"><p><strong>Pair {i}.</strong> Prompt: “{html.escape(str(pairs.prompt[i]))}”</p>'
        f"<p><strong>a</strong> (g = {pairs.g_a[i]:+.0f}): {html.escape(str(pairs.text_a[i]))}</p>"
        f"<p><strong>b</strong> (g = {pairs.g_b[i]:+.0f}): {html.escape(str(pairs.text_b[i]))}</p>"
        f"<p>The rater preferred <strong>{winner}</strong>; by equation 12 it prefers a with probability {p_a:.3f}.</p></div>"
    )
