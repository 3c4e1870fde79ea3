"""The token world: returns, exact values, one episode's TD errors and GAE, and GAE's bias^2 / variance (seed 000 sections 6.3, 6.8 to 6.10)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from engines.policy_gradient import returns_to_go
from engines.token_world import TokenWorldSettings, gae_decomposition_exact, gae_decomposition_mc, one_episode, token_values

CHAPTER_TOKENS = next(f.default for f in fields(TokenWorldSettings) if f.name == "tokens")
"""The chapter's episode, ABABAA: the one-episode table's reply by default (T = 6)."""


@dataclass(frozen=True)
class Settings(TokenWorldSettings):
    """The token world of `figures token-world`: changing T alone samples the one-episode table's reply.

    The chapter's reply has 6 tokens; with another T and no --tokens given, the table shows an
    episode of T tokens sampled from the policy (seeded by --seed), and the JSON says so.
    """

    def __post_init__(self):
        if self.tokens == CHAPTER_TOKENS and self.T != len(CHAPTER_TOKENS):
            object.__setattr__(self, "tokens", "")
        super().__post_init__()

RETURN_GAMMAS = (1.0, 0.9)
"""The discounts of the seed's returns table; the settings' gamma is added when it differs."""


def _returns(settings: Settings) -> dict:
    rewards = np.zeros(settings.T)
    rewards[-1] = 1.0
    gammas = RETURN_GAMMAS + (() if settings.gamma in RETURN_GAMMAS else (settings.gamma,))
    return {
        "rewards": [int(r) for r in rewards],
        "G": [{"gamma": g, "G_t": returns_to_go(rewards, g).tolist()} for g in gammas],
    }


def episode_source(settings: Settings) -> str:
    """Where the one-episode table's reply comes from, in words."""
    if settings.tokens == CHAPTER_TOKENS:
        return "the chapter's episode"
    if settings.tokens:
        return "the given tokens"
    return f"sampled from the policy (seed {settings.seed})" + (
        f"; the chapter's {CHAPTER_TOKENS} has {len(CHAPTER_TOKENS)} tokens, not T = {settings.T}" if settings.T != len(CHAPTER_TOKENS) else "")


def _episode(settings: Settings) -> dict:
    e = one_episode(settings)
    rows = [
        {
            "t": t, "k": int(e.k[t]), "token": "AB"[1 - int(e.tokens[t])], "r": float(e.r[t]),
            "V": float(e.V[t]), "V_next": float(e.V_next[t]), "delta": float(e.delta[t]),
            "gae": float(e.gae[t]), "exact_A": float(e.exact_A[t]),
        }
        for t in range(settings.T)
    ]
    return {
        "tokens": "".join(row["token"] for row in rows),
        "source": episode_source(settings),
        "lam": settings.lam,
        "gamma": settings.gamma,
        "noise": settings.episode_noise,
        "rows": rows,
        "lambda_1": e.monte_carlo.tolist(),
        "lambda_0": e.delta.tolist(),
    }


def _decompositions(settings: Settings) -> list[dict]:
    rows = []
    for d in (gae_decomposition_exact(settings), gae_decomposition_mc(settings)):
        for j, noise in enumerate(d.critic_noises):
            for i, lam in enumerate(d.lambdas):
                rows.append({
                    "lambda": float(lam), "critic_noise": float(noise), "bias2": float(d.bias2[i, j]),
                    "variance": float(d.variance[i, j]), "total": float(d.total[i, j]), "method": d.method,
                })
    return rows


def compute(settings: Settings) -> dict:
    v = token_values(settings.T, settings.threshold, settings.p_a, settings.gamma)
    return {
        "T": settings.T,
        "threshold": settings.threshold,
        "p_a": settings.p_a,
        "gamma": settings.gamma,
        "episodes": settings.episodes,
        "returns": _returns(settings),
        "V": v.V.tolist(),
        "V_start": float(v.V[0, 0]),
        "Q_A": float(v.Q[0, 0, 1]),
        "Q_B": float(v.Q[0, 0, 0]),
        "A_A": float(v.A[0, 0, 1]),
        "A_B": float(v.A[0, 0, 0]),
        "episode": _episode(settings),
        "gae": _decompositions(settings),
    }


def _rounded(xs, digits: int) -> str:
    return str([round(float(x), digits) for x in xs])


def render(result: dict) -> str:
    T = result["T"]
    ret = result["returns"]
    lines = [f"== 1. return of the episode rewards {ret['rewards']}"]
    lines += [f"  gamma = {g['gamma']}: G_t for t = 0..{T - 1} = {_rounded(g['G_t'], 4)}" for g in ret["G"]]

    success = "probability of success" if result["gamma"] == 1 else f"gamma^{T - 1} x probability of success"
    lines += ["", f"== 2. exact values for the fixed policy P(A) = {result['p_a']}",
              f"  V(start) = {success} = {result['V_start']:.4f}"]
    lines += [f"  V(t={t}, k=0..{t}) = " + " ".join(f"{x:.4f}" for x in row[: t + 1]) for t, row in enumerate(result["V"])]
    lines.append(f"  at the start: Q(A) = {result['Q_A']:.4f}, Q(B) = {result['Q_B']:.4f}, "
                 f"advantage A(A) = {result['A_A']:+.4f}, A(B) = {result['A_B']:+.4f}")

    e = result["episode"]
    lines += ["", f"== 3. one episode: tokens {e['tokens']}{'' if e['tokens'] == CHAPTER_TOKENS else ' (' + e['source'] + ')'}, reward at the end = {e['rows'][-1]['r']:g}; "
                  f"lambda = {e['lam']}, gamma = {e['gamma']}",
              f"  using a rough value estimate (exact V plus noise of sd {e['noise']})"]
    for row in e["rows"]:
        lines.append(
            f"  t={row['t']} state (t={row['t']}, k={row['k']}) token {row['token']}: r={row['r']:g}  "
            f"V(s_t)={row['V']:.3f}  V(s_t+1)={row['V_next']:.3f}  delta={row['delta']:+.3f}  "
            f"GAE={row['gae']:+.3f}  exact A={row['exact_A']:+.3f}"
        )
    lines += [f"  lambda = 1 (Monte Carlo minus V): {_rounded(e['lambda_1'], 3)}",
              f"  lambda = 0 (one TD error):        {_rounded(e['lambda_0'], 3)}"]

    described = {
        "exact": f"exact, all {2 ** T:,} episodes weighted by their probability",
        "mc": f"Monte Carlo, {result['episodes']:,} sampled episodes",
    }
    for method in ("exact", "mc"):
        lines += ["", "== 4. GAE against the exact advantage: bias^2 + variance = total error, "
                      "over visited (state, action) pairs", f"  method: {described[method]}"]
        for row in (r for r in result["gae"] if r["method"] == method):
            label = "exact V" if row["critic_noise"] == 0 else f"V + noise {row['critic_noise']:.2f}"
            lines.append(f"  {label:<15} lambda {row['lambda']:.2f}: bias^2 {row['bias2']:.4f}  "
                         f"variance {row['variance']:.4f}  total error {row['total']:.4f}")
    return "\n".join(lines)
