"""The token-world page's words: its fixed texts and question, and the sentences and tables it writes from the numbers.

Everything here is text about seed 000 sections 6.8 to 6.10 (values, TD errors delta_t and GAE
with its lambda); the numbers come from engines/token_world.py and
engines/token_world_training.py, and app/pages/token_world/__init__.py shows them.
"""

from __future__ import annotations

import html

import numpy as np

from app.serving.results_cache import RESULTS
from engines.token_world import CHAPTER_REPLY, token_values
from engines.token_world_training import TokenWorldTrainingSettings

SECTIONS = {
    "values": "Exact values V(t, k)",
    "episode": "One episode",
    "lambda": "GAE: bias² and variance against λ",
    "training": "Training against GAE critics",
}
"""The tabs under the summary, by the page's `section` value."""
EPISODE_TAB, LAMBDA_TAB = SECTIONS["episode"], SECTIONS["lambda"]
"""The tabs the texts point to: a panel named in a sentence is in one of them, not beside the sentence."""

WHY = (
    "PPO and its relatives train language models with a critic: a second model that predicts, from every "
    "prefix, how well the reply will end, so that one reward at the end becomes a signal for each token. "
    "GAE's λ sets how far that signal trusts the critic. In this tiny world every value and every advantage "
    "is exact, so what λ trades off can be measured instead of taken on faith."
)
INTRO = (
    "A reply is T tokens, each A or B, written by a policy that picks A with probability P(A). "
    "The state is (t, k): the position and how many A's have been written. The only reward comes after "
    "the last token: 1 if the reply has at least *threshold* A's. In this world the value V(t, k), the "
    "chance of success from (t, k), is known exactly, and so is the advantage A = Q − V of every token. "
    "A critic's view of the next state turns into a TD error δ; GAE adds up the TD errors ahead, each "
    "weighted by (γλ)^l."
)
EQUATION = (
    r"\delta_t = r_t + \gamma\, V(s_{t+1}) - V(s_t), \qquad "
    r"\hat A_t = \delta_t + \gamma\lambda\, \hat A_{t+1} = \sum_{l=0}^{T-1-t} (\gamma\lambda)^l\, \delta_{t+l}"
)
NOTICE = (
    "With the exact critic, λ = 0 has no error at all, and the error grows with λ; add noise to the critic "
    "and λ = 0 inherits its bias, so the best λ moves up. Variance against λ is the same in the three panels of "
    f"the tab “{LAMBDA_TAB}”: it comes from the random future tokens, not from the critic."
)
PREDICT = "Before you add critic noise: which λ will have the smallest total error with the exact critic, and why?"
PREDICT_CHOICES = {
    "0": "λ = 0: a single TD error",
    "0.5": "λ = 0.5, halfway",
    "0.95": "λ = 0.95, the value most often used",
    "1": "λ = 1: the whole return minus V",
}
PREDICT_EXPLANATION = (
    "λ = 0, with no error at all. In text the next state is certain: writing a token always leads to the same "
    "prefix. So with the exact critic one TD error, rₜ + γ V(sₜ₊₁) − V(sₜ), is exactly Q − V, the "
    "advantage, in every episode. A larger λ adds later TD errors, which depend on tokens not yet written: "
    "variance, and nothing gained. Add noise to the critic and λ = 0 inherits its error, so the best λ moves "
    f"up; the third panel of the tab “{LAMBDA_TAB}”, the critic with the slider's noise, shows where."
)
DECOMPOSITION = (
    r"\text{error} = \text{bias}^2 + \text{variance}, \qquad "
    r"\text{bias}^2 = \big(\mathbb{E}[\hat A \mid s, a] - A(s, a)\big)^2, \qquad "
    r"\text{variance} = \mathbb{E}\big[(\hat A - \mathbb{E}[\hat A \mid s, a])^2\big]"
)

LAMBDA_INTRO = (
    "Computed exactly: every one of the 2^T replies, weighted by its probability. The squared error of GAE "
    "against the exact advantage splits in two, averaged over the visited (state, action) pairs:"
)
"""Above the decomposition and the three panels of the λ section."""
TRAINING_INTRO = (
    "A tabular policy (one logit per state) learns from P(A) = 0.5 everywhere, "
    f"{TokenWorldTrainingSettings.episodes} episodes per update. The GAE critics start at 0 and learn from the "
    "λ-returns as they go (γ = 1; the sliders P(A), λ, critic noise and γ do not enter, T and the threshold do). "
    "Shifting every reward by +5 changes nothing about which replies are better."
)
"""What the training section trains, above its controls."""


THRESHOLD_CLAMPED = "The threshold {value} was more than T = {cap} tokens, so it is now {cap}."
"""Above the sliders when the threshold was clamped to T (widgets.sliders.CappedSlider)."""

READINGS = {
    "V": ("V(start), chance of success", "{value:.4f}"),
    "QA": ("Q(start, A)", "{value:.4f}"),
    "QB": ("Q(start, B)", "{value:.4f}"),
    "AA": ("advantage A(start, A)", "{value:+.4f}"),
    "AB": ("advantage A(start, B)", "{value:+.4f}"),
}
"""The exact values at the start of a reply, under the summary: (label, format) by name."""


def episode_note(reply: str, T: int, episode_seed: int, p_a: float) -> str:
    """Which episode the table shows: the chapter's ABABAA, or one sampled from the policy (and why, if the chapter's was asked for)."""
    if reply == "chapter" and T == len(CHAPTER_REPLY):
        return "The chapter's episode ABABAA (section 6.9). **New episode** samples one from the policy instead."
    lead = f"The chapter's reply has {len(CHAPTER_REPLY)} tokens, so with T = {T} a reply is sampled instead: " if reply == "chapter" else ""
    return f"{lead}episode seed **{episode_seed}**, {T} tokens from the policy with P(A) = {p_a:.2f}."


MC_STALE = "The settings changed since the Monte Carlo check: run it again to check these."
"""Under the lambda panels once a finished check no longer matches the controls (its circles are cleared)."""


def mc_sampling_text(episodes: int, seed: int) -> str:
    """The Monte Carlo check as it starts, before its first episodes arrive."""
    return f"Monte Carlo check: sampling up to {episodes:,} episodes (episode stream of critic seed {seed}) ..."


def mc_checked_text(episodes: int, seed: int, gap: float) -> str:
    """The Monte Carlo check so far: its episodes and its largest gap to the exact total error."""
    return (
        f"Monte Carlo check with **{episodes:,}** sampled episodes (critic seed {seed}): the open circles. "
        f"Largest gap to the exact total error: {gap:.4f}."
    )


def training_note(trained: TokenWorldTrainingSettings | None, controls: TokenWorldTrainingSettings) -> str:
    """What the last run trained with (None before the first), and whether the settings of the `controls` have moved since."""
    if trained is None:
        return "Press **Start** to train; the curves fill in as it goes."
    shift = f"+{trained.shift:g} reward shift" if trained.shift else "no reward shift"
    stale = "" if trained == controls else " The controls have changed since: press **Start** to train with them."
    return (
        f"Trained with T = {trained.T}, threshold {trained.threshold}, {trained.seeds} seeds × {trained.steps} updates "
        f"of {trained.episodes} episodes, {shift}, training seed {trained.seed}.{stale}"
    )


def episode_table_html(e, lam: float, gamma: float, noise: float) -> str:
    """One episode as the seed's "== 3." printout lays it out, as an HTML table."""
    tokens = "".join("A" if a else "B" for a in e.tokens)
    head = ("t", "state (t, k)", "token", "r", "V(s_t)", "V(s_t+1)", "δ", f"GAE (λ = {lam:.2f})", "exact A")
    rows = "".join(
        f"<tr><td>{t}</td><td>({t}, {int(e.k[t])})</td><td>{tokens[t]}</td><td>{e.r[t]:g}</td>"
        f"<td>{e.V[t]:.3f}</td><td>{e.V_next[t]:.3f}</td><td>{e.delta[t]:+.3f}</td>"
        f"<td>{e.gae[t]:+.3f}</td><td>{e.exact_A[t]:+.3f}</td></tr>"
        for t in range(len(tokens))
    )
    caption = (
        f"one episode: tokens {tokens}, reward at the end = {e.r[-1]:g}; λ = {lam:.2f}, γ = {gamma:.2f}; "
        f"critic = exact V plus noise of sd {noise:.2f}"
    )
    extremes = (
        f"<p>λ = 1 (Monte Carlo minus V): {[round(float(x), 3) for x in e.monte_carlo]}<br>"
        f"λ = 0 (one TD error): {[round(float(x), 3) for x in e.delta]}</p>"
    )
    return (
        f'<table class="fl-episode"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr></thead><tbody>{rows}</tbody></table>{extremes}"
    )


EPISODE_CSS = """
.fl-episode { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.3em 0.6em; }
.fl-episode caption { caption-side: top; text-align: left; padding-bottom: 0.3em; }
.fl-episode th, .fl-episode td { padding: 0.15em 0.7em; text-align: right; border-bottom: 1px solid rgba(128,128,128,0.35); }
"""


def lambda_zero_text(T: int, threshold: int, p_a: float, gamma: float) -> str:
    """Why lambda = 0 is perfect with the exact critic (seed 000 section 6.9), with this world's numbers."""
    v = RESULTS.get(token_values, T, threshold, p_a, gamma)
    delta0 = gamma * v.V[1, 1] - v.V[0, 0]  # r_0 = 0 before the last token
    return (
        "**Why λ = 0 is perfect with the exact critic.** In a game the next state is random, so a TD error "
        "equals the advantage only on average. In text the next state is certain: writing A at (t, k) always "
        "leads to (t + 1, k + 1). So with the exact V, δₜ = rₜ + γ V(sₜ₊₁) − V(sₜ) = Q(sₜ, aₜ) − V(sₜ) "
        "= A(sₜ, aₜ) exactly, for every episode: zero bias and zero variance. Here, at the start, choosing A: "
        f"δ₀ = 0 + {gamma:.2f} × V(1, 1) − V(0, 0) = {gamma:.2f} × {v.V[1, 1]:.4f} − {v.V[0, 0]:.4f} = "
        f"{delta0:+.4f}, and the exact advantage is A(s₀, A) = {v.A[0, 0, 1]:+.4f}. Any λ > 0 adds later TD errors, "
        "which are exact too but depend on tokens not yet written: that is the variance in the first panel, "
        f"“exact V”, of the tab “{LAMBDA_TAB}”."
    )


def summary_text(T: int, threshold: int, p_a: float, lam: float, noise: float, values, at_lam, columns) -> str:
    """The sentence under the controls: the success chance, and the errors at the chosen lambda."""
    _, _, chosen = columns
    return (
        f"With T = {T} tokens, at least {threshold} A's to succeed and P(A) = {p_a:.2f}, "
        f"V(start) = <strong>{values.V[0, 0]:.4f}</strong>. At λ = {lam:.2f} the critic with noise {noise:.2f} "
        f"has total error <strong>{at_lam.total[0, chosen]:.4f}</strong> = bias² {at_lam.bias2[0, chosen]:.4f} + "
        f"variance {at_lam.variance[0, chosen]:.4f}; the exact critic {at_lam.total[0, 0]:.4f}."
    )


def training_table(result, settings: TokenWorldTrainingSettings) -> str:
    """The seed's training table (section 6.10) as Markdown, one row per method."""
    at = " / ".join(str(u) for u in result.report_at)
    rows = [
        f"| method | success after {at} updates | median updates to reach {settings.target:g} | sd over seeds at {settings.spread_at} | seeds below 0.5 at the end |",
        "|---|---|---|---|---|",
    ]
    for i, name in enumerate(result.methods):
        median = result.median_to_target[i]
        rows.append(
            f"| {name} | {' / '.join(f'{x:.3f}' for x in result.mean_at[i])} | "
            f"{'never' if not np.isfinite(median) else f'{median:g}'} | {result.sd_at_spread[i]:.3f} | {100 * result.below_half[i]:.0f}% |"
        )
    return "\n".join(rows)

EPISODE_HEADING = "One episode, and what each estimator says about its tokens"
LAMBDA_HEADING = "Bias² and variance of GAE against λ, for three critics"
