"""The preferences page's words: its fixed texts and questions, and the sentences it writes from the numbers.

Everything here is text about seed 001 section 7 (the Bradley-Terry rater and the accuracy ceiling Acc*); the
numbers come from engines/bradley_terry.py, and app/pages/preferences/__init__.py shows them.
"""

from __future__ import annotations

from app.pages.preferences.figures import SEED_GAPS
from engines.bradley_terry import bt_prob, oracle_accuracy

WHY = (
    "The policy-gradient pages took a reward for every response as given. For what only people can judge, "
    "such as how helpful a reply is, the reward has to be collected from people, and how it is collected "
    "decides what can be learned from it. This page is about the model that links people's judgments to a "
    "hidden quality, and the limit that model sets: with noisy raters no reward model, however large, "
    "predicts every label."
)
INTRO = (
    "Bradley and Terry's model gives each response a latent quality u; a rater with label "
    "temperature τ_label prefers a to b with a probability that grows with the gap u_a − u_b. "
    "A low temperature is a consistent rater, a high one a coin."
)
EQUATION = (
    r"P(a \succ b) = \sigma\!\Big(\frac{u_a - u_b}{\tau_{\text{label}}}\Big), \qquad "
    r"\mathrm{Acc}^\star = \mathbb{E}_{\text{pairs}}\big[\max(p,\ 1-p)\big]"
)
NOTICE = (
    "Equal-quality pairs stay at 0.5 whatever the temperature, so Acc* never reaches 1 when ties are "
    "common; and the accuracy of the true quality on a sampled set scatters around Acc* by about one "
    "binomial standard error, never far above it."
)
GAP_CHOICES = {"gaps 0, 1, 2 (Module 9's check-yourself)": "seed", "gaps from |N(0, s)|": "normal"}
"""The quality gaps' buttons: label -> the setting's value (engines.bradley_terry.LabelledSetSettings.gaps)."""
METRICS = {
    "ceiling": ("Acc* (the ceiling)", "{value:.3f}"),
    "accuracy": ("accuracy of u on the sample", "{value:.3f}"),
    "se": ("binomial standard error", "{value:.3f}"),
    "expected": ("Acc* of the sampled gaps", "{value:.3f}"),
}
"""The numbers under the summary: key -> (label, format), for widgets.metrics.MetricRow."""
PROBABILITY_TITLE = "P(a ≻ b) against the gap"
CEILING_TITLE = "The ceiling Acc* against τ_label"
GUARDED_NOTE = "the ceiling and the sampled labels"
"""What the ceiling question guards, as its placeholder names it."""


def check_yourself_text() -> str:
    """Section 7's check-yourself, computed: gaps 0, 1, 2 at tau_label = 0.5 give Acc* = 0.788."""
    p = bt_prob(SEED_GAPS, 0.0, 0.5)
    acc = float(oracle_accuracy(SEED_GAPS, 0.0, 0.5))
    return (
        "By equation 12 the three pairs are labelled the better way with probabilities "
        f"σ(0) = {p[0]:.1f}, σ(2) = {p[1]:.3f} and σ(4) = {p[2]:.3f}; each is already the larger of p and 1 − p, so "
        f"Acc* = ({p[0]:.1f} + {p[1]:.3f} + {p[2]:.3f}) / 3 = **{acc:.3f}**. The tie is a coin flip for anyone, and "
        "even the clear pairs are now and then labelled the other way. A reward model at 0.79 on a large set with "
        "the same gaps is at the ceiling, not mediocre: a bigger model cannot honestly do better, and one that did "
        "by a clear margin would point to overfitting or to labels leaking into training."
    )


COMPARE_QUESTION = (
    "You need a reward that only people can give, such as how helpful a response is. Would you ask raters to "
    "score each response from 1 to 10, or to say which of two responses is better?"
)
COMPARE_CHOICES = {"scores": "a score from 1 to 10 for each response", "comparisons": "which of two responses is better"}
COMPARE_EXPLANATION = (
    "Comparisons, as most preference data is collected. Raters use a scale differently (one rater's 6 is "
    "another's 8), drift during a session, and find absolute judgments hard; asked which of two is better, "
    "most people answer quickly and consistently. The price is that a comparison is a relative label: a model "
    "is needed to turn choices into one number per response, which is what Bradley–Terry does below. "
    "Comparisons can mislead too: two near-equal responses get close to a coin flip, and what raters prefer "
    "is not always what we want."
)
CEILING_QUESTION = (
    "A held-out set has three pairs with quality gaps u_a − u_b of 0, 1 and 2, labelled by a rater with "
    "τ_label = 0.5. What is the best accuracy any model can reach on these labels, Acc*? A colleague calls a "
    "reward model at 0.79 mediocre; is it?"
)


def ceiling_choices() -> dict[str, str]:
    """The choices of the Acc* question; the right one is the engine's Acc* of gaps 0, 1, 2 at tau_label 0.5."""
    acc = float(oracle_accuracy(SEED_GAPS, 0.0, 0.5))
    return {
        "half": "about 0.50: with a tie in the set, no better than a coin",
        "ceiling": f"about {acc:.2f}: 0.79 is already at the ceiling",
        "high": "about 0.95: 0.79 leaves room for a bigger model",
        "one": "1.0: the true quality predicts every label",
    }


def summary_text(tau: float, ceiling: float, sample: dict) -> str:
    """The sentence under the controls: the ceiling beside the sampled accuracy and its error."""
    return (
        f"At τ_label = {tau:.2f} the ceiling is <strong>Acc* = {ceiling:.3f}</strong>. On {sample['n']} freshly "
        f"labelled pairs, drawn with seed {sample['seed']}, the true quality u predicts {sample['correct']} labels: accuracy "
        f"<strong>{sample['accuracy']:.3f} ± {sample['se']:.3f}</strong> (one binomial standard error)."
    )
