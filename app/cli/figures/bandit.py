"""The four-armed bandit: one REINFORCE step by hand, the Monte Carlo check and the baseline sweep (seed 000, 6.4-6.7)."""

from __future__ import annotations

import numpy as np

from engines.bandit import BanditSettings as Settings
from engines.bandit import (
    exact_gradient,
    exact_total_variance,
    expected_return,
    monte_carlo,
    one_step,
    optimal_baseline,
)


def _floats(x) -> list[float]:
    return [float(v) for v in np.asarray(x).ravel()]


def compute(settings: Settings) -> dict:
    mu, theta, sd = settings.means, settings.theta, settings.sd
    J = float(expected_return(mu, theta))
    step = one_step(mu, theta, settings.action, settings.reward, settings.lr)
    # sections 6.4 and 6.7 share one set of samples: b = 0, b = J, then the sweep
    mc = monte_carlo(mu, sd, theta, (0.0, J, *settings.b), settings.samples, settings.seed)
    exact_var = exact_total_variance(mu, sd, theta, mc.b)
    b_star = float(optimal_baseline(mu, theta))
    return {
        "means": list(mu),
        "sd": sd,
        "theta": list(theta),
        "samples": settings.samples,
        "seed": settings.seed,
        "pi": _floats(step.pi),
        "J": J,
        "exact_gradient": _floats(exact_gradient(mu, theta)),
        "b_star": b_star,
        "exact_total_variance_at_b_star": float(exact_total_variance(mu, sd, theta, b_star)),
        "one_step": {
            "action": settings.action,
            "reward": settings.reward,
            "lr": settings.lr,
            "score": _floats(step.score),
            "grad_no_baseline": _floats(step.grad_no_baseline),
            "b": step.b,
            "grad_baseline": _floats(step.grad_baseline),
            "new_pi_no_baseline": _floats(step.new_pi_no_baseline),
            "new_pi_baseline": _floats(step.new_pi_baseline),
        },
        "exact_total_variance_no_baseline": float(exact_var[0]),
        "exact_total_variance_value_baseline": float(exact_var[1]),
        "mc_mean_score": _floats(mc.mean_score),
        "mc_mean_estimate_no_baseline": _floats(mc.mean_estimate[0]),
        "mc_mean_estimate_value_baseline": _floats(mc.mean_estimate[1]),
        "mc_total_variance_no_baseline": float(mc.total_variance[0]),
        "mc_total_variance_value_baseline": float(mc.total_variance[1]),
        "mc_total_variance_se_no_baseline": float(mc.total_variance_se[0]),
        "mc_total_variance_se_value_baseline": float(mc.total_variance_se[1]),
        "mc_b_star": mc.b_star,
        "mc_total_variance_at_b_star": mc.total_variance_at_b_star,
        "sweep": [
            {
                "b": float(b),
                "mc_total_variance": float(v),
                "mc_total_variance_se": float(se),
                "exact_total_variance": float(ev),
                "mc_mean_estimate": _floats(m),
            }
            for b, v, se, ev, m in zip(mc.b[2:], mc.total_variance[2:], mc.total_variance_se[2:],
                                       exact_var[2:], mc.mean_estimate[2:])
        ],
    }


def _num(x: float) -> str:
    """A scalar as the seed prints it: at most 4 decimals, no trailing zeros (6.5, 7.3, 0.1)."""
    return str(round(float(x), 4))


def _vec(x, decimals: int = 4) -> str:
    """A vector as numpy prints it after rounding, as in the seed: [-0.375 -0.125  0.125  0.375]."""
    return str(np.round(np.asarray(x, dtype=float), decimals))


def _theta(theta) -> str:
    return "0" if not any(theta) else _vec(theta)


def render(result: dict) -> str:
    one = result["one_step"]
    th = _theta(result["theta"])
    K = len(result["means"])
    J = _num(result["J"])
    v0, vJ = result["mc_total_variance_no_baseline"], result["mc_total_variance_value_baseline"]
    e0, eJ = result["exact_total_variance_no_baseline"], result["exact_total_variance_value_baseline"]
    lines = [
        f"== 1. one REINFORCE step by hand, theta = {th}",
        f"pi            = {_vec(result['pi'])}",
        f"action a = {one['action']}, reward r = {_num(one['reward'])}",
        f"score  = onehot(a) - pi = {_vec(one['score'])}",
        f"grad (no baseline) = r * score       = {_vec(one['grad_no_baseline'])}",
        f"baseline b = V = sum_k pi_k mu_k = {_num(one['b'])}",
        f"grad (baseline)    = (r - b) * score = {_vec(one['grad_baseline'])}",
        f"exact gradient of J = pi_k (mu_k - J)  = {_vec(result['exact_gradient'])}",
        f"new pi after one step, lr {_num(one['lr'])}, no baseline: {_vec(one['new_pi_no_baseline'])}",
        f"new pi after one step, lr {_num(one['lr'])}, baseline   : {_vec(one['new_pi_baseline'])}",
        "",
        f"== 2. Monte Carlo check at theta = {th} with {result['samples']:,} samples",
        f"{'mean score vector E[grad log pi]':<37}= {_vec(result['mc_mean_score'])} (should be 0)",
        f"{'mean estimate, no baseline':<37}= {_vec(result['mc_mean_estimate_no_baseline'])}",
        f"{'mean estimate, baseline b = ' + J:<37}= {_vec(result['mc_mean_estimate_value_baseline'])}",
        f"{'exact gradient':<37}= {_vec(result['exact_gradient'])}",
        f"total variance (sum over {K} components): no baseline {v0:.3f}, baseline {vJ:.3f}, ratio {v0 / vJ:.1f}x",
        f"{'exact total variance':<38}: no baseline {e0:.3f}, baseline {eJ:.3f}, ratio {e0 / eJ:.1f}x",
        "",
        f"== 3. variance of the estimate as a function of a constant baseline b (theta = {th})",
    ]
    for row in result["sweep"]:
        lines.append(
            f"  b = {row['b']:5.1f}: total variance {row['mc_total_variance']:8.3f},  "
            f"mean estimate {_vec(row['mc_mean_estimate'], 3)}   exact total variance {row['exact_total_variance']:8.3f}"
        )
    lines.append(
        "variance-minimising constant b* = E[r |score|^2] / E[|score|^2] = "
        f"{result['mc_b_star']:.3f}, variance {result['mc_total_variance_at_b_star']:.3f}"
    )
    lines.append(
        f"exact b* = {result['b_star']:.3f}, exact variance {result['exact_total_variance_at_b_star']:.3f}"
    )
    return "\n".join(lines)
