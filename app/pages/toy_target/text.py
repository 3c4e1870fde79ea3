"""The toy target page's words: its fixed texts and questions, and the sentences and tables it writes from the numbers.

Everything here is text about seed 001 sections 2 to 5, Exercise 2 and Figure 2 (REINFORCE on a
bigram policy whose exact gradient is known by enumeration); the numbers come from
engines/toy_target.py, and app/pages/toy_target/__init__.py shows them.
"""

from __future__ import annotations

import math

import numpy as np

from engines.toy_target import ESTIMATORS, Batches, ToyTargetSettings, TrainingSnapshot

T, V = ToyTargetSettings.T, ToyTargetSettings.V
"""The lab's task: T = 6 symbols from a vocabulary of V = 8."""
TABLE_CSS = """
.fl-table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.3em 0.6em; }
.fl-table th, .fl-table td { padding: 0.25em 0.9em; text-align: right; border-bottom: 1px solid rgba(128, 128, 128, 0.35); }
.fl-table th:first-child, .fl-table td:first-child { text-align: left; }
"""

WHY = (
    "The baselines page made its point with two actions. Here the same questions are asked of a real policy "
    "that writes sequences: which estimators of the gradient are unbiased, how much noise a baseline and "
    "per-token credit take away, and whether less noise makes training faster. The task is small enough "
    "(262,144 responses) that the exact gradient is known, so every answer is a measurement against the truth."
)
INTRO = (
    "The first half of Module 9's lab trains a policy whose optimum you know. It writes T = 6 symbols from a "
    "vocabulary of 8, each from a softmax over logits θ[t, yₜ₋₁] (a bigram policy), and earns the "
    "fraction of positions that match a hidden target y*. The uniform start earns J = 1/8, the optimum 1. "
    "With 8⁶ responses the exact gradient of J is a sum the page can do, so every estimate below is set "
    "beside the truth. REINFORCE (equation 5) averages N sampled responses; the leave-one-out baseline "
    "(equation 9) subtracts the mean reward of the other samples; token-level rewards rₜ = 1[yₜ = y*ₜ]/T "
    "weight each symbol by its reward-to-go Gₜ only (equation 10)."
)
EQUATION = (
    r"\hat g = \frac{1}{N}\sum_{i=1}^{N} R_i\,\nabla_\theta \log \pi_\theta(y^{(i)}), \quad "
    r"b^{(i)} = \frac{1}{N-1}\sum_{j\neq i} R_j, \quad "
    r"\nabla_\theta J = \mathbb{E}\Big[\sum_{t=1}^{T} (G_t - b_t)\,\nabla_\theta \log \pi_\theta(y_t \mid s_t)\Big]"
)
NOTICE = (
    "Every estimator's mean lies on the exact gradient (the batch mean's is shrunk by 1 − 1/N); what the "
    "baseline and the reward-to-go change is the spread, and the training runs with less spread reach "
    "J ≥ 0.9 sooner and more often."
)
PREDICT = (
    "Before the table fills in: rank no baseline, leave-one-out and token-level rewards by the total variance "
    "of one estimate at N = 16, largest first."
)
RANKING_CHOICES = {
    "none-loo-token": "no baseline, then leave-one-out, then token-level rewards",
    "none-token-loo": "no baseline, then token-level rewards, then leave-one-out",
    "loo-none-token": "leave-one-out, then no baseline, then token-level rewards",
    "same": "all about the same: these choices move the mean, not the spread",
}
RANKING_ANSWER = "none-loo-token"
"""The ranking of the exact total variances at N = 16 (tests/app/test_toy_target_page.py checks it)."""
RANKING_EXPLANATION = (
    "No baseline is the noisiest. Every reward is positive (1/8 on average at the start), so each sample "
    "pushes its own symbols up whatever it scored. The leave-one-out baseline removes that common level. "
    "Token-level rewards remove another part of the noise: each symbol is credited only with the matches at "
    "its own position and later, not with those made before it, which it could not affect; at N = 16 that "
    "takes away a little more than the baseline does. None of them moves the mean (only the batch mean "
    "shrinks it, by 1 − 1/N), and the last row, both together, is the quietest of all."
)


METRICS = {
    "exact": ("exact gradient at the coordinate", "{value:.4f}"),
    "sd_none": ("sd, no baseline", "{value:.3f}"),
    "sd_none_exact": ("exact sd, no baseline", "{value:.3f}"),
    "sd_other": ("sd, compared estimator", "{value:.3f}"),
    "sd_other_exact": ("exact sd, compared estimator", "{value:.3f}"),
}
"""The numbers under the summary: key -> (label, format), for widgets.metrics.MetricRow."""
COMPARED_LABEL = "**Compared with no baseline:**"
"""Beside the estimator's buttons."""
SECTIONS = {
    "figure2": "Figure 2: one coordinate",
    "means": "Means against the exact gradient",
    "variance": "Exercise 2: the variance table",
    "training": "Training with and without the baseline",
}
"""The tabs' titles, by the section's name in the link."""
FIGURE2_TITLE = "Figure 2: one coordinate's one-batch estimates (line: the exact gradient)"
MEANS_TITLE = "Mean of the estimates against the exact gradient"
VARIANCE_HEADING = "Exercise 2: total variance of one estimate, the same samples for every row"
VARIANCE_NOTE = "the variance table"
"""What the ranking card guards, as its placeholder names it."""


def check_yourself_text(samples: int = ToyTargetSettings.samples) -> str:
    """Section 2's check-yourself at the uniform policy: log pi(y) = T log(1/V), an exact match 1/V^T, and what an
    all-or-nothing reward would give a batch of `samples` responses (the page's batch size N)."""
    hit = -math.expm1(samples * math.log1p(-float(V) ** -T))  # P(at least one exact match among N samples)
    return (
        f"At the uniform start every response has log π(y) = {T} log(1/{V}) = "
        f"**{T * math.log(1 / V):.2f}**, and the policy writes the target exactly with probability "
        f"(1/{V})^{T} = **1/{V**T:,}**, about {V**-T:.1e}. An all-or-nothing reward would leave a batch of "
        f"N = {samples} responses all zeros in all but about one batch in {1 / hit:,.0f}, and zeros say nothing "
        "about which way is better; the fraction of matching positions differs from sample to sample from the "
        "first step, so there is a signal to follow."
    )


START_QUESTION = (
    f"The policy starts uniform: every symbol has probability 1/{V} at each of the {T} steps. What is log π(y) "
    "of a response, and how likely is the policy to write the target y* exactly?"
)
START_CHOICES = {
    "every": f"log π(y) = {T * math.log(1 / V):.2f} for every response; an exact match has probability 1/{V**T:,}",
    "per-step": f"log π(y) = {math.log(1 / V):.2f} for every response; an exact match has probability 1/{V}",
    "depends": "log π(y) depends on how close the response is to the target",
}


def steps_text(steps: np.ndarray) -> str:
    """Steps to the threshold per seed, "–" where a run has not reached it."""
    return " ".join("–" if s < 0 else str(int(s)) for s in steps)


def summary_text(coord: tuple, b: Batches, estimator: str, x_none: np.ndarray, x_other: np.ndarray) -> str:
    """The sentence under the controls: the coordinate, its exact gradient, both estimators' mean and sd."""
    t, c, k = coord
    context = "the start" if t == 0 else f"yₜ₋₁ = {c}"
    return (
        f"Step {t + 1}, context {context}, symbol {k}: exact gradient <strong>{b.exact[coord]:.4f}</strong>. "
        f"Over {b.drawn} batches of N = {b.samples}, drawn with seed {b.seed}, the mean estimate is "
        f"<strong>{x_none.mean():.4f}</strong> without a baseline (sd {x_none.std(ddof=1):.3f}) and "
        f"<strong>{x_other.mean():.4f}</strong> with {ESTIMATORS[estimator]} (sd {x_other.std(ddof=1):.3f})."
    )


SEED_SD = {"none": 0.023, "loo": 0.014}
"""Figure 2's standard deviations (N = 16, 500 batches, the target's first symbol at step 1)."""


def seed_note_text(estimator: str, none: tuple[float, float], other: tuple[float, float]) -> str:
    """Figure 2's standard deviations beside the ones measured here, (sd, its SE) without a baseline and with `estimator`."""
    (sd_none, se_none), (sd_other, se_other) = none, other
    return (
        f"Module 9's Figure 2 (N = 16, 500 batches, the target's first symbol at step 1) measured sd **{SEED_SD['none']}** without a "
        f"baseline and **{SEED_SD['loo']}** with leave-one-out. Here: {sd_none:.3f} ± {se_none:.4f} and, "
        f"{ESTIMATORS[estimator]}, {sd_other:.3f} ± {se_other:.4f} (± one standard error)."
        + (" The spike at 0 is mostly batches in which no sample wrote the symbol: the baseline's weights sum to zero "
           "over a batch, so such a batch gives exactly 0." if estimator in ("loo", "batch_mean", "token_loo") else "")
    )


def variance_table_html(rows: list[dict], b: Batches) -> str:
    """Exercise 2's table: measured total variance ± SE beside the exact one, and the ratio to no baseline."""
    base = rows[0]["exact"]
    body = "".join(
        f'<tr data-estimator="{r["estimator"]}"><td>{r["label"]}</td><td>{r["measured"]:.5f} ± {r["se"]:.5f}</td>'
        f'<td>{r["exact"]:.5f}</td><td>{r["exact"] / base:.2f}</td></tr>'
        for r in rows
    )
    return (
        f'<table class="fl-table"><thead><tr><th>estimator ({b.drawn} batches, N = {b.samples})</th>'
        "<th>measured total variance ± SE</th><th>exact</th><th>exact ÷ no baseline</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def training_html(snapshot: TrainingSnapshot, steps: int) -> str:
    """Steps to J >= 0.9 per seed and the share of seeds that got there, per estimator."""
    S = snapshot.J.shape[1]
    body = "".join(
        f'<tr data-estimator="{name}"><td>{ESTIMATORS[name]}</td><td>{steps_text(snapshot.steps_to_threshold[e])}</td>'
        f"<td>{int((snapshot.steps_to_threshold[e] >= 0).sum())}/{S}</td><td>{snapshot.J[e, :, -1].mean():.3f}</td></tr>"
        for e, name in enumerate(snapshot.estimators)
    )
    return (
        f'<table class="fl-table"><thead><tr><th>after {snapshot.step} of {steps} steps</th><th>steps to J ≥ 0.9, per seed</th>'
        f"<th>reached</th><th>mean J now</th></tr></thead><tbody>{body}</tbody></table>"
    )
