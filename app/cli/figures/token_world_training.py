"""Training a tabular policy in the token world: REINFORCE, leave-one-out and GAE critics, with and without a reward shift (seed 000 section 6.10)."""

from __future__ import annotations

import dataclasses
import math

from engines.token_world_training import TokenWorldTrainingSettings, train_token_world


@dataclasses.dataclass(frozen=True)
class Settings(TokenWorldTrainingSettings):
    """The engine's settings with the seed's second table on by default."""

    shift: float = 5.0
    """Reward shift of the second table, the seed's +5; 0 prints only the first table."""


def _rows(settings: Settings) -> list[dict]:
    result = train_token_world(settings)
    return [
        {
            "method": name,
            "success_at": result.mean_at[m].tolist(),
            "median_to_target": float(result.median_to_target[m]),
            "sd_at_spread": float(result.sd_at_spread[m]),
            "below_half": float(result.below_half[m]),
            "mean_curve": result.success[m].mean(-1).tolist(),
        }
        for m, name in enumerate(result.methods)
    ]


def compute(settings: Settings) -> dict:
    """The unshifted table always; the shifted one too when settings.shift is not 0."""
    return {
        "seeds": settings.seeds,
        "steps": settings.steps,
        "episodes": settings.episodes,
        "lr": settings.lr,
        "critic_lr": settings.critic_lr,
        "report_at": list(settings.report_at),
        "spread_at": settings.spread_at,
        "target": settings.target,
        "shift": settings.shift,
        "rows": _rows(dataclasses.replace(settings, shift=0.0)),
        "shifted_rows": _rows(settings) if settings.shift != 0 else None,
    }


def _median(x: float) -> str:
    return "never" if math.isinf(x) else f"{x:g}"


def render(result: dict) -> str:
    target, spread_at = result["target"], result["spread_at"]
    lines = [f"== 5. training from P(A) = 0.5 everywhere: {result['seeds']} seeds, "
             f"{result['steps']} updates of {result['episodes']} episodes each"]
    for row in result["rows"]:
        lines.append(f"  {row['method']:<34}: {' / '.join(f'{x:.3f}' for x in row['success_at'])};  "
                     f"median updates to reach {target:g}: {_median(row['median_to_target'])};  "
                     f"sd over seeds at {spread_at}: {row['sd_at_spread']:.3f}")
    if result["shifted_rows"] is not None:
        shift = result["shift"]
        lines += ["", f"   same, but every episode also gets {shift:+.1f} "
                      f"(reward {shift:g} for failure, {1 + shift:g} for success)"]
        for row in result["shifted_rows"]:
            lines.append(f"  {row['method']:<34}: {' / '.join(f'{x:.3f}' for x in row['success_at'])};  "
                         f"median to {target:g}: {_median(row['median_to_target'])};  "
                         f"sd at {spread_at}: {row['sd_at_spread']:.3f};  "
                         f"seeds below 0.5 at the end: {100 * row['below_half']:.0f}%")
    return "\n".join(lines)
