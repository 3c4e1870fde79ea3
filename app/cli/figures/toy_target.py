"""The toy target task: seed 001 sections 2 to 5, the exact gradient, the Exercise 2 variance table and Figure 2."""

from __future__ import annotations

import math

import numpy as np

from app.cli.figures.text import table
from engines.toy_target import ESTIMATORS, draw_target, run_training, variance_experiment
from engines.toy_target import ToyTargetSettings as Settings


def _sd_with_se(x: np.ndarray) -> tuple[float, float]:
    """Sample sd and its standard error from the samples, SE(s) = SE(s^2) / (2 s)."""
    d = x - x.mean()
    var = float(d @ d / (len(x) - 1))
    se_var = float(np.std(d**2, ddof=1) / math.sqrt(len(x)))
    return math.sqrt(var), se_var / (2 * math.sqrt(var)) if var > 0 else 0.0


def compute(settings: Settings) -> dict:
    T, V, N, B = settings.T, settings.V, settings.samples, settings.batches
    target = draw_target(T, V, settings.target_seed)
    theta = np.zeros((T, V, V))  # the uniform start
    ex = variance_experiment(theta, target, N, B, np.random.default_rng(settings.seed))
    grad_sq = float((ex.exact**2).sum())
    rows = []
    for name, g in ex.estimates.items():
        mean = g.mean(0)
        spread = ((g - mean) ** 2).reshape(B, -1).sum(-1) * B / (B - 1)  # unbiased total-variance terms
        exact_total = float(ex.exact_variances[name].sum())
        rows.append({
            "estimator": name,
            "label": ESTIMATORS[name],
            "total_variance": float(spread.mean()),
            "total_variance_se": float(spread.std(ddof=1) / math.sqrt(B)),
            "total_variance_exact": exact_total,
            "mean_error": float(np.sqrt(((mean - ex.exact) ** 2).sum())),
            "mean_error_expected": math.sqrt(exact_total / B),
            "scale": float((mean * ex.exact).sum() / grad_sq),
            "scale_exact": 1 - 1 / N if name == "batch_mean" else 1.0,
        })
    coord = ex.coordinate
    fig2 = {"coordinate": list(coord), "exact_gradient": float(ex.exact[coord]), "batches": B}
    for key, name in (("no_baseline", "none"), ("loo", "loo")):
        x = ex.estimates[name][(slice(None), *coord)]
        sd, se = _sd_with_se(x)
        fig2 |= {f"sd_{key}": sd, f"sd_{key}_se": se, f"sd_{key}_exact": math.sqrt(float(ex.exact_variances[name][coord])),
                 f"mean_{key}": float(x.mean()), f"mean_{key}_se": float(x.std(ddof=1) / math.sqrt(B)),
                 f"zero_share_{key}": float((np.abs(x) < 1e-12).mean())}
    run = run_training(settings)
    training = {"lr": settings.lr, "steps": settings.steps, "threshold": settings.threshold, "seeds": settings.seeds,
                "rows": [{"estimator": name, "label": ESTIMATORS[name],
                          "steps_to_threshold": [int(s) if s >= 0 else None for s in run.steps_to_threshold[e]],
                          "final_J": [float(j) for j in run.J[e, :, -1]]}
                         for e, name in enumerate(run.estimators)]}
    return {
        "T": T, "V": V, "samples": N, "target": [int(y) for y in target],
        "responses": V**T,
        "log_pi_uniform": T * math.log(1 / V),
        "exact_match_probability": float(V ** -T),
        "all_zero_batch_probability_64": float((1 - V ** -T) ** 64),
        "J": ex.J,
        "exact_gradient_norm": math.sqrt(grad_sq),
        "variance_table": rows,
        "figure2": fig2,
        "training": training,
    }


def render(result: dict) -> str:
    T, V, N = result["T"], result["V"], result["samples"]
    f2, tr = result["figure2"], result["training"]
    out = [
        f"Toy target task: T = {T} symbols from a vocabulary of {V}, target y* = {' '.join(map(str, result['target']))}",
        "",
        "Check yourself (uniform policy)",
        f"  log pi(y | x) = {T} log(1/{V}) = {result['log_pi_uniform']:.2f} for every response",
        f"  exact match probability (1/{V})^{T} = 1/{result['responses']:,} = {result['exact_match_probability']:.2g}",
        f"  an all-or-nothing reward gives a batch of 64 only zeros with probability "
        f"{result['all_zero_batch_probability_64']:.4f}",
        "",
        f"Exact gradient by enumeration of {result['responses']:,} responses (equations 3, 4)",
        f"  J = {result['J']:.4f}   |grad J| = {result['exact_gradient_norm']:.4f}   "
        f"dJ/dtheta{tuple(f2['coordinate'])} = {f2['exact_gradient']:.4f} (the target's first symbol at step 1)",
        "",
        f"Exercise 2: {f2['batches']} one-batch estimates (N = {N}) at the uniform policy, the same samples for every row",
    ]
    head = ["estimator", "total variance", "exact", "|mean - grad J|", "expected", "mean along grad J", "exact"]
    lines = [[r["label"], f"{r['total_variance']:.5f} ± {r['total_variance_se']:.5f}", f"{r['total_variance_exact']:.5f}",
              f"{r['mean_error']:.4f}", f"{r['mean_error_expected']:.4f}", f"{r['scale']:.3f}", f"{r['scale_exact']:.3f}"]
             for r in result["variance_table"]]
    out += ["  " + line for line in table(head, lines)]
    out += [
        "  (± one standard error; 'expected' is the size of |mean - E g_hat| from noise alone, sqrt(tr Var / batches))",
        "",
        f"Figure 2: one coordinate, {f2['batches']} one-batch estimates (N = {N}); exact gradient {f2['exact_gradient']:.4f}",
    ]
    head = ["", "sd", "exact sd", "mean", "zero estimates"]
    lines = [[label, f"{f2[f'sd_{k}']:.3f} ± {f2[f'sd_{k}_se']:.4f}", f"{f2[f'sd_{k}_exact']:.4f}",
              f"{f2[f'mean_{k}']:.4f} ± {f2[f'mean_{k}_se']:.4f}", f"{f2[f'zero_share_{k}']:.1%}"]
             for label, k in (("no baseline", "no_baseline"), ("leave-one-out", "loo"))]
    out += ["  " + line for line in table(head, lines)]
    out += ["", f"Training: steps to J >= {tr['threshold']:g}, {tr['seeds']} seeds, N = {N}, "
                f"plain gradient ascent with lr = {tr['lr']:g}, at most {tr['steps']} steps (- = not reached)"]
    head = ["estimator", "steps per seed", "reached", "final J (mean)"]
    lines = [[r["label"], " ".join("-" if s is None else str(s) for s in r["steps_to_threshold"]),
              f"{sum(s is not None for s in r['steps_to_threshold'])}/{len(r['steps_to_threshold'])}",
              f"{np.mean(r['final_J']):.3f}"] for r in tr["rows"]]
    out += ["  " + line for line in table(head, lines)]
    return "\n".join(out)
