"""The group-baselines page's words: its fixed texts and questions, and the sentences and tables it writes from the numbers.

Everything here is text about seed 000 sections 6.1 and 6.10 (right/wrong rewards, "RLOO and GRPO keep the
baseline and drop the critic") and seed 001 section 4 (the batch mean is the leave-one-out baseline shrunk by
1 - 1/N); the numbers come from engines/group_baselines.py, and app/pages/group_baselines/__init__.py shows them.
"""

from __future__ import annotations

import html

import numpy as np

from engines.group_baselines import ESTIMATORS, GroupBaselinesSettings, GroupExact, GroupTraining, exact_moments
from engines.policy_gradient import group_advantages

WHY = (
    "Language models are now trained on rewards a checker gives, right or wrong, with the K replies to one prompt "
    "as each other's baseline: RLOO, GRPO and its critique Dr. GRPO. These are one line apart in code, and the "
    "difference matters: here each one's expected update and its variance are computed exactly, beside the true "
    "gradient, so you can see which estimators are unbiased, which one only rescales the step, and which one "
    "reweights the prompts."
)
INTRO = (
    "Two prompts, an easy one and a hard one, are answered right with chances p₁ and p₂, p_m = σ(θ_m); the "
    "objective is the share of right replies, J = (p₁ + p₂)/2. Each step samples K replies to each prompt, "
    "reward 1 if right, else 0, and turns the rewards into advantages A_i: none (A = r), the group's mean "
    "(r − mean r), leave-one-out (r minus the mean of the other K − 1, RLOO), GRPO ((r − mean r)/(std r + 10⁻⁴), "
    "Shao et al. 2024) and Dr. GRPO (r − mean r, with no division by a reply's length; Liu et al. 2025). The "
    "estimate of ∂J/∂θ_m sums A_i times the score y_i − p_m; its mean and variance are exact sums over the "
    "number of right replies k."
)
EQUATION = (
    r"\hat g_m = \frac{1}{MK}\sum_{i=1}^{K} A_i\,(y_i - p_m), \qquad "
    r"\frac{\partial J}{\partial \theta_m} = \frac{p_m(1-p_m)}{M}, \qquad "
    r"r_i - \bar r = \Big(1 - \frac{1}{K}\Big)\big(r_i - b_{\mathrm{loo}}^{(i)}\big)"
)
NOTICE = (
    "No baseline and leave-one-out are centred on the true gradient; the group mean and Dr. GRPO on 1 − 1/K of it, "
    "the same step shrunk, pointing the same way. GRPO's division by the standard deviation multiplies the step "
    "and multiplies it most on the prompts that are almost always right or almost always wrong, so its expected "
    "update turns toward them (the angle); drag K up to 16 to see it grow. A group whose K rewards are all equal "
    "gives every baselined estimator exactly 0: on an easy prompt most groups carry no signal."
)
SECTIONS = {
    "updates": "Expected updates and variances",
    "example": "Four rewards by hand",
    "training": "Training with each estimator",
}
"""The tabs' titles, by the section's name in the link."""
UPDATES_TITLE = "Mean update per prompt beside the true gradient (black dashes)"
VARIANCE_TITLE = "Variance of each prompt's update"
TRAINING_TITLE = "J against training steps, mean over seeds (gradient ascent on each estimator)"
METRICS = {
    "no_signal_easy": ("no-signal groups, prompt 1", "{value:.1%}"),
    "no_signal_hard": ("no-signal groups, prompt 2", "{value:.1%}"),
    "grpo_easy": ("GRPO's mean ÷ true, prompt 1", "{value:.3f}"),
    "grpo_hard": ("GRPO's mean ÷ true, prompt 2", "{value:.3f}"),
    "grpo_angle": ("GRPO's turn from ∇J", "{value:.2f}°"),
}
"""The metric row under the sentence: label and format of each number at the current p₁, p₂ and K."""
EXAMPLE_REWARDS = (1.0, 0.0, 0.0, 1.0)
"""The worked example's group: four replies, the first and the last right."""

PREDICT = (
    "Before you look: with K = 4 replies per prompt, which estimators' expected update equals the true gradient "
    "∂J/∂θ on every prompt?"
)
UNBIASED_CHOICES = {
    "all": "all five: a baseline never changes the mean",
    "none-loo": "no baseline and leave-one-out only",
    "baselined": "leave-one-out, group mean and Dr. GRPO",
    "grpo": "GRPO only: it standardises the rewards",
}
UNBIASED_ANSWER = "none-loo"
"""No baseline and leave-one-out (tests/app/test_group_baselines_figures.py checks it against the engine)."""
UNBIASED_EXPLANATION = (
    "Only no baseline and leave-one-out. Leave-one-out's baseline is built from the other replies, which do not "
    "depend on reply i, so it leaves the mean alone (Module 9, equations 8 and 9). The group mean includes r_i itself, "
    "and r_i − mean = (1 − 1/K)(r_i − b_loo) on every group: its update is leave-one-out's shrunk by 3/4 at K = 4, "
    "biased but pointing the right way, and Dr. GRPO's advantage is the same. GRPO divides by a standard "
    "deviation that depends on every reply: its mean is neither the gradient nor a fixed multiple of it."
)
NO_SIGNAL_P = 0.9
"""The check-yourself's easy prompt."""


def no_signal_card() -> tuple[str, dict[str, str], str, str]:
    """The check-yourself on all-equal groups at p = NO_SIGNAL_P, K = 4: question, choices, answer, explanation."""
    share = float(exact_moments(GroupBaselinesSettings(p=(NO_SIGNAL_P,), K=4)).no_signal[0])
    question = (
        f"A prompt is answered right {NO_SIGNAL_P:.0%} of the time and K = 4 replies are drawn. How often are all "
        "four rewards equal, so that leave-one-out, the group mean and GRPO give that prompt no update at all?"
    )
    choices = {"rare": "about 1 group in 100", "third": "about 1 in 3", "two-thirds": "about 2 in 3", "never": "never"}
    explanation = (
        f"p⁴ + (1 − p)⁴ = {NO_SIGNAL_P}⁴ + {1 - NO_SIGNAL_P:.1f}⁴ = {share:.4f}: about two groups in three. When every "
        "reward is the same, every baseline equals it and every advantage is 0, so those K replies are spent for "
        "nothing. This is why GRPO recipes filter out prompts that are always or never solved, and why a larger K "
        "helps most on the easiest and hardest prompts."
    )
    return question, choices, "two-thirds", explanation


def summary_text(ex: GroupExact, K: int) -> str:
    """The sentence under the controls: which estimators are unbiased, what the mean and GRPO do, at these settings."""
    row = dict(zip(ex.estimators, ex.ratio))
    grpo, angle = row["grpo"], float(ex.angle[ex.estimators.index("grpo")])
    favoured = int(np.argmax(grpo))
    lean = ("weighs both prompts alike" if np.isclose(grpo[0], grpo[1], rtol=1e-9) else
            f"leans toward prompt {favoured + 1} (p = {ex.p[favoured]:g}) and turns the update by <strong>{angle:.2f}°</strong>")
    return (
        f"At K = {K}: leave-one-out and no baseline average to the true gradient; the group mean and Dr. GRPO to "
        f"<strong>{row['mean'][0]:.3f}</strong> of it on both prompts. GRPO's mean is <strong>{grpo[0]:.3f}</strong> "
        f"times the true gradient on prompt 1 and <strong>{grpo[1]:.3f}</strong> on prompt 2, so it {lean}."
    )


def training_text(run: GroupTraining, steps: int) -> str:
    """The line under the training plot: each estimator's mean J (± its standard error over seeds) at the step reached."""
    done = len(run.steps) - 1
    parts = ", ".join(f"{html.escape(label)} <strong>{run.J[e, -1]:.3f}</strong> ± {run.J_se[e, -1]:.3f}"
                      for e, label in enumerate(ESTIMATORS.values()))
    return f'<p class="fl-training">J after {done} of {steps} steps, mean over seeds: {parts}.</p>'


def example_table_html() -> str:
    """The worked example: the advantages of EXAMPLE_REWARDS under each estimator, computed by the engine's function."""
    r = np.array(EXAMPLE_REWARDS)
    head = "".join(f"<th>reply {i + 1}: r = {v:g}</th>" for i, v in enumerate(r))
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td>" + "".join(f"<td>{a:+.4f}</td>" for a in group_advantages(r, name))
        + "</tr>"
        for name, label in ESTIMATORS.items()
    )
    return f'<table class="fl-table"><tr><th>estimator</th>{head}</tr>{rows}</table>'


EXAMPLE_NOTE = (
    "By hand: the mean of (1, 0, 0, 1) is 1/2, so the group mean gives ±1/2. Leave-one-out compares reply 1 with "
    "the other three, (0 + 0 + 1)/3 = 1/3, so A₁ = 2/3, and a wrong reply with (1 + 0 + 1)/3 = 2/3, so −2/3: "
    "(1 − 1/4) × 2/3 = 1/2, Module 9's identity (section 4). The sample standard deviation is √(4 × ¼ / 3) = 0.5774, so GRPO "
    "gives ±0.5/0.5774 = ±0.8659. Dr. GRPO keeps ±1/2; what it changes is the loss, which divides each reply's "
    "summed token terms by one constant instead of by the reply's own length, so that a long wrong reply is not "
    "pushed down less per token than a short one (with replies of one length, as here, nothing else differs)."
)
