"""The index's pictures: one small drawing per page of what it draws, computed by the engines.

    feedback-lab thumbnails [--out DIR]

writes `NAME.svg` for every page of app/pages into DIR (default: the package's assets/thumbnails/, which the
index shows, app/serving/server.py). Each picture is computed from the same engine functions as its page, at the
seeds' settings, and drawn as plain SVG by the few functions below: coordinates rounded to a tenth of a pixel,
no date, no random ids, so the same engines write the same bytes on every machine and the tests can compare the
shipped files with a fresh drawing (tests/app/test_thumbnails.py). The pages that train a language model (the
live run, the reward model) are pictured by exact computations that take milliseconds, the live run's by
gradient ascent on the KL page's small replies and the reward model's by its loss function, never by a training
run, whose floating-point sums differ from one CPU to another; their alt text says what is drawn.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import assets

WIDTH, HEIGHT, MARGIN = 160, 96, 8
"""A picture's size and the blank border inside it, in pixels."""
BLUE, VERMILION, GREEN, GREY = "#0072B2", "#D55E00", "#009E73", "#888888"
"""Okabe and Ito's colours, as the pages draw with, and the axes' grey (readable on the light and the dark theme)."""


@dataclass(frozen=True)
class Line:
    """One curve of a picture, in data units."""

    x: Sequence[float]
    """Its x values, increasing."""
    y: Sequence[float]
    """Its y values, one per x."""
    colour: str
    """Its stroke colour."""
    dashed: bool = False
    """Drawn dashed (a reference line) rather than solid."""


def _num(v: float) -> str:
    """A coordinate as the file writes it: one decimal, no "-0.0"."""
    text = f"{v:.1f}"
    return "0.0" if text == "-0.0" else text


def _svg(body: str) -> str:
    """The whole file: a fixed header, `body`, and the two axes."""
    axes = (f'<path d="M{MARGIN} {MARGIN}V{HEIGHT - MARGIN}H{WIDTH - MARGIN}" fill="none" stroke="{GREY}" '
            'stroke-width="1"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}">{body}{axes}</svg>\n')


def _scale(values: np.ndarray, low: float, high: float, start: float, stop: float) -> np.ndarray:
    """Data values in [low, high] mapped onto pixels from `start` to `stop`."""
    return start + (values - low) / (high - low) * (stop - start)


def line_picture(lines: Sequence[Line], points: Sequence[tuple[float, float, str]] = (),
                 y_range: tuple[float, float] | None = None) -> str:
    """Curves (and marked points x, y, colour) on shared axes; y from `y_range`, else from the data."""
    xs = np.concatenate([np.asarray(line.x, dtype=float) for line in lines])
    ys = np.concatenate([np.asarray(line.y, dtype=float) for line in lines])
    x_low, x_high = float(xs.min()), float(xs.max())
    y_low, y_high = y_range or (float(ys.min()), float(ys.max()))

    def px(x, y):
        return (_scale(np.asarray(x, dtype=float), x_low, x_high, MARGIN + 2, WIDTH - MARGIN - 2),
                _scale(np.asarray(y, dtype=float), y_low, y_high, HEIGHT - MARGIN - 2, MARGIN + 2))

    body = []
    for line in lines:
        u, v = px(line.x, line.y)
        path = "M" + "L".join(f"{_num(a)} {_num(b)}" for a, b in zip(u, v))
        dash = ' stroke-dasharray="4 3"' if line.dashed else ""
        body.append(f'<path d="{path}" fill="none" stroke="{line.colour}" stroke-width="2"{dash}/>')
    for x, y, colour in points:
        u, v = px(x, y)
        body.append(f'<circle cx="{_num(float(u))}" cy="{_num(float(v))}" r="3.5" fill="{colour}"/>')
    return _svg("".join(body))


def bar_picture(heights: Sequence[float], colours: Sequence[str]) -> str:
    """Bars from zero, left to right, on a y axis from 0 to the tallest."""
    heights = np.asarray(heights, dtype=float)
    slot = (WIDTH - 2 * MARGIN - 4) / len(heights)
    tops = _scale(heights, 0.0, float(heights.max()), HEIGHT - MARGIN, MARGIN + 2)
    body = "".join(
        f'<rect x="{_num(MARGIN + 4 + i * slot + slot * 0.15)}" y="{_num(top)}" width="{_num(slot * 0.7)}" '
        f'height="{_num(HEIGHT - MARGIN - top)}" fill="{colour}"/>'
        for i, (top, colour) in enumerate(zip(tops, colours))
    )
    return _svg(body)


def heat_picture(values: np.ndarray, colour: str) -> str:
    """A table of values in [0, 1] as cells of `colour`, opaque where 1; rows top to bottom, columns left to right.
    NaN cells (states that cannot occur) are left blank."""
    rows, columns = values.shape
    w, h = (WIDTH - 2 * MARGIN - 4) / columns, (HEIGHT - 2 * MARGIN - 4) / rows
    body = "".join(
        f'<rect x="{_num(MARGIN + 4 + j * w)}" y="{_num(MARGIN + 2 + i * h)}" width="{_num(w - 1)}" height="{_num(h - 1)}" '
        f'fill="{colour}" fill-opacity="{values[i, j]:.2f}"/>'
        for i in range(rows) for j in range(columns) if np.isfinite(values[i, j])
    )
    return _svg(body)


# --- the pictures, one per page: what the page draws, from the engines it calls -----------------------------------


def baselines() -> str:
    """Seed 001 section 4: the two one-sample estimates against the baseline b, and their mean."""
    from engines.two_action import TwoActionSettings, two_action_estimates

    s = TwoActionSettings()
    b = np.linspace(0.0, 21.0, 2)  # both estimates are straight lines in b
    est = two_action_estimates(s.p, b, s.R1, s.R2)
    cross = float(est.cross[0])
    return line_picture([Line(b, est.mean, GREY, dashed=True), Line(b, est.g1, BLUE), Line(b, est.g2, VERMILION)],
                        points=[(cross, float(two_action_estimates(s.p, cross, s.R1, s.R2).g1), GREEN)])


def toy_target() -> str:
    """Seed 001 Exercise 2: the exact total variance of one batch's estimate, by estimator, at the uniform start."""
    from engines.toy_target import ToyTargetSettings, exact_variances_at_start

    s = ToyTargetSettings()
    variances = exact_variances_at_start(s.samples, s.target_seed)
    order = ("none", "loo", "batch_mean", "token", "token_loo")
    return bar_picture([float(variances[k].sum()) for k in order], [VERMILION, BLUE, BLUE, GREEN, GREEN])


def bandit() -> str:
    """Seed 000 section 6.7: the exact variance of the REINFORCE estimate against the baseline b, b* marked."""
    from engines.bandit import BanditSettings, exact_total_variance, optimal_baseline

    s = BanditSettings()
    b = np.linspace(0.0, 12.0, 49)
    variance = exact_total_variance(s.means, s.sd, s.theta, b)
    b_star = float(optimal_baseline(s.means, s.theta))
    lowest = float(exact_total_variance(s.means, s.sd, s.theta, b_star))
    return line_picture([Line(b, variance, BLUE)], points=[(b_star, lowest, VERMILION)], y_range=(0.0, float(variance.max())))


def token_world() -> str:
    """Seed 000 section 6.8: the exact V(t, k) of the token world, steps t down, A's so far k across."""
    from engines.token_world import TokenWorldSettings, token_values

    s = TokenWorldSettings()
    V = token_values(s.T, s.threshold, s.p_a, s.gamma).V  # (T, T+1)
    reachable = np.arange(s.T + 1)[None, :] <= np.arange(s.T)[:, None]  # k <= t: at most t A's in t steps
    return heat_picture(np.where(reachable, V, np.nan), BLUE)


def group_baselines() -> str:
    """Seed 000 section 6.10's RLOO and GRPO: each estimator's exact E[g_m] over the true gradient, against p_m (K = 16)."""
    from engines.group_baselines import GroupBaselinesSettings, exact_moments

    p = np.linspace(0.02, 0.98, 49)
    ex = exact_moments(GroupBaselinesSettings(p=tuple(p), K=16))
    rows = dict(zip(ex.estimators, ex.ratio))  # E[g_m] / dJ/dtheta_m, (M,) each
    return line_picture([Line(p, rows["loo"], GREY, dashed=True), Line(p, rows["mean"], BLUE), Line(p, rows["grpo"], VERMILION)],
                        y_range=(0.0, float(rows["grpo"].max())))


def live_run() -> str:
    """Seed 000 sections 6.11 and 6.12 in small: the expected reward over steps of gradient ascent on reward - beta KL,
    exact, on the KL page's replies, with a small and a large beta."""
    from engines.kl_optimal import FrontierSettings, ascend_objective, enumerate_replies

    space = enumerate_replies(FrontierSettings())
    steps = np.arange(0, 41, 2)
    rate = 0.3  # each ascent step moves log pi by 0.3 times the gradient of reward - beta KL
    lines = []
    for beta, colour in ((0.05, VERMILION), (0.5, BLUE)):
        logp = np.stack([ascend_objective(space, beta, steps=int(n), step_size=rate * beta) for n in steps])  # (S, Y)
        lines.append(Line(steps, np.exp(logp) @ space.r, colour))  # E[r] after each number of steps
    return line_picture(lines)


def kl() -> str:
    """Seed 000 section 6.12: the reward-KL frontier of the exact optimum pi*, from beta = 100 down to 0.01."""
    from engines.kl_optimal import FrontierSettings, enumerate_replies, optimal_policy

    best = optimal_policy(enumerate_replies(FrontierSettings()), np.geomspace(1e2, 1e-2, 61))
    return line_picture([Line(best.kl, best.reward, BLUE)])


def preferences() -> str:
    """Seed 001 section 7: the accuracy ceiling Acc* of the seed's quality gaps 0, 1 and 2 against tau_label."""
    from engines.bradley_terry import accuracy_vs_tau

    gaps, seed_tau = [0.0, 1.0, 2.0], 0.5
    taus = np.geomspace(0.05, 10.0, 60)  # drawn against log10(tau), as the page's log axis draws it
    seed_point = (float(np.log10(seed_tau)), float(accuracy_vs_tau(gaps, [seed_tau])[0]), VERMILION)
    return line_picture([Line(np.log10(taus), accuracy_vs_tau(gaps, taus), BLUE)], points=[seed_point], y_range=(0.5, 1.0))


def reward_model() -> str:
    """Seed 001 section 8: the reward model's loss -log sigma(r_w - r_l) against the margin r_w - r_l."""
    from engines.bradley_terry import bt_loss_np

    margins = np.linspace(-3.0, 3.0, 49)
    loss = [bt_loss_np([m], [0.0]) for m in margins]
    tie = (0.0, bt_loss_np([0.0], [0.0]), VERMILION)  # log 2 = 0.693
    return line_picture([Line(margins, loss, BLUE)], points=[tie], y_range=(0.0, max(loss)))


def lab() -> str:
    """Seed 001 Exercises 1 and 2: the toy policy's exact J over REINFORCE steps, mean of 8 seeds, without a baseline
    and with the leave-one-out one."""
    from engines.toy_target import ToyTargetSettings, run_training

    s = ToyTargetSettings(steps=60)
    J = run_training(s, ("none", "loo")).J.mean(1)  # (estimators, steps + 1)
    steps = np.arange(s.steps + 1)
    return line_picture([Line(steps, J[0], VERMILION), Line(steps, J[1], BLUE)], y_range=(0.0, 1.0))


@dataclass(frozen=True)
class Picture:
    """One page's picture on the index."""

    draw: Callable[[], str]
    """Computes it and returns the SVG file's text."""
    alt: str
    """What it shows, for a reader who cannot see it (the `<img>`'s alt text)."""


PICTURES = {
    "baselines": Picture(baselines, "Two straight lines, the two possible one-sample estimates against the baseline b, "
                                    "crossing at b* = 10.5 where the estimate has no noise; their mean stays flat."),
    "toy_target": Picture(toy_target, "Five bars, the exact variance of one batch's gradient estimate by estimator: "
                                      "tallest without a baseline, about half with leave-one-out, batch mean or "
                                      "token-level rewards, a third with token-level rewards and leave-one-out."),
    "bandit": Picture(bandit, "A U-shaped curve: the variance of the REINFORCE estimate against the baseline b, "
                              "lowest at the marked b*."),
    "token_world": Picture(token_world, "A triangle of blue cells, the exact value V of each state: darker as the "
                                        "reply collects more A's."),
    "group_baselines": Picture(group_baselines, "Three curves of each estimator's mean update over the true gradient "
                                                "against a prompt's chance of a right reply: flat at 1 with leave-one-out, "
                                                "just under it with the group mean, and GRPO's far above both and highest "
                                                "where almost every reply is right or almost every one wrong (K = 16)."),
    "live_run": Picture(live_run, "Expected reward rising over training steps, fast with a small KL penalty and "
                                  "levelling off lower with a large one (exact, on the KL page's small replies)."),
    "kl": Picture(kl, "A rising, flattening curve: the best expected reward reachable at each KL from the "
                      "reference, the reward-KL frontier."),
    "preferences": Picture(preferences, "The accuracy ceiling Acc* falling from 1 toward 0.5 as the rater's label "
                                        "temperature grows, the 0.5 of Module 9's check-yourself marked."),
    "reward_model": Picture(reward_model, "The reward model's loss falling as the preferred reply's reward pulls "
                                          "ahead of the other's, 0.69 at a tie."),
    "lab": Picture(lab, "Two training curves of the toy policy's expected reward from 0.125: the one with a "
                        "leave-one-out baseline climbs faster and higher."),
}
"""Every page's picture, by page module name (app/pages)."""


def shipped(page: str) -> Path:
    """Where the package holds a page's picture (what the index shows)."""
    return assets.path("thumbnails") / f"{page}.svg"


def write_all(out: Path) -> list[Path]:
    """Draw every picture into `out` (made if missing); the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page, picture in PICTURES.items():
        path = out / shipped(page).name
        path.write_text(picture.draw(), encoding="utf-8")
        written.append(path)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="folder to write the pictures into (default: the package's assets/thumbnails/, "
                             "which the index shows)")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else assets.path("thumbnails")
    try:
        written = write_all(out)
    except OSError as error:
        print(f"feedback-lab thumbnails: error: cannot write into {out}: {error.strerror or error}.", file=sys.stderr)
        return 2
    print(f"Wrote {len(written)} pictures into {out}.")
    return 0
