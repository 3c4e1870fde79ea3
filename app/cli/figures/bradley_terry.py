"""Bradley-Terry preferences and the reward-model loss: seed 001 sections 7 and 8, label probabilities, Acc* and the worked losses."""

from __future__ import annotations

import math

import numpy as np

from app.cli.figures.text import table
from engines.bradley_terry import BradleyTerrySettings as Settings
from engines.bradley_terry import (
    accuracy_vs_tau,
    bt_loss_gradient,
    bt_loss_np,
    bt_prob,
    fit_normalizer,
    oracle_accuracy,
    sample_labels,
)

WORKED_PAIR = (1.0, 0.2)
"""Section 8's worked example: r_phi(x, y_w) and r_phi(x, y_l)."""

MODELS = {"A": (5.0, 3.0), "B": (105.0, 103.0), "C": (2.5, 1.5)}
"""Section 8's check-yourself: three reward models' scores of one pair, preferred response first."""

TAUS = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Label temperatures of the Acc*-against-rater-noise line (the stretch section)."""


def compute(settings: Settings) -> dict:
    gaps = np.asarray(settings.gaps, dtype=float)
    rng = np.random.default_rng(settings.seed)
    p = bt_prob(gaps, 0.0, settings.tau)
    labels = sample_labels(gaps, 0.0, settings.tau, rng, size=settings.samples)  # (samples, gaps)
    freq = labels.mean(0)
    probabilities = [
        {"gap": float(g), "p": float(pi), "max_p": float(max(pi, 1 - pi)), "label_frequency": float(f),
         "label_frequency_se": math.sqrt(pi * (1 - pi) / settings.samples)}
        for g, pi, f in zip(gaps, p, freq)
    ]
    w, l = WORKED_PAIR
    d_w, d_l = bt_loss_gradient(w, l)
    d_w_rev, _ = bt_loss_gradient(l, w)
    worked = {
        "reward_w": w, "reward_l": l, "delta": w - l,
        "p": float(bt_prob(w, l, 1.0)), "loss": bt_loss_np(w, l),
        "d_reward_w": float(d_w), "d_reward_l": float(d_l),
        "reversed_loss": bt_loss_np(l, w), "reversed_derivative_size": float(abs(d_w_rev)),
        "equal_scores_loss": bt_loss_np(0.0, 0.0),
    }
    # Each model scores the same reference set: B is A plus 100 and C is A halved on every response.
    reference_a = np.concatenate([MODELS["A"], rng.normal(4.0, 1.5, size=8)])
    references = {"A": reference_a, "B": reference_a + 100.0, "C": reference_a / 2.0}
    models = []
    for name, (r_w, r_l) in MODELS.items():
        norm = fit_normalizer(references[name])
        n_w, n_l = norm([r_w, r_l])
        models.append({"model": name, "reward_w": r_w, "reward_l": r_l, "gap": r_w - r_l,
                       "loss": bt_loss_np(r_w, r_l), "correct": bool(r_w > r_l),
                       "mu": norm.mu, "sigma": norm.sigma,
                       "normalized_w": float(n_w), "normalized_l": float(n_l),
                       "normalized_loss": bt_loss_np(n_w, n_l)})
    return {
        "gaps": [float(g) for g in gaps], "tau": settings.tau, "samples": settings.samples,
        "probabilities": probabilities,
        "acc_star": float(oracle_accuracy(gaps, 0.0, settings.tau)),
        "acc_star_vs_tau": [{"tau": t, "acc_star": float(a)} for t, a in zip(TAUS, accuracy_vs_tau(gaps, TAUS))],
        "worked_example": worked,
        "models": models,
    }


def render(result: dict) -> str:
    tau = result["tau"]
    out = [f"Bradley-Terry rater, tau_label = {tau:g} (equation 12)"]
    head = ["gap u_a - u_b", "p = sigma(gap / tau)", "max(p, 1 - p)", f"label frequency ({result['samples']} labels)"]
    lines = [[f"{r['gap']:g}", f"{r['p']:.3f}", f"{r['max_p']:.3f}",
              f"{r['label_frequency']:.3f} ± {r['label_frequency_se']:.3f}"] for r in result["probabilities"]]
    out += ["  " + line for line in table(head, lines)]
    out += [f"  Acc* = {result['acc_star']:.3f} (equation 13)",
            "  Acc* against tau: " + ", ".join(f"{r['tau']:g}: {r['acc_star']:.3f}" for r in result["acc_star_vs_tau"]),
            ""]
    w = result["worked_example"]
    out += [
        f"Worked example: r(x, y_w) = {w['reward_w']:g}, r(x, y_l) = {w['reward_l']:g}, Delta = {w['delta']:.1f} (equation 14)",
        f"  probability sigma(Delta) = {w['p']:.3f}",
        f"  loss -log sigma(Delta) = {w['loss']:.3f}",
        f"  derivative {w['d_reward_w']:.3f} with respect to r(x, y_w), {w['d_reward_l']:+.3f} with respect to r(x, y_l)",
        f"  ranked the wrong way: loss {w['reversed_loss']:.3f}, derivatives of size {w['reversed_derivative_size']:.3f}",
        f"  equal scores: loss log 2 = {w['equal_scores_loss']:.3f}",
        "",
        "Three reward models on one pair, preferred response first (equation 15 fitted on each model's reference scores)",
    ]
    head = ["model", "scores", "gap", "loss", "mu", "sigma", "normalized scores", "normalized loss"]
    lines = [[m["model"], f"({m['reward_w']:g}, {m['reward_l']:g})", f"{m['gap']:g}", f"{m['loss']:.3f}",
              f"{m['mu']:.3f}", f"{m['sigma']:.3f}", f"({m['normalized_w']:.3f}, {m['normalized_l']:.3f})",
              f"{m['normalized_loss']:.3f}"] for m in result["models"]]
    out += ["  " + line for line in table(head, lines)]
    return "\n".join(out)
