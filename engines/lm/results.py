"""What a live REINFORCE run yields, and the worked example: seed 000 sections 6.11 and 6.12.

`engines.lm.reinforce.LMRun.steps()` yields a `StepResult` per training step and an
`EvalResult` per held-out evaluation; `worked_example` turns one held-out reply into the
seed's token-by-token table. These are plain numbers and numpy arrays, with no torch, so the
run files can be written and read (app/jobs/runs.py) where no model is loaded. `format_eval` and
`format_worked_example` print them as the seed does, for the command line and the pages alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engines.lm.settings import REWARD_PREFIX, LMSettings
from engines.policy_gradient import returns_to_go, shaped_rewards


@dataclass(frozen=True)
class Sample:
    """One reply, token by token, with where it drifts from the reference."""

    prompt: str
    """The prompt text (a review prompt's first prompt_tokens tokens)."""
    tokens: tuple[str, ...]
    """The T reply tokens, each decoded on its own."""
    log_ratio: tuple[float, ...]
    """log pi_theta(y_t | s_t) - log pi_ref(y_t | s_t) for each token, nats."""
    reward: float
    """R(x, y), log-odds."""


@dataclass(frozen=True)
class StepResult:
    """The metrics of one training step (the batch it trained on)."""

    step: int
    """Steps done, 1 to steps."""
    reward: float
    """Mean R over the batch's replies, log-odds."""
    p_positive: float
    """Mean P(positive) over the batch's replies."""
    kl: float
    """k1 estimate of KL(pi_theta || pi_ref) per reply: mean over replies of sum_t log-ratio, nats."""
    entropy: float
    """Mean policy entropy per token at the sampled states, nats."""
    grad_norm: float
    """Gradient norm before clipping."""
    loss: float
    """The REINFORCE loss -(A * logp).mean()."""
    step_time: float
    """Wall-clock seconds of this step."""
    samples: tuple[Sample, ...]
    """The newest replies, one from each of the first keep_samples prompts."""
    gold: float | None = None
    """Mean gold score g of the batch's replies when the reward has one (a learned reward model), else None."""


@dataclass(frozen=True)
class EvalResult:
    """Seed 000 section 6.11's held-out evaluation, with every reply kept for the worked example."""

    step: int
    """Training steps done before this evaluation."""
    reward: float
    """Mean R, log-odds."""
    p_positive: float
    """Mean P(positive)."""
    kl_exact: float
    """Exact KL(pi_theta || pi_ref) per reply, summed over the vocabulary and the T positions, nats."""
    kl: float
    """k1 estimate of the same KL from the sampled tokens, nats per reply."""
    entropy: float
    """Mean policy entropy per token, nats."""
    ref_perplexity: float
    """exp(-mean log pi_ref(y_t | s_t)) of the sampled reply tokens under the reference."""
    distinct_1: float
    """Unique words over all words of all replies."""
    distinct_2: float
    """Unique word pairs over all word pairs."""
    beta: float
    """The run's beta, for the worked example's r_t."""
    prompts: tuple[str, ...]
    """(N,) the prompt of each reply."""
    replies: tuple[str, ...]
    """(N,) each reply's text."""
    tokens: tuple[tuple[str, ...], ...]
    """(N, T) each reply's tokens."""
    logp: np.ndarray
    """(N, T) log pi_theta of each reply token."""
    ref_logp: np.ndarray
    """(N, T) log pi_ref of each reply token."""
    R: np.ndarray
    """(N,) reward of each reply."""
    gold: float | None = None
    """Mean gold score g of the replies when the reward has one (a learned reward model), else None."""


@dataclass(frozen=True)
class WorkedExample:
    """Seed 000 section 6.12's token-by-token table for one reply."""

    prompt: str
    tokens: tuple[str, ...]
    R: float
    beta: float
    logp: np.ndarray
    """(T,) log pi_theta(y_t | s_t)."""
    ref_logp: np.ndarray
    """(T,) log pi_ref(y_t | s_t)."""
    log_ratio: np.ndarray
    """(T,) logp - ref_logp; its sum is the k1 KL estimate of this reply."""
    r: np.ndarray
    """(T,) shaped reward r_t; sums to R - beta * sum(log_ratio)."""
    G: np.ndarray
    """(T,) reward-to-go G_t; G_0 is the shaped reward of the whole reply."""


def worked_example(result: EvalResult, i: int = 0) -> WorkedExample:
    """The worked-example table of held-out reply `i` (seed 000 section 6.12)."""
    logp, ref_logp = result.logp[i], result.ref_logp[i]
    r = shaped_rewards(logp[None], ref_logp[None], result.R[i], result.beta)  # (1, T)
    return WorkedExample(
        prompt=result.prompts[i], tokens=result.tokens[i], R=float(result.R[i]), beta=result.beta,
        logp=logp, ref_logp=ref_logp, log_ratio=logp - ref_logp, r=r[0], G=returns_to_go(r)[0],
    )


def format_eval(result: EvalResult, settings: LMSettings) -> str:
    """The seed's `[eval start]` / `[eval end]` line (`[eval step N]` in between), seed 000 section 6.11."""
    when = "start" if result.step == 0 else "end" if result.step == settings.steps else f"step {result.step}"
    gold = "" if result.gold is None else f"  gold {result.gold:+.2f}"
    return (
        f"[eval {when}] {settings.eval_prompts} held-out prompts x {settings.eval_replies}: "
        f"reward {result.reward:+.2f}{gold}  P(positive) {result.p_positive:.3f}  KL {result.kl_exact:.2f} nats/reply  "
        f"entropy {result.entropy:.2f}  ref-perplexity {result.ref_perplexity:.1f}  "
        f"distinct-1 {result.distinct_1:.3f}  distinct-2 {result.distinct_2:.3f}"
    )


def reward_label(reward: str) -> str:
    """How the worked example names the log-odds of the reward `reward` (an LMSettings.reward)."""
    return "VADER" if reward == "vader" else "reward-model" if reward.startswith(REWARD_PREFIX) else "classifier"


def format_worked_example(ex: WorkedExample, reward: str) -> str:
    """Seed 000 section 6.12's worked-example table, every row, for a run with the reward `reward`."""
    lines = [f'worked example (beta = {ex.beta:g}): prompt "{ex.prompt}", {reward_label(reward)} log-odds R = {ex.R:+.3f}']
    for t, tok in enumerate(ex.tokens):
        lines.append(
            f"{t:4d} {repr(tok):<14s} log pi {ex.logp[t]:7.3f}  log ref {ex.ref_logp[t]:7.3f}  "
            f"log-ratio {ex.log_ratio[t]:+7.3f}  r_t {ex.r[t]:+7.3f}  G_t {ex.G[t]:+7.3f}"
        )
    total = ex.R - ex.beta * ex.log_ratio.sum()
    lines.append(f"  sum of log-ratios = {ex.log_ratio.sum():.3f};  total reward = R - beta * sum = {total:+.3f} = G_0")
    return "\n".join(lines)
