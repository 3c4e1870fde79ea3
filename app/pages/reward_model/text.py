"""The reward-models page's words: its fixed texts and check-yourself, and the sentences it writes about its files.

Everything here is text about seed 001 sections 6 to 8 (pairs labelled by a Bradley-Terry rater,
equation 12; the ceiling Acc*, equation 13; the pairwise loss, equation 14; the normaliser, equation 15);
the numbers come from engines/bradley_terry.py and engines/lm/, and app/pages/reward_model/__init__.py shows them.
"""

from __future__ import annotations

from pathlib import Path

from engines.bradley_terry import bt_loss_np
from engines.lm.settings import EMBEDDED, REWARD_PREFIX

WHY = (
    "The policy-gradient pages took a reward as given. For what only people can judge, the reward is learned "
    "from their comparisons, and then handed to an optimiser. This page trains such a reward model from pairs "
    "labelled by a rater whose rule is known, so that you can check what the model learned, and what it did not."
)
INTRO = (
    "The language model continues each prompt twice. A hidden gold score g counts distinct positive words (at "
    "most three), subtracts one per negative word and a point for each list word past the fourth; a rater at "
    "label temperature τ_label prefers one continuation by equation 12. The reward model r_φ is a small "
    "transformer trained from scratch on these labels with the loss of equation 14, and it has an embedding "
    "only for tokens it saw at least twice. Its held-out accuracy is read against the ceiling Acc* of equation "
    "13, not against 1; before it is handed to an optimiser its level and scale are fixed on the held-out "
    "responses by equation 15.\n\n"
    "**An accurate reward model is not a safe objective.** Its accuracy is measured on responses like those it "
    "was trained on. An optimiser leaves that data for the replies with the highest r_φ, which can lie where the "
    "reward model never saw data and is confidently wrong: Goodhart's law. Gao et al. (2023) measure it: "
    "optimising harder against a learned reward first raises and then lowers the true reward."
)
EQUATION = (
    r"\begin{gathered}P(y_a \succ y_b \mid x) = \sigma\Big(\frac{g(y_a) - g(y_b)}{\tau_{\text{label}}}\Big), \qquad "
    r"\mathrm{Acc}^\star = \mathbb{E}_{\text{pairs}}\big[\max(p,\ 1-p)\big] \\ "
    r"\mathcal{L}_{\text{RM}}(\phi) = -\frac{1}{|\mathcal{D}|} \sum_{(x, y_w, y_l)} \log \sigma\big(r_\phi(x, y_w) - r_\phi(x, y_l)\big), \qquad "
    r"\tilde r_\phi(x, y) = \frac{r_\phi(x, y) - \mu}{\varsigma}\end{gathered}"
)
NOTICE = (
    "The held-out accuracy climbs toward the ceiling Acc* and stays below it (within its standard error): the "
    "rest is rater noise and ties. The probe shows what the accuracy hides: one positive word repeated gets a "
    "high r_φ and a low g (the crowding penalty makes g = −7), because the reward model never saw such a reply. "
    "That is the reply an optimiser will find. Set the embedding threshold to 1 and watch rare tokens get their "
    "own embeddings."
)

CHECK_QUESTION = (
    "Three reward models score the same pair, preferred response first: A gives (5.0, 3.0), B gives (105, 103) "
    "and C gives (2.5, 1.5). Which have the same loss on it?"
)
CHECK_CHOICES = {"ab": "A and B", "ac": "A and C", "all": "all three: each ranks the pair correctly", "none": "none of them"}


def check_yourself_text() -> str:
    """Section 8's check-yourself, computed with equation 14."""
    a, b, c = (bt_loss_np([w], [l]) for w, l in ((5.0, 3.0), (105.0, 103.0), (2.5, 1.5)))
    return (
        f"A and B have the same gap, 2, so the same loss −log σ(2) = {a:.3f} (B: {b:.3f}); the level never enters "
        f"equation 14. C has a gap of 1 and a loss of {c:.3f}: it is A at half the scale, the same ranking with less "
        "confident preferences, and by section 7 scale is tangled with rater noise, so C is not worse on this "
        "evidence. Equation 15 subtracts each model's own mean and divides by its own spread: if B were A + 100 and "
        "C were A halved on every response, all three would hand the optimiser exactly the same reward."
    )


WAITING_TEXT = '<p class="fl-train-summary">The reward model trains once the pairs are ready.</p>'
"""What the training summary says before the first pairs are ready."""
TRAINING_TEXT = '<p class="fl-train-summary">Training…</p>'
"""What the training summary says until the reward model is trained."""
TRAINING_INTRO = (
    "A fifth of the pairs is held out; each step draws 64 training pairs and takes an AdamW step on "
    "equation 14. A changed setting retrains."
)
PROBE_TITLE = "The probe: hand-written replies the language model rarely writes"
READINGS = {
    "accuracy": ("held-out accuracy", "{value:.3f}"),
    "se": ("± binomial SE", "{value:.3f}"),
    "acc_star": ("Acc* (the ceiling)", "{value:.3f}"),
    "gold_order": ("accuracy against g", "{value:.3f}"),
    "spearman": ("Spearman with g", "{value:.3f}"),
}
"""The trained reward model's readings on the held-out pairs: (label, format) by name."""


def readings(evaluation) -> dict[str, float]:
    """READINGS' numbers from a trained reward model's evaluation (engines.lm.reward_model), by the same names."""
    return {"accuracy": evaluation.heldout_accuracy, "se": evaluation.heldout_se, "acc_star": evaluation.acc_star,
            "gold_order": evaluation.gold_order_accuracy, "spearman": evaluation.spearman}


def sampled_source(seed: int) -> str:
    """Where pairs sampled with `seed` came from, as the pairs' sentence (preference_html.pairs_summary) tells it."""
    return f"sampled from the {EMBEDDED} model with seed {seed}"


def file_source(path: Path | str, model: str) -> str:
    """Where pairs loaded from the file at `path` came from; `model` is the one the file says wrote it."""
    return f"from {Path(path).name} (written by the {model or 'unnamed'} model)"


def sweep_intro(taus: tuple[float, ...]) -> str:
    """What the stretch does, at the label temperatures `taus`."""
    return (f"The same responses relabelled at τ_label = {', '.join(f'{t:g}' for t in taus)}, a reward model "
            "trained on each with the training settings.")


def saved_model_text(path: Path) -> str:
    """Where the reward model was saved, and how the live-run page and `feedback-lab train-lm` use it."""
    return (
        f"Saved to `{path}`. On the live-run page choose the reward `{REWARD_PREFIX}{path}` (with the feeling "
        f"prompts it was trained on), or run `feedback-lab train-lm --reward {REWARD_PREFIX}{path} --prompt-set feelings`."
    )

SECTIONS = {
    "pairs": "Preference pairs",
    "training": "Training the reward model",
    "sweep": "Noisier raters (the stretch)",
}
"""The page's three parts, as tabs, by its `section` value."""
