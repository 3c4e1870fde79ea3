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


SENTENCE_END = (".", "!", "?", "…")
"""How a continuation that ends its text (not cut by the token limit) may end."""

PAIRS_CSS = """
.fl-pairs { border-collapse: collapse; width: 100%; font-size: 0.95em; }
.fl-pairs th, .fl-pairs td { border-bottom: 1px solid #dee2e6; padding: 0.35em 0.5em; text-align: left; vertical-align: top;
  white-space: normal; overflow-wrap: anywhere; }
.fl-pairs th { overflow-wrap: normal; }
.fl-pairs .fl-num { text-align: right; white-space: nowrap; }
.fl-prompt { font-style: italic; }
@media (max-width: 767.98px) {
  .fl-pairs { font-size: 0.8em; }
  .fl-pairs th, .fl-pairs td { padding: 0.25em 0.15em; }
}
"""
"""Styles of the page of pairs (`pairs_page_html`): whole texts, wrapped, under headers that wrap between words (on a
phone too)."""


def gold(g: float) -> str:
    """A gold score as the page writes it: g is a whole number, so "+2", "0" or "−1"."""
    g = int(round(float(g)))
    return f"+{g}" if g > 0 else ("0" if g == 0 else f"−{-g}")


def reply_html(prompt: str, text: str) -> str:
    """A continuation as the language model wrote it: after its prompt (in italics), joined as the model joined them, so a
    first token that carries no space reads as the model wrote it; an ellipsis where the token limit cut it."""
    text = str(text)
    cut = "" if text.rstrip().endswith(SENTENCE_END) else "…"
    return f'<span class="fl-prompt">{html.escape(str(prompt))}</span>{html.escape(text)}{cut}'


def pair_html(pairs, i: int, p_a: float) -> str:
    """Pair i in full: the prompt, both continuations with their gold scores after it, the label and `p_a`, its
    probability by equation 12."""
    winner = "a" if pairs.label[i] else "b"
    prompt = pairs.prompt[i]
    return (
        f'<div class="fl-pair"><p><strong>Pair {i}.</strong> Prompt: “{html.escape(str(prompt))}”</p>'
        f'<p><strong>a</strong> (g = {gold(pairs.g_a[i])}): {reply_html(prompt, pairs.text_a[i])}</p>'
        f'<p><strong>b</strong> (g = {gold(pairs.g_b[i])}): {reply_html(prompt, pairs.text_b[i])}</p>'
        f"<p>The rater preferred <strong>{winner}</strong>; by equation 12 it prefers a with probability {p_a:.3f}.</p></div>"
    )


def pairs_page_html(page: dict) -> str:
    """A page of pairs (the columns of app.pages.reward_model.figures.pairs_page) as a table of whole texts: each
    continuation after its prompt, wrapped, with its gold score, the label and P(a ≻ b)."""
    head = ("#", "prompt x, then continuation a", "g(a)", "prompt x, then continuation b", "g(b)", "preferred", "P(a ≻ b)")
    rows = []
    for k in range(len(page["index"])):
        prompt = page["prompt"][k]
        rows.append(
            f'<tr><td class="fl-num">{int(page["index"][k])}</td><td>{reply_html(prompt, page["text_a"][k])}</td>'
            f'<td class="fl-num">{gold(page["g_a"][k])}</td><td>{reply_html(prompt, page["text_b"][k])}</td>'
            f'<td class="fl-num">{gold(page["g_b"][k])}</td><td class="fl-num">{html.escape(str(page["preferred"][k]))}</td>'
            f'<td class="fl-num">{float(page["p_a"][k]):.3f}</td></tr>')
    header = "".join(f"<th>{h}</th>" for h in head)
    return f'<table class="fl-pairs"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
