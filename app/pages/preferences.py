"""Preferences and the accuracy ceiling: the Bradley-Terry rater of seed 001 section 7.

A rater prefers response a to response b with probability sigma((u_a - u_b) / tau_label)
(equation 12). Even the true quality u predicts a label only with probability
max(p, 1 - p), so over a set of pairs no model can beat Acc* = E[max(p, 1 - p)]
(equation 13). The page draws P(a > b) against the gap, Acc* against tau_label, and
compares Acc* with the accuracy of u on a freshly sampled labelled set.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Span

from engines.bradley_terry import accuracy_vs_tau, bt_prob, oracle_accuracy, sample_labels
from widgets.downloads import plot_with_downloads
from widgets.equation_card import equation_card
from widgets.metrics import MetricRow
from widgets.predict import PredictionCard, card_spec, session_guide
from widgets.run_controls import seed_control
from widgets.sliders import slider
from widgets.style import OKABE_ITO, plot
from widgets.updates import one_update
from widgets.url_state import sync_url

TITLE = "Preferences and the accuracy ceiling"
SUMMARY = "A noisy rater labels pairs by Bradley-Terry; even the true quality cannot predict every label."
READY_AHEAD = True

SEED_GAPS = np.array([0.0, 1.0, 2.0])
"""The check-yourself set of section 7: three pairs with quality gaps 0, 1 and 2."""
HALF_NORMAL = np.array([NormalDist().inv_cdf(0.5 + 0.5 * (i + 0.5) / 400) for i in range(400)])
"""400 equally likely quantiles of |N(0, 1)|: Acc* of the |N(0, s)| gaps is their average, exactly
enough (no sampling noise) for a smooth curve."""
GAP_AXIS = np.linspace(-4.0, 4.0, 161)
"""Quality gaps u_a - u_b drawn on the P(a > b) plot."""
TAU_AXIS = np.geomspace(0.05, 5.0, 121)
"""Label temperatures of the Acc* curve, evenly spaced on a log axis."""
BINS = np.linspace(0.0, 4.0, 9)
"""Gap bins for the label frequencies of a sampled |N(0, s)| set."""

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


def gap_population(gaps: str, s: float) -> np.ndarray:
    """The gaps Acc* averages over: the seed's 0, 1, 2, or the quantiles of |N(0, s)|."""
    return SEED_GAPS if gaps == "seed" else s * HALF_NORMAL


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


SCORES_OR_COMPARISONS = card_spec("preferences/scores-or-comparisons", COMPARE_QUESTION, COMPARE_CHOICES, "comparisons")
CEILING = card_spec("preferences/ceiling", CEILING_QUESTION, ceiling_choices(), "ceiling", kind="Check yourself")
CARDS = (SCORES_OR_COMPARISONS, CEILING)
"""The page's prediction cards, in the order it shows them (the room's tally lists them so)."""


class PreferencesPage(pn.viewable.Viewer):
    """tau_label, the gap distribution and a sampled labelled set; P(a > b) and Acc* curves."""

    tau = param.Number(default=0.5, bounds=(0.05, 5.0), step=0.05, label="Label temperature τ_label")
    gaps = param.Selector(
        default="seed", objects={"gaps 0, 1, 2 (the seed's check-yourself)": "seed", "gaps from |N(0, s)|": "normal"}, label="Quality gaps"
    )
    s = param.Number(default=1.0, bounds=(0.1, 4.0), step=0.1, label="Spread s of the gaps (gold-score units)")
    n = param.Integer(default=300, bounds=(10, 5000), step=10, label="Labelled pairs n")
    seed = param.Integer(default=0, bounds=(0, 999_999), label="Seed")

    def __init__(self, query: dict[str, str] | None = None, **params):
        super().__init__(**params)
        self.prob = ColumnDataSource(name="probability")
        self.freq = ColumnDataSource(name="label_frequency")
        self.ceiling = ColumnDataSource(name="ceiling")
        self.marker = ColumnDataSource(name="current_tau")
        self.prob_figure, self.ceiling_figure = self._figures()
        self.summary = pn.pane.HTML(sizing_mode="stretch_width", styles={"font-size": "1.1em"})
        self.metrics = MetricRow(
            {
                "ceiling": ("Acc* (the ceiling)", "{value:.3f}"),
                "accuracy": ("accuracy of u on the sample", "{value:.3f}"),
                "se": ("binomial standard error", "{value:.3f}"),
                "expected": ("Acc* of the sampled gaps", "{value:.3f}"),
            }
        )
        self.guide = session_guide()
        self.compare_card = PredictionCard.of(SCORES_OR_COMPARISONS, COMPARE_EXPLANATION, self.guide)
        self.ceiling_card = PredictionCard.of(CEILING, check_yourself_text(), self.guide)
        self.param.watch(self._changed, ["tau", "gaps", "s", "n", "seed"])
        self.notice = sync_url(self, ["tau", "gaps", "s", "n", "seed"], query)
        self._update_ceiling_curve()
        self._update_tau()
        self._update_sample()

    def _figures(self):
        prob = plot("quality gap u_a − u_b (gold-score units)", "P(a preferred to b)", x_range=(-4, 4), y_range=(0, 1.02), height=300)
        prob.add_layout(Span(location=0.5, dimension="width", line_color=OKABE_ITO["grey"], line_dash=[4, 3]))
        prob.line("gap", "p", source=self.prob, color=OKABE_ITO["blue"], line_width=2, legend_label="σ(gap / τ_label)")
        prob.scatter("gap", "frequency", source=self.freq, color=OKABE_ITO["orange"], size=9, legend_label="label frequency in the sample")
        prob.legend.location = "top_left"
        ceiling = plot("label temperature τ_label (log scale)", "Acc*, best possible accuracy", x_axis_type="log", x_range=(0.05, 5), y_range=(0.45, 1.02), height=300)
        ceiling.line("tau", "acc", source=self.ceiling, color=OKABE_ITO["green"], line_width=2, legend_label="Acc* for these gaps")
        ceiling.scatter("tau", "acc", source=self.marker, color=OKABE_ITO["vermillion"], size=11, legend_label="current τ_label")
        self.tau_rule = Span(location=self.tau, dimension="height", line_color=OKABE_ITO["grey"], line_dash=[4, 3])
        ceiling.add_layout(self.tau_rule)
        ceiling.legend.location = "top_right"
        return prob, ceiling

    def _changed(self, *events):
        # One batch per slider step; the plots' data first, the text after it.
        names = {e.name for e in events}
        with one_update():
            if names & {"gaps", "s"}:
                self._update_ceiling_curve()
            if names & {"tau", "gaps", "s"}:
                self._update_tau()
            self._update_sample()

    def _update_ceiling_curve(self):
        self.ceiling.data = {"tau": TAU_AXIS, "acc": accuracy_vs_tau(gap_population(self.gaps, self.s), TAU_AXIS)}

    def _update_tau(self):
        self.tau_rule.location = self.tau
        ceiling = float(oracle_accuracy(gap_population(self.gaps, self.s), 0.0, self.tau))
        self.marker.data = {"tau": [self.tau], "acc": [ceiling]}
        self.prob.data = {"gap": GAP_AXIS, "p": bt_prob(GAP_AXIS, 0.0, self.tau)}

    def _update_sample(self):
        sample = labelled_set(self.gaps, self.s, self.tau, self.n, self.seed)
        self.sample = sample
        self.freq.data = {"gap": sample["bin_gap"], "frequency": sample["bin_frequency"], "pairs": sample["bin_pairs"]}
        ceiling = float(oracle_accuracy(gap_population(self.gaps, self.s), 0.0, self.tau))
        self.summary.object = f'<p class="fl-summary">{summary_text(self.tau, ceiling, sample)}</p>'
        self.metrics.update(ceiling=ceiling, accuracy=sample["accuracy"], se=sample["se"], expected=sample["expected"])

    def __panel__(self):
        controls = pn.Column(
            pn.widgets.RadioButtonGroup.from_param(self.param.gaps),
            pn.Row(
                slider(self.param.tau, width=300),
                slider(self.param.s, width=300, visible=self.param.gaps.rx() == "normal"),
            ),
            pn.Row(slider(self.param.n, width=300), seed_control(self.param.seed)),
        )
        return pn.Column(
            self.notice,
            equation_card(INTRO, EQUATION, NOTICE, why=WHY, prediction=(self.compare_card, self.ceiling_card)),
            controls,
            self.ceiling_card.guard(
                self.summary,
                self.metrics,
                pn.Row(
                    plot_with_downloads(self.prob_figure, {"probability": self.prob, "label_frequency": self.freq}, "P(a ≻ b) against the gap"),
                    plot_with_downloads(self.ceiling_figure, {"ceiling": self.ceiling}, "The ceiling Acc* against τ_label"),
                    sizing_mode="stretch_width",
                ),
                note="the ceiling and the sampled labels",
            ),
            sizing_mode="stretch_width",
        )


def labelled_set(gaps: str, s: float, tau: float, n: int, seed: int) -> dict:
    """n rater labels (equation 12) and how well the true quality u predicts them.

    The pairs' gaps u_a - u_b >= 0 are the seed's 0, 1, 2 drawn uniformly, or |N(0, s)|
    draws; u predicts "a preferred" for every pair (a is never the worse one), so its
    accuracy is the fraction of labels that prefer a. Its binomial standard error is
    sqrt(acc (1 - acc) / n); its expectation is Acc* of the sampled gaps.
    """
    rng = np.random.default_rng(seed)
    g = SEED_GAPS[rng.integers(0, 3, size=n)] if gaps == "seed" else s * np.abs(rng.standard_normal(n))
    prefers_a = sample_labels(g, 0.0, tau, rng)
    accuracy = float(prefers_a.mean())
    if gaps == "seed":
        centres, members = SEED_GAPS, [g == v for v in SEED_GAPS]
    else:
        which = np.clip(np.digitize(g, BINS) - 1, 0, len(BINS) - 2)
        centres, members = (BINS[:-1] + BINS[1:]) / 2, [which == k for k in range(len(BINS) - 1)]
    counts = np.array([m.sum() for m in members])
    keep = counts > 0
    freq = np.array([prefers_a[m].mean() if m.any() else np.nan for m in members])
    return {
        "gap": g,
        "prefers_a": prefers_a,
        "accuracy": accuracy,
        "correct": int(prefers_a.sum()),
        "n": n,
        "seed": seed,
        "se": float(np.sqrt(accuracy * (1 - accuracy) / n)),
        "expected": float(oracle_accuracy(g, 0.0, tau)),
        "bin_gap": centres[keep],
        "bin_frequency": freq[keep],
        "bin_pairs": counts[keep],
    }


def summary_text(tau: float, ceiling: float, sample: dict) -> str:
    """The sentence under the controls: the ceiling beside the sampled accuracy and its error."""
    return (
        f"At τ_label = {tau:.2f} the ceiling is <strong>Acc* = {ceiling:.3f}</strong>. On {sample['n']} freshly "
        f"labelled pairs (seed {sample['seed']}) the true quality u predicts {sample['correct']} labels: accuracy "
        f"<strong>{sample['accuracy']:.3f} ± {sample['se']:.3f}</strong> (one binomial standard error)."
    )


def page(query: dict[str, str] | None = None) -> PreferencesPage:
    """A fresh page for one browser session (its controls read from the link's query)."""
    return PreferencesPage(query=query)
