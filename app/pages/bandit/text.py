"""The bandit page's words: its fixed texts and questions, and the sentences and tables it writes from the numbers.

Everything here is text about seed 000 sections 6.4 to 6.7 (REINFORCE on four replies with noisy
ratings, and what a baseline b does to its variance); the numbers come from engines/bandit.py,
and app/pages/bandit/__init__.py shows them.
"""

from __future__ import annotations

import numpy as np

from engines.bandit import MEANS, BanditTrainingSettings, TrainingView, expected_return
from engines.policy_gradient import softmax

WHY = (
    "A bandit is the smallest setting in which a policy learns from ratings alone: one prompt, four possible "
    "replies, a noisy score for the one it wrote. It is small enough that the exact gradient and its exact "
    "variance are known, so the two claims every later method leans on can be checked rather than believed: "
    "a baseline takes noise out of REINFORCE without biasing it, and without one training can settle on a "
    "worse reply."
)
INTRO = (
    "One prompt has four possible replies, the arms of a bandit. The policy is a softmax over four logits θ, "
    "and reply k earns a noisy rating r with mean μ_k. One sampled reply gives the REINFORCE estimate of the "
    "gradient of the expected return J = Σ π_k μ_k: the score vector onehot(a) − π times the rating minus a "
    "baseline b. Here J is a small sum, so the exact gradient π_k(μ_k − J), the exact variance of the estimate "
    "and the best constant baseline b* are known, and a Monte Carlo run with N samples checks them."
)
EQUATION = (
    r"\begin{gathered}\nabla_\theta \log \pi_a = \mathrm{onehot}(a) - \pi, \qquad "
    r"\hat g = (r - b)\,\big(\mathrm{onehot}(a) - \pi\big), \qquad "
    r"\frac{\partial J}{\partial \theta_k} = \pi_k(\mu_k - J) \\ "
    r"b^{*} = \frac{\mathbb{E}\big[r\,\lVert \nabla_\theta \log \pi_a \rVert^2\big]}{\mathbb{E}\big[\lVert \nabla_\theta \log \pi_a \rVert^2\big]}"
    r"\end{gathered}"
)
NOTICE = (
    "The Monte Carlo means with and without the baseline both sit on the exact gradient, whatever b is: a "
    "baseline adds no bias. The total variance is a parabola in b with its bottom at b* (close to J); in "
    "training, without a baseline some seeds lock onto a worse arm, with either baseline hardly any do."
)
PREDICT = (
    "Subtracting b = 6.5 from every rating: will it change the average of the 200,000 estimates? "
    "Will it change their spread? Answer both before you look at the panels."
)
PREDICT_CHOICES = {"neither": "neither", "mean": "the average only", "spread": "the spread only", "both": "both"}
PREDICT_EXPLANATION = (
    "Only the spread. The baseline multiplies the score vector, and the score averages to zero under the "
    "policy, so b adds nothing on average: the Monte Carlo means with and without it both sit on the exact "
    "gradient. The spread is another matter. Every rating here lies between about 4 and 9, so without a "
    "baseline each sample pushes its own reply up by an amount that hardly depends on how good the reply was. "
    "With b near J the push says “better or worse than usual”, and the total variance falls many-fold; it "
    "is lowest at b*."
)
_TRAINING = BanditTrainingSettings()
ARM_QUESTION = (
    f"Every seed starts from the uniform policy and takes {_TRAINING.steps} steps of one sample each, learning rate "
    f"{_TRAINING.lr:g}, on the arms of the sliders μ1 to μ4 (mean ratings {', '.join(f'{m:g}' for m in MEANS[:-1])} "
    f"and {MEANS[-1]:g} to start with). Without a baseline, where do the {_TRAINING.seeds} seeds end up?"
)
ARM_CHOICES = {
    "all": "all on the best reply, arm 4, only more slowly than with a baseline",
    "most": "most on arm 4, but dozens settle on a worse arm",
    "chance": "spread over the four arms about evenly",
}
ARM_EXPLANATION = (
    "Most find arm 4, but not all. Every rating is positive, so without a baseline the sampled arm is always "
    "pushed up; the likelier it becomes, the more often it is sampled and pushed again. The better arms win on "
    "average, because their pushes are a little larger, but a run that favours a worse arm early can stop "
    "trying the others before the evidence that would correct it arrives. With either baseline an arm is "
    "pushed up only when it does better than usual, and the seeds end on arm 4. Compare the bars and the "
    "last column of the table."
)

TRAIN_NAMES = {"none": "no baseline", "running": "running average of ratings", "value": "exact value V"}
"""The three baselines of section 6.7's training, as the plots and the training table name them."""
METRICS = {
    "J": ("J = V", "{value:.3f}"),
    "b_star": ("b*", "{value:.3f}"),
    "exact_none": ("variance, b = 0", "{value:.3f}"),
    "exact_b": ("variance at b", "{value:.3f}"),
    "ratio": ("ratio", "{value:.1f}×"),
    "mc_none": ("Monte Carlo, b = 0", "{value:.3f}"),
    "mc_b": ("Monte Carlo at b", "{value:.3f}"),
    "mc_ratio": ("Monte Carlo ratio", "{value:.1f}×"),
}
"""The metric row under the sentence (figures.estimate_numbers): label and format of each number."""


def variance_ratio(num: float, den: float) -> float:
    """How many times smaller the variance is: num / den, infinite where den is 0."""
    return num / den if den > 0 else float("inf")


def _vector(x) -> str:
    return "(" + ", ".join(f"{v:.3g}" for v in np.asarray(x, dtype=float)) + ")"


def training_table(view: TrainingView | None) -> str:
    """The seed's training printout as a table: one row per baseline at the current step."""
    if view is None:
        return '<p class="fl-training">Training has not run yet: press Start.</p>'
    rows = "".join(
        f"<tr><td>{TRAIN_NAMES[b]}</td><td>{s['mean_J']:.3f}</td><td>{s['p10']:.3f} to {s['p90']:.3f}</td>"
        f"<td>{100 * s['above_half']:.0f}%</td><td>{100 * s['below_tenth']:.0f}%</td>"
        f"<td>{s['worse']} of {view.settings.seeds}</td><td>{s['counts']}</td></tr>"
        for b, s in view.stats.items()
    )
    return (
        f'<table class="fl-training"><caption>After step {view.step} of {view.settings.steps}, {view.settings.seeds} seeds</caption>'
        "<thead><tr><th>baseline</th><th>mean J</th><th>10th to 90th percentile</th><th>P(best) &gt; 0.5</th>"
        "<th>P(best) &lt; 0.1</th><th>seeds on a worse arm</th><th>most likely arm: seeds</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


POLICY_HEADING = "The bandit and the policy"
POLICY_CHOICES = {"uniform, θ = 0": 0, **{f"prefers arm {k}": k for k in range(1, len(MEANS) + 1)}}
"""The policy control's buttons: the uniform policy, or one arm k preferred (theta_k = the logit)."""
ESTIMATE_HEADING = "The estimate"
SECTIONS = {
    "estimates": "Gradient and variance",
    "histogram": "One coordinate's estimates",
    "training": "Training with and without a baseline",
}
"""The tabs under the estimate, by the page's `section` value."""
PLOT_TITLES = {
    "gradient": "Exact gradient and Monte Carlo means ± 2 SE",
    "variance": "Total variance against the baseline b",
    "histogram": "One-sample estimates of coordinate k, with and without b",
    "training": "Mean J over seeds, 10th to 90th percentile",
    "final_arms": "Which arm each seed prefers",
}
"""The title over each plot, by the plot's data."""
TRAINING_NOTE = (
    "Every seed starts from the uniform policy θ = 0 and takes one sample per step, on the arms of the sliders "
    "μ1 to μ4; "
    "the three baselines of section 6.7 see the same random stream. A changed setting restarts the run."
)
"""What the training section trains, above its controls."""
TABLE_CSS = """
.fl-training { border-collapse: collapse; margin: 0.3em 0.6em; font-variant-numeric: tabular-nums; }
.fl-training caption { caption-side: top; text-align: left; opacity: 0.8; }
.fl-training th, .fl-training td { padding: 0.2em 0.7em; border-bottom: 1px solid rgba(128, 128, 128, 0.4); text-align: left; }
"""


def summary_text(means, sd: float, theta, b: float, samples: int, seed: int, mc) -> str:
    """The sentence under the controls, as the seed's Monte Carlo check reports it."""
    pi = softmax(np.asarray(theta, dtype=float))
    J = float(expected_return(means, theta))
    v0, vb = mc.total_variance[:2]  # b = 0 and the current b come first
    return (
        f"At θ = {_vector(theta)} the policy is π = {_vector(pi)} and J = {J:.3f}. With {samples:,} samples "
        f"drawn with seed {seed}, the total variance of one estimate is <strong>{v0:.3f}</strong> without a baseline and "
        f"<strong>{vb:.3f}</strong> with b = {b:g}, ratio {variance_ratio(v0, vb):.1f}×; the measured b* is {mc.b_star:.3f}."
    )
