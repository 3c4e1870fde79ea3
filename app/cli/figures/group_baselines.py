"""Group baselines on right/wrong rewards: each estimator's exact expected update and variance beside the true gradient."""

from __future__ import annotations

from app.cli.figures.text import table
from engines.group_baselines import ESTIMATORS, exact_moments, monte_carlo, train
from engines.group_baselines import GroupBaselinesSettings as Settings


def compute(settings: Settings) -> dict:
    ex, mc = exact_moments(settings), monte_carlo(settings)
    *_, run = train(settings)
    return {
        "p": ex.p.tolist(), "K": settings.K,
        "true_gradient": ex.true_gradient.tolist(),
        "no_signal": ex.no_signal.tolist(),
        "estimators": {
            name: {"label": ESTIMATORS[name], "expected": ex.expected[e].tolist(), "variance": ex.variance[e].tolist(),
                   "ratio": ex.ratio[e].tolist(), "angle_degrees": float(ex.angle[e]),
                   "monte_carlo_mean": mc.mean[e].tolist(), "monte_carlo_mean_se": mc.mean_se[e].tolist(),
                   "monte_carlo_variance": mc.variance[e].tolist(), "final_J": float(run.J[e, -1])}
            for e, name in enumerate(ex.estimators)
        },
        "monte_carlo": {"groups": mc.groups, "no_signal": mc.no_signal.tolist(), "seed": settings.seed},
        "training": {"seeds": settings.seeds, "steps": settings.steps, "lr": settings.lr},
    }


def render(result: dict) -> str:
    K, p = result["K"], result["p"]
    mc, tr = result["monte_carlo"], result["training"]
    out = [
        f"Group baselines: {len(p)} prompts, K = {K} replies each, reward 1 if right else 0, "
        f"g_m = (1/(M K)) sum_i A_i (y_i - p_m)",
        "",
        f"Exact over k ~ Binomial(K, p_m); Monte Carlo over {mc['groups']:,} groups (seed {mc['seed']}), ± one standard error",
    ]
    head = ["estimator", "prompt", "p", "dJ/dtheta", "E[g]", "E[g] / dJ", "Var[g]", "Monte Carlo E[g]", "MC Var[g]"]
    rows = []
    for name, e in result["estimators"].items():
        for m, q in enumerate(p):
            rows.append([e["label"] if m == 0 else "", str(m + 1), f"{q:g}", f"{result['true_gradient'][m]:.5f}",
                         f"{e['expected'][m]:.5f}", f"{e['ratio'][m]:.3f}", f"{e['variance'][m]:.3e}",
                         f"{e['monte_carlo_mean'][m]:.5f} ± {e['monte_carlo_mean_se'][m]:.5f}",
                         f"{e['monte_carlo_variance'][m]:.3e}"])
    out += ["  " + line for line in table(head, rows)]
    out += ["", "Groups whose K rewards are all equal (no signal under mean, loo, grpo, dr_grpo):"]
    out += [f"  prompt {m + 1} (p = {q:g}): exact {s:.4f}, sampled {t:.4f}"
            for m, (q, s, t) in enumerate(zip(p, result["no_signal"], mc["no_signal"]))]
    out += ["", f"Direction of E[g] against the true gradient, and mean J after {tr['steps']} steps "
                f"({tr['seeds']} seeds, lr = {tr['lr']:g}):"]
    out += ["  " + line for line in table(["estimator", "angle (degrees)", "final J"],
                                          [[e["label"], f"{e['angle_degrees']:.2f}", f"{e['final_J']:.4f}"]
                                           for e in result["estimators"].values()])]
    return "\n".join(out)
