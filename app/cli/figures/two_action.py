"""Two actions, both rewarded: the seed 001 section 4 table of one-sample estimates."""

from __future__ import annotations

from app.cli.figures.text import table
from engines.two_action import TwoActionSettings as Settings
from engines.two_action import two_action_estimates, variance_minimising_baseline


def compute(settings: Settings) -> dict:
    est = two_action_estimates(settings.p, list(settings.b), settings.R1, settings.R2)
    return {
        "p": settings.p,
        "R1": settings.R1,
        "R2": settings.R2,
        "true_gradient": settings.p * (1 - settings.p) * (settings.R1 - settings.R2),
        "b_star": float(variance_minimising_baseline(settings.p, settings.R1, settings.R2)),
        "rows": [
            {"b": b, "g1": float(g1), "g2": float(g2), "mean": float(m), "sd": float(sd)}
            for b, g1, g2, m, sd in zip(settings.b, est.g1, est.g2, est.mean, est.sd)
        ],
    }


def _num(x: float) -> str:
    return f"{x:.4g}"


def render(result: dict) -> str:
    p = result["p"]
    rows = result["rows"]
    head = [f"Sampled action (probability {_num(p)} / {_num(1 - p)})"] + [f"g_hat with b = {_num(r['b'])}" for r in rows]
    lines = [
        [f"1 (reward {_num(result['R1'])})"] + [_num(r["g1"]) for r in rows],
        [f"2 (reward {_num(result['R2'])})"] + [_num(r["g2"]) for r in rows],
        ["mean"] + [_num(round(r["mean"], 10)) for r in rows],
        ["standard deviation"] + [_num(round(r["sd"], 10)) for r in rows],
    ]
    out = table(head, lines)
    out.append(f"true gradient p(1-p)(R1-R2) = {_num(result['true_gradient'])}; "
                 f"the lines cross at the variance-minimising b* = (1-p) R1 + p R2 = {_num(result['b_star'])}")
    return "\n".join(out)
