"""The KL page's words: its fixed texts and questions, and the sentences and tables it writes from the numbers.

Everything here is text about seed 000 section 6.12 (the best policy under reward minus beta KL,
pi*(y) = pi_ref(y) exp(r(y) / beta) / Z) and the sampled frontier of the live runs; the numbers
come from engines/kl_optimal.py, and app/pages/kl/__init__.py shows them.
"""

from __future__ import annotations

import html
import math

import numpy as np

from engines.kl_optimal import (
    REFERENCE,
    OptimalPolicy,
    ReplySpace,
    SampledFrontier,
    boost_factor,
)

BEST_WORD = "superb"
"""The highest-valence word; the toggle gives it zero reference probability."""
ZERO_BEST_LABEL = f"Give “{BEST_WORD}” zero reference probability"
"""The box that takes the best word out of the reference (under the β slider)."""
SEED_BETAS = (0.2, 0.05)
"""The seed's worked exchange rates: a log-odds gap of 1 at beta = 0.2 and at beta = 0.05."""
TOP_N = 8
"""Rows of the table of the most likely replies under pi*."""
PAIR = ("better reply (reward + gap)", "worse reply")
"""The two equally likely replies of the exchange-rate panel."""

WHY = (
    "Trained against a reward alone, a language model finds whatever pleases the reward and drifts into "
    "text nobody would write; the KL penalty keeps it near the model it started from, and β says how near. "
    "On a reply space small enough to enumerate, the best policy for every β is known exactly, so you can "
    "see what β buys: how much reward, at how much distance from the reference."
)
INTRO = (
    "Training on the reward minus β times the KL from the reference can at best reach one "
    "distribution, and it has a closed form: the reference, with every reply's probability "
    "multiplied by exp(r/β) and renormalised. Here the replies are all 216 three-word sequences over "
    "six words (superb, good, fine, plot, dull, awful), the reference draws each word independently "
    "(superb is rare: 0.04), and the reward is the mean valence of the words, from +1 (superb) to −1 "
    "(awful). Move β and the best policy moves along the reward-KL frontier."
)
EQUATION = (
    r"\pi^*(y \mid x) = \frac{1}{Z(x)}\,\pi_{\text{ref}}(y \mid x)\,\exp\!\big(r(x, y)/\beta\big)"
    r"\quad\text{maximises}\quad \mathbb{E}_{\pi}[r] - \beta\,\mathrm{KL}(\pi \,\Vert\, \pi_{\text{ref}})"
)
NOTICE = (
    "β is the exchange rate between reward and nats of KL: at β = 0.05 one unit of reward is worth "
    "moving 20 nats from the reference. A large β keeps π* on the reference; as β → 0 the factor "
    "exp(r/β) swamps it and all the probability goes to the single highest-reward reply, "
    "“superb superb superb”, the collapse of Chapter 6's Run 1 (section 6.11; no penalty: reward at its maximum, "
    "the entropy gone). Only replies the reference already writes can be boosted: give “superb” zero "
    "reference probability and every reply containing it stays at exactly 0, for every β."
)
SECTIONS = {
    "distributions": "π_ref and π*, reply by reply",
    "frontier": "The reward-KL frontier",
    "replies": "The likeliest replies; one never written",
    "two": "Two replies: the exchange rate",
    "live": "Where the live runs sit",
}
"""The page's tabs: the `section` a link names, and the tab's title."""
DISTRIBUTIONS_HEADING = "The reference and the best policy, reply by reply"
TOP_HEADING = "The most likely replies under π*"
NEVER_HEADING = "A reply the reference never writes"
TWO_HEADING = "Two equally likely replies: the exchange rate e^(gap/β)"
METRICS = {
    "beta": ("β (reward per nat)", "{value:g}"),
    "reward": ("E[r] under π*", "{value:.3f}"),
    "kl": ("KL(π* ‖ π_ref), nats", "{value:.3f}"),
    "entropy": ("entropy of π*, nats", "{value:.3f}"),
    "objective": ("E[r] − β·KL", "{value:.3f}"),
    "top": ("probability of the most likely reply", "{value:.3f}"),
}
"""The numbers under the controls: label and format of each, by the key the page updates."""
LIVE_INTRO = (
    "<p>The same frontier for the language model of the live-run page, whose replies cannot be enumerated: "
    "it is sampled, and each run's held-out evaluations (exact KL, reward) are drawn over it, step by step.</p>"
)
FIRST_START = "<p>Press Start to sample the frontier of this model and reward.</p>"
NEW_START = "<p>Press Start to sample the frontier with these settings.</p>"
LOADING = "<p>Loading the model and the reward…</p>"
START_AGAIN = "<p>Change the model or the reward above, then press Start again.</p>"
"""The live section's status line: before the first Start, after a setting changed, while loading, after a failure."""
COLLAPSE_QUESTION = "As β → 0 the penalty vanishes. What does the best policy π* do?"
COLLAPSE_CHOICES = {
    "stays": "it stays close to the reference",
    "spreads": "it spreads its probability evenly over the high-reward replies",
    "collapses": "it puts all its probability on the single highest-reward reply",
}
NEVER_QUESTION = (
    f"Suppose the reference never writes “{BEST_WORD}”: every reply containing it has π_ref = 0. What "
    f"probability does π* give “{' '.join([BEST_WORD] * 3)}”, the reply with the highest reward, when β is very small?"
)
NEVER_CHOICES = {
    "zero": "exactly 0, for every β",
    "tiny": "a tiny amount that grows as β shrinks",
    "most": "most of the probability as β → 0, since its reward is the highest",
}


def collapse_text(space: ReplySpace) -> str:
    """The answer to the β → 0 question, with the seed's exchange rates and the numbers of `space`."""
    best = int(np.argmax(space.r))
    rates = " and ".join(
        f"e<sup>{1 / b:.0f}</sup> {factor_html(1 / b, float(boost_factor(1.0, b)))} at β = {b}" for b in SEED_BETAS
    )
    return (
        "All of it goes to the single highest-reward reply. π* multiplies each reference probability by exp(r/β), "
        f"so two replies one unit of reward apart differ by a factor e<sup>1/β</sup>: {rates}. As β shrinks the "
        f"factor grows without bound, and π* ends on “{space.replies[best]}”: the reward reaches its maximum, "
        f"{space.r[best]:+.0f}, the entropy falls to 0, and the KL climbs to −log π_ref of that reply, "
        f"{-space.ref_logp[best]:.2f} nats. That is the collapse of a run without a penalty: one reply, over and over."
    )


def never_written_text(space: ReplySpace) -> str:
    """The answer to the zero-reference-probability question on `space` (the reference without the best word):
    0 for every beta, and where pi* goes instead."""
    top = int(np.argmax(np.where(np.isfinite(space.ref_logp), space.r, -np.inf)))
    return (
        "Exactly 0, for every β. π* is the reference times a finite factor exp(r/β), renormalised, so a reply the "
        "reference never writes stays at probability 0 however high its reward: log π* = log π_ref + r/β − log Z "
        "= −∞. The penalty can only reweight what the reference already writes; as β → 0 the probability goes to "
        f"the best reply that is left, “{space.replies[top]}” (reward {space.r[top]:+.2f}). Tick the box "
        f"“{ZERO_BEST_LABEL}” under the β slider to see it."
    )


def contains_best(space: ReplySpace) -> np.ndarray:
    """Which replies contain the word "superb", (Y,) booleans."""
    return np.array([BEST_WORD in reply.split() for reply in space.replies])


def probability_text(logp: float) -> str:
    """The probability e^logp as shown: "0" only when it is exactly 0 (logp = -inf).

    Small ones in scientific notation, and those below the float range (e^-1000) as a
    power of ten, so that a tiny probability is never shown as 0.
    """
    logp = float(logp)
    if logp == -math.inf:
        return "0"
    p = math.exp(logp)
    if p == 0.0:
        return f"~10<sup>{logp / math.log(10):.0f}</sup>"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def factor_html(exponent: float, factor: float) -> str:
    """e^exponent written for a reader: 148, 4.9 × 10^8, or its power of ten beyond the float range."""
    if not math.isfinite(factor):
        return f"≈ 10<sup>{exponent / math.log(10):.0f}</sup>"
    if factor < 1e4:
        return f"= {factor:.3g}" if factor < 100 else f"= {factor:.0f}"
    mantissa, power = f"{factor:.1e}".split("e")
    return f"≈ {mantissa} × 10<sup>{int(power)}</sup>"


def summary_text(beta: float, space: ReplySpace, policy: OptimalPolicy) -> str:
    """The sentence under the controls: pi*'s most likely reply, its probability, the exchange rate."""
    logp = policy.logp[0]
    top = int(np.argmax(logp))
    return (
        f"At β = {beta:g} the best policy's most likely reply is <strong>“{space.replies[top]}”</strong> "
        f"(reward {space.r[top]:+.3f}) with probability <strong>{probability_text(logp[top])}</strong>; the reference "
        f"gives it {probability_text(space.ref_logp[top])}. Gaining one unit of reward is worth "
        f"moving {1 / beta:.3g} nats from the reference."
    )


def two_replies_html(gap: float, beta: float, logp: np.ndarray) -> str:
    """Two equally likely replies, rewards gap apart: pi* prefers the better by exp(gap / beta)."""
    factor = float(boost_factor(gap, beta))
    rows = "".join(
        f"<tr><td>β = {b}</td><td>e<sup>1/{b}</sup> = e<sup>{1 / b:.0f}</sup> "
        f"{factor_html(1 / b, float(boost_factor(1.0, b)))}</td></tr>"
        for b in SEED_BETAS
    )
    return (
        '<div class="fl-two">'
        "<p>Two replies the reference finds equally likely, the better one's reward (log-odds) higher by the gap: "
        "π* prefers it by the factor exp(gap / β).</p>"
        f'<p class="fl-two-now">gap {gap:.1f}, β = {beta:g}: e<sup>{gap:.1f}/{beta:g}</sup> = '
        f"e<sup>{gap / beta:.4g}</sup> <strong>{factor_html(gap / beta, factor)}</strong>; "
        f"π*(better) = {probability_text(logp[0])}, π*(worse) = {probability_text(logp[1])}.</p>"
        f"<p>Chapter 6's worked example (section 6.12, gap 1):</p><table>{rows}</table></div>"
    )


def zero_html(zero_best: bool, beta: float, space: ReplySpace, policy: OptimalPolicy, frontier: OptimalPolicy) -> str:
    """What pi* gives the replies containing "superb", with or without the word in the reference."""
    mask = contains_best(space)
    best = space.replies.index(" ".join([BEST_WORD] * 3))
    log_best = policy.logp[0, best]
    log_mass = np.logaddexp.reduce(policy.logp[0, mask])  # log of pi*'s total on those replies
    if not zero_best:
        return (
            f"<p>The reference writes “{BEST_WORD}” with probability {REFERENCE[0]} per word, so "
            f"“{space.replies[best]}” has π_ref = {probability_text(space.ref_logp[best])} and, at "
            f"β = {beta:g}, π* = <strong>{probability_text(log_best)}</strong>. The {mask.sum()} replies containing "
            f"“{BEST_WORD}” hold {probability_text(log_mass)} of π*. Tick the box “{ZERO_BEST_LABEL}” under the β "
            "slider to make the word impossible under the reference.</p>"
        )
    log_sweep = np.logaddexp.reduce(frontier.logp[:, mask], axis=-1).max()
    reachable = np.where(np.isfinite(space.ref_logp), space.r, -np.inf)
    top = int(np.argmax(reachable))
    return (
        f"<p>“{BEST_WORD}” has reference probability 0 (the other words renormalised), so the {mask.sum()} "
        f"replies containing it have π_ref = 0. Under π* at β = {beta:g}: "
        f"π*(“{space.replies[best]}”) = <strong class=\"fl-zero\">{probability_text(log_best)}</strong> and all "
        f"{mask.sum()} together hold <strong>{probability_text(log_mass)}</strong>; the most they hold at any of the "
        f"{len(frontier.beta)} β of the frontier sweep is {probability_text(log_sweep)}. log π* = log π_ref + r/β − log Z "
        f"= −∞ for every finite β. The best π* can now reach is “{space.replies[top]}” (reward {space.r[top]:+.2f}).</p>"
    )


def top_table_html(space: ReplySpace, policy: OptimalPolicy) -> str:
    """The TOP_N most likely replies under pi*, with their reward, pi_ref, pi* and boost pi*/pi_ref."""
    logp = policy.logp[0]
    rows = []
    for y in np.argsort(-logp, kind="stable")[:TOP_N]:
        ratio = float(np.exp(logp[y] - space.ref_logp[y]))
        rows.append(
            f"<tr><td>{html.escape(space.replies[y])}</td><td>{space.r[y]:+.3f}</td>"
            f"<td>{probability_text(space.ref_logp[y])}</td><td>{probability_text(logp[y])}</td>"
            f"<td>{ratio:.3g}</td></tr>"
        )
    head = "<tr><th>reply</th><th>reward r</th><th>π_ref</th><th>π*</th><th>π* / π_ref</th></tr>"
    return f'<table class="fl-top">{head}{"".join(rows)}</table>'


def source_label(source: dict) -> str:
    """How a reference model, reward and reply length read in the chooser (and in the link)."""
    prompts = (f"review prompts of {source['prompt_tokens']} tokens" if source["prompt_set"] == "reviews"
               else f"{source['prompt_set']} prompts")
    return f"{source['model']} · {source['reward']} · T = {source['T']} · {prompts}"


def approximation_html(samples: int, prompts: int) -> str:
    """What the sampled frontier is and is not, with this m and M."""
    ceiling = math.log(samples)
    return (
        '<p class="fl-approx">How this frontier is made: the starting model π<sub>ref</sub>(·|x) is replaced by '
        f"<b>m = {samples}</b> replies sampled from it for each of M = {prompts} held-out prompts, each of weight 1/m, "
        "and π* reweights those replies only, in proportion to exp(R/β). So (1) its KL never exceeds "
        f"<b>log m = {ceiling:.2f} nats</b> per reply (the dashed line): an evaluation further right has nothing to "
        "compare against, and each doubling of m moves the line only log 2 = 0.69 nats. (2) It is a lower bound on the "
        "true frontier, not an estimate of it: each point is what the starting model really reaches by drawing m replies "
        "and keeping one with probability ∝ exp(R/β) (at β → 0, the best of m), at that reward and at most that KL, "
        "whereas the true best policy can also move probability onto replies m samples never showed. (3) It carries "
        "sampling noise from the M prompts and m replies. A run below the curve is beaten by that resampling of the "
        "starting model at no more KL; a run well above it shows where the true frontier is higher than this curve. "
        "KL is per reply, in nats, as the runs' exact held-out KL.</p>"
    )


def sampled_html(view) -> str:
    """How far the sampling of the frontier (an app.jobs.model_jobs.FrontierView with its frontier) has got, and what it found."""
    f = view.frontier
    return (
        f"<p>{view.done} of {view.total} prompts × {view.samples} replies sampled and scored in {view.seconds:.1f} s. "
        f"Mean reward of the samples (π_ref, KL 0): <b>{f.reference_reward:+.3f}</b>; best of {view.samples} "
        f"(β → 0, KL {f.kl[0]:.2f} nats): <b>{f.best_reward:+.3f}</b>. The best sample for the first prompt: "
        f"“{view.best_reply}”.</p>"
    )


def points_summary(points: dict, frontier: SampledFrontier) -> str:
    """How many run evaluations lie within the frontier's reach, and how many of those lie below it."""
    gaps = np.asarray(points["reward"], dtype=float) - np.asarray(points["frontier_reward"], dtype=float)
    reach = np.isfinite(gaps)
    if len(gaps) == 0:
        return "No run's evaluations to draw: start runs on the live-run page with this model and reward."
    text = (f"{len(gaps)} evaluations drawn; {int(reach.sum())} lie within the frontier's reach, a KL of "
            f"{frontier.kl.max():.2f} nats (log m = {frontier.ceiling:.2f}, less where the best samples tie)")
    if reach.any():
        below = int((gaps[reach] < 0).sum())
        text += f", {below} of them below the sampled frontier and {int(reach.sum()) - below} on or above it"
    return text + "."


def runs_summary_html(points: dict, frontier: SampledFrontier | None, view_end: float) -> str:
    """The line under the live figure: the runs' evaluations (`points`, run_columns') against the frontier if there
    is one, and how many lie right of the view's end `view_end` (nats)."""
    kl = np.asarray(points["kl"], dtype=float)
    text = f"{len(kl)} evaluations drawn." if frontier is None and len(kl) else points_summary(points, frontier)
    beyond = int((kl > view_end).sum())
    if beyond:
        text += f" {beyond} lie right of the view (up to {kl.max():.1f} nats): zoom out to see them."
    return f'<p class="fl-lm-summary">{text}</p>'


CSS = """
.fl-top, .fl-two table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.fl-top th, .fl-top td, .fl-two td { padding: 0.15em 0.7em; text-align: right; border-bottom: 1px solid rgba(128,128,128,0.3); }
.fl-top td:first-child, .fl-top th:first-child, .fl-two td:first-child { text-align: left; }
.fl-two-now { font-size: 1.1em; }
"""

