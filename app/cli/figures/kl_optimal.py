"""The optimal policy under reward minus beta KL, exactly (seed 000 section 6.12, "What beta means")."""

from __future__ import annotations

import numpy as np

from engines.kl_optimal import FrontierSettings as Settings
from engines.kl_optimal import boost_factor, enumerate_replies, optimal_policy


def compute(settings: Settings) -> dict:
    space = enumerate_replies(settings)
    best = optimal_policy(space, settings.betas)
    top = np.argmax(best.logp, axis=-1)
    return {
        "replies": len(space.replies),
        "reference_reward": float(np.exp(space.ref_logp) @ space.r),
        "frontier": [
            {"beta": float(b), "reward": float(r), "kl": float(kl), "entropy": float(h),
             "objective": float(f), "boost": float(boost_factor(settings.gap, b)),
             "most_likely_reply": space.replies[k], "most_likely_probability": float(np.exp(lp[k]))}
            for b, r, kl, h, f, k, lp in zip(best.beta, best.reward, best.kl, best.entropy,
                                               best.objective, top, best.logp)
        ],
        "gap": settings.gap,
    }


def render(result: dict) -> str:
    lines = [
        f"pi*(y) = pi_ref(y) exp(r(y) / beta) / Z over {result['replies']} replies; "
        f"the reference's expected reward is {result['reference_reward']:+.3f}",
        f"  {'beta':>6}  {'E[r]':>7}  {'KL nats':>8}  {'entropy':>7}  {'E[r] - beta KL':>14}  "
        f"{'boost e^(' + format(result['gap'], 'g') + '/beta)':>18}  most likely reply",
    ]
    for row in result["frontier"]:
        lines.append(
            f"  {row['beta']:>6g}  {row['reward']:>+7.3f}  {row['kl']:>8.3f}  {row['entropy']:>7.3f}  "
            f"{row['objective']:>+14.3f}  {row['boost']:>18.4g}  {row['most_likely_reply']!r} "
            f"({row['most_likely_probability']:.3f})"
        )
    return "\n".join(lines)
