"""Training the four-armed bandit with no baseline, a running average and the exact value (seed 000 section 6.7)."""

from __future__ import annotations

from engines.bandit import BanditTrainingSettings as Settings
from engines.bandit import train_all_baselines


def compute(settings: Settings) -> dict:
    runs = []
    for baseline, run in train_all_baselines(settings).items():
        mean_J = run.mean_J()
        p10, p90 = run.band()
        p_best = run.p_best()
        runs.append({
            "baseline": baseline,
            "mean_J_at": {str(step): float(mean_J[step]) for step in settings.report_steps},
            "p10": float(p10[-1]),
            "p90": float(p90[-1]),
            "frac_best_gt_half": float((p_best > 0.5).mean()),
            "frac_best_lt_tenth": float((p_best < 0.1).mean()),
            "final_argmax_counts": {str(arm): n for arm, n in run.argmax_counts().items()},
            "mean_J_per_step": [float(v) for v in mean_J],
            "p10_per_step": [float(v) for v in p10],
            "p90_per_step": [float(v) for v in p90],
        })
    return {
        "means": list(settings.means),
        "sd": settings.sd,
        "seeds": settings.seeds,
        "steps": settings.steps,
        "lr": settings.lr,
        "seed": settings.seed,
        "report_steps": list(settings.report_steps),
        "runs": runs,
    }


def render(result: dict) -> str:
    steps = result["steps"]
    at = "/".join(str(s) for s in result["report_steps"])
    lines = [
        f"== 4. training: {result['seeds']} seeds x {steps} steps, one sample per step, "
        f"learning rate {round(result['lr'], 4)}"
    ]
    for run in result["runs"]:
        values = " / ".join(f"{v:.3f}" for v in run["mean_J_at"].values())
        counts = ", ".join(f"{arm}: {n}" for arm, n in run["final_argmax_counts"].items())
        lines.append(
            f"  baseline {run['baseline']:<8}: mean J at step {at} = {values};  "
            f"spread (10th-90th pct) at {steps}: {run['p10']:.3f} to {run['p90']:.3f};  "
            f"seeds with P(best) > 0.5: {100 * run['frac_best_gt_half']:.0f}%;  "
            f"seeds with P(best) < 0.1: {100 * run['frac_best_lt_tenth']:.0f}%"
        )
        lines.append(f"      most likely reply at the end, count over seeds: {{{counts}}}")
    return "\n".join(lines)
