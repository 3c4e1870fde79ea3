"""The baselines page's words: its fixed texts and questions, and the sentences and table it writes from the numbers.

Everything here is text about seed 001 section 4 (two actions, both rewarded, and what a baseline b does to
the one-sample REINFORCE estimate) and the check-yourself of section 3; the numbers come from
engines/two_action.py, and app/pages/baselines/__init__.py shows them.
"""

from __future__ import annotations

from engines.two_action import R1, R2, TwoActionSettings, two_action_estimates
from widgets.numbers import to_fixed

WHY = (
    "REINFORCE points the right way only on average; any single estimate can be far off, and that noise "
    "decides whether training gets anywhere. Here, on the smallest problem there is, you can see where the "
    "noise comes from and what subtracting a baseline does to it, the fact every later page builds on."
)
INTRO = (
    "A policy picks action 1 with probability p = σ(θ) and action 2 otherwise; the rewards are 11 "
    "and 10. One sample gives the REINFORCE estimate: (R − b) times the score function, so it takes "
    "one of two values. The baseline b is a number subtracted from the reward that does not depend on "
    "which action was sampled."
)
EQUATION = (
    r"\hat g = (R - b)\,\frac{d}{d\theta} \log \pi_\theta(y), \qquad "
    r"\mathbb{E}[\hat g] = p\,g_1 + (1-p)\,g_2"
)
NOTICE = (
    "The flat line never moves with b; the gap between the sloped lines (the standard deviation) "
    "shrinks to zero where they cross, at b = (1 − p)·11 + p·10 (10.5 when p = 0.5)."
)
PREDICT = (
    "Before you move the baseline b: of the two possible estimates, their mean and their "
    "standard deviation, which will not move?"
)
PREDICT_CHOICES = {
    "estimates": "the two possible estimates",
    "mean": "their mean",
    "sd": "their standard deviation",
    "none": "none of them: all three move with b",
}
PREDICT_EXPLANATION = (
    "Only the mean stays put. Each estimate is (R − b) times its score, so both slide as b moves. But the "
    "score averages to zero under the policy (equation 7), so whatever b adds to one estimate it takes away, "
    "weighted by probability, from the other: the mean is p(1 − p) for every b (equation 8). The standard "
    "deviation is the gap between the two estimates; it closes where the lines cross and opens again beyond."
)
DEMO_HEADING = "The two possible estimates against the baseline b"
"""The demo's section heading (the seed's "a baseline moves the noise, not the mean")."""
TABLE_HEADING = "Module 9's table (section 4), for the current p"
METRICS = {
    "g1": ("estimate if action 1", "{value:.2f}"),
    "g2": ("estimate if action 2", "{value:.2f}"),
    "mean": ("mean (true gradient)", "{value:.4f}"),
    "sd": ("standard deviation", "{value:.2f}"),
    "cross": ("lines cross at b", "{value:.2f}"),
}
"""The metric row under the sentence: label and format of each number of the estimate at the current p and b."""
SHIFT = 100.0
"""The check-yourself of seed 001 section 3: the same amount added to both rewards."""


def _g(x: float) -> str:
    """A table entry written as the seed writes it: 5.5, -5, 0.25, 0."""
    text = f"{float(x):.4g}"
    return "0" if text == "-0" else text


def shift_card_text() -> tuple[str, dict[str, str], str]:
    """Section 3's check-yourself on this page's rewards: question, choices, explanation, from the engine."""
    before = two_action_estimates(0.5, 0.0, R1, R2)
    after = two_action_estimates(0.5, 0.0, R1 + SHIFT, R2 + SHIFT)
    question = (
        f"At p = 0.5 with no baseline, add {SHIFT:g} to both rewards, so the actions pay {R1 + SHIFT:g} and "
        f"{R2 + SHIFT:g}. Does the true gradient change, and what are the two possible one-sample estimates?"
    )
    choices = {
        "grows": "The true gradient grows with the rewards, and the estimates with it.",
        "noise": f"The true gradient stays {_g(after.mean)}; the estimates become {_g(after.g1)} and {_g(after.g2)}.",
        "nothing": "Nothing changes: the same amount added to every reward cancels out.",
    }
    explanation = (
        f"Adding the same amount to every reward does not change which action is better, so the true gradient "
        f"is p(1 − p) = {_g(after.mean)} with the shift as it was without ({_g(before.mean)}). Each one-sample estimate, though, is the "
        f"whole reward times a score of ±0.5: {_g(after.g1)} or {_g(after.g2)}, about "
        f"{abs(float(after.g2)) / float(after.mean):.0f} times the size of what it estimates, its sign set by "
        "which action happened to be drawn. Without a baseline the level of the reward is pure noise; a baseline "
        "near the mean reward takes it away, as the demo above shows."
    )
    return question, choices, explanation


def summary_text(p: float, b: float) -> str:
    """The demo's sentence, formatted exactly as its JavaScript does (toFixed 1, 2, 2, 4, 2, 2)."""
    s = two_action_estimates(p, b, R1, R2)
    return (
        f"At b = {to_fixed(b, 1)}: the estimate is <strong>{to_fixed(s.g1, 2)}</strong> if action 1 is sampled "
        f"and <strong>{to_fixed(s.g2, 2)}</strong> if action 2 is. Mean <strong>{to_fixed(s.mean, 4)}</strong>, "
        f"standard deviation <strong>{to_fixed(s.sd, 2)}</strong>. The two lines cross at b = {to_fixed(s.cross, 2)}."
    )


def table_markdown(p: float) -> str:
    """The seed's table (at its baselines b = 0 and b = 10.5, engines.two_action.TwoActionSettings), for the current p."""
    b = TwoActionSettings().b
    s = two_action_estimates(p, b, R1, R2)
    rows = [
        f"| Sampled action (action 1 with probability {_g(p)}) | " + " | ".join(f"ĝ with b = {_g(x)}" for x in b) + " |",
        "|---" * (len(b) + 1) + "|",
        f"| 1 (reward {_g(R1)}) | " + " | ".join(map(_g, s.g1)) + " |",
        f"| 2 (reward {_g(R2)}) | " + " | ".join(map(_g, s.g2)) + " |",
        "| mean | " + " | ".join(map(_g, s.mean)) + " |",
        "| standard deviation | " + " | ".join(map(_g, s.sd)) + " |",
    ]
    return "\n".join(rows)
