"""HTML of a language-model run: replies with each token shaded by its log-ratio, the held-out table, the worked example.

The shading is ColorBrewer's PuOr, diverging and colour-blind safe: purple where the policy
likes a token less than the reference does, white where about as much, orange where more
(there the KL penalty of seed 000 section 6.12 lands).
"""

from __future__ import annotations

import html

from bokeh.palettes import PuOr

from engines.lm.results import EvalResult, WorkedExample, format_eval, format_worked_example
from engines.lm.settings import LMSettings

RATIO_PALETTE = PuOr[11]
"""The shading's bins, purple (less than the reference) to orange (more)."""
RATIO_LIMIT = 4.0
"""Log-ratios beyond +-4 nats get the palette's darkest colours."""
EVAL_TABLE = (
    ("step", "step", "{:d}"),
    ("reward", "reward", "{:+.2f}"),
    ("p_positive", "P(positive)", "{:.3f}"),
    ("kl_exact", "KL (nats/reply)", "{:.2f}"),
    ("entropy", "entropy", "{:.2f}"),
    ("ref_perplexity", "ref-perplexity", "{:.1f}"),
    ("distinct_1", "distinct-1", "{:.3f}"),
    ("distinct_2", "distinct-2", "{:.3f}"),
)
"""The seed's `[eval]` columns, with the seed's rounding (engines.lm.results.format_eval)."""
GOLD_COLUMN = ("gold", "gold", "{:+.2f}")
"""Shown after the reward when the reward is a learned reward model (its gold score g)."""
CSS = """
.fl-samples { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.95em; margin: 0 0.6em; }
.fl-sample { margin: 0.35em 0; line-height: 1.7; white-space: pre-wrap; }
.fl-prompt { opacity: 0.7; }
.fl-tok { padding: 0.05em 0; border-radius: 2px; position: relative; }
.fl-tok:focus { outline: 2px solid #1f6feb; outline-offset: 1px; }
.fl-tok:focus::after {
  content: attr(data-ratio); position: absolute; left: 0; top: 100%; z-index: 10; margin-top: 2px;
  background: #1a1a1a; color: #ffffff; padding: 0.15em 0.4em; border-radius: 3px; white-space: nowrap;
  font-family: sans-serif; font-size: 0.85em; pointer-events: none;
}
.fl-R { margin-left: 0.8em; opacity: 0.8; font-family: sans-serif; }
.fl-scale { display: flex; align-items: center; gap: 0.5em; margin: 0.3em 0.6em; font-size: 0.9em; }
.fl-scale span.fl-bin { display: inline-block; width: 1.6em; height: 1em; }
.fl-table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.2em 0.6em; }
.fl-table th, .fl-table td { padding: 0.15em 0.7em; text-align: right; border-bottom: 1px solid rgba(128,128,128,0.3); }
.fl-table td.fl-text, .fl-table th.fl-text { text-align: left; font-family: ui-monospace, Menlo, Consolas, monospace; }
.fl-lines { font-size: 0.85em; margin: 0.2em 0.6em; white-space: pre-wrap; }
.fl-caption { margin: 0.3em 0.6em; }
"""
"""The style sheet of everything this module writes (give it to the panes that show it)."""


def ratio_colours(log_ratio: float) -> tuple[str, str]:
    """(background, text) colour of a token whose log pi - log ref is `log_ratio` nats."""
    x = min(max(float(log_ratio), -RATIO_LIMIT), RATIO_LIMIT)
    k = int(round((x + RATIO_LIMIT) / (2 * RATIO_LIMIT) * (len(RATIO_PALETTE) - 1)))
    dark = k <= 1 or k >= len(RATIO_PALETTE) - 2
    return RATIO_PALETTE[k], "#ffffff" if dark else "#1a1a1a"


def token_text(token: str) -> str:
    """A token as shown: HTML-escaped, a line break written as ↵ so the reply stays on its line."""
    return html.escape(token.replace("\n", "↵"))


def sample_html(sample) -> str:
    """One reply (an engines.lm.results.Sample) after its prompt, each token shaded by its log-ratio.

    A token shows its number on hover (its title), and on a tap or the keyboard's focus too (it is focusable, and
    its `data-ratio` is drawn under it while focused), so a phone or a keyboard reaches it as a mouse does.
    """
    tokens = "".join(
        f'<span class="fl-tok" tabindex="0" style="background:{bg};color:{fg}" title="{label}" data-ratio="{label}">'
        f'{token_text(t)}</span>'
        for t, r, (bg, fg), label in ((t, r, ratio_colours(r), f"log π − log π_ref = {r:+.3f} nats") for t, r in zip(sample.tokens, sample.log_ratio))
    )
    return (
        f'<div class="fl-sample"><span class="fl-prompt">{token_text(sample.prompt)}</span>{tokens}'
        f'<span class="fl-R">R = {sample.reward:+.2f}, Σ log-ratio = {sum(sample.log_ratio):+.2f}</span></div>'
    )


NEWEST_BESIDE_CURVE = 2
"""Replies shown beside the reward curve while a run trains, so the curve and what it rewards are seen together on a
laptop's screen; the replies section shows every reply the step keeps."""


def samples_html(step: int, samples: tuple, first: int | None = None) -> str:
    """The newest training step's kept replies (only the `first` few, beside the curve), or what will appear there."""
    if not samples:
        return '<p class="fl-caption">The newest replies appear here once the run has trained a step.</p>'
    shown = samples[:first]
    rows = "".join(sample_html(s) for s in shown)
    more = f" (all {len(samples)} and the shading's scale under “The newest replies” below)" if len(shown) < len(samples) else ""
    return (f'<p class="fl-caption">The training batch of step {step}: one reply to each of its first {len(shown)} prompts '
            f'(prompt greyed){more}.</p><div class="fl-samples">{rows}</div>')


def ratio_scale_html() -> str:
    """The legend of the token shading: the palette's bins from -4 to +4 nats."""
    bins = "".join(f'<span class="fl-bin" style="background:{c}"></span>' for c in RATIO_PALETTE)
    return (
        f'<div class="fl-scale"><span>log π − log π_ref: −{RATIO_LIMIT:g} nats or less</span>{bins}'
        f"<span>+{RATIO_LIMIT:g} or more</span></div>"
        '<p class="fl-caption">Purple: the policy now likes the token less than the reference does; white: about as much; '
        "orange: more (there the KL penalty lands). Point at a token, tap it or move to it with Tab for its value.</p>"
    )


def eval_table_html(evals: list[dict]) -> str:
    """One row per held-out evaluation (eval.jsonl records), the seed's `[eval]` columns and rounding (and gold, if any)."""
    if not evals:
        return '<p class="fl-caption">The held-out evaluation runs at the start, every few steps and at the end.</p>'
    columns = EVAL_TABLE[:2] + ((GOLD_COLUMN,) if any("gold" in e for e in evals) else ()) + EVAL_TABLE[2:]
    head = "".join(f"<th>{label}</th>" for _, label, _ in columns)
    rows = "".join("<tr>" + "".join(f"<td>{fmt.format(e[key])}</td>" for key, _, fmt in columns) + "</tr>" for e in evals)
    return f'<table class="fl-table fl-evals"><tr>{head}</tr>{rows}</table>'


def eval_lines_html(results: tuple[EvalResult, ...], settings: LMSettings) -> str:
    """The seed's `[eval ...]` lines of `results` as a preformatted block; empty before the first evaluation."""
    lines = "\n".join(format_eval(r, settings) for r in results)
    return f'<pre class="fl-lines">{html.escape(lines)}</pre>' if results else ""


def worked_example_html(ex: WorkedExample, reward: str) -> str:
    """Seed 000 section 6.12's table for one reply of a run with the reward `reward`: token, log pi, log ref,
    log-ratio, r_t, G_t, under the first line of the seed's text version and above its last (the return)."""
    text = format_worked_example(ex, reward).splitlines()
    caption, total = text[0], text[-1]
    head = "<tr><th>t</th><th class='fl-text'>token</th><th>log π</th><th>log ref</th><th>log-ratio</th><th>r_t</th><th>G_t</th></tr>"
    rows = "".join(
        f"<tr><td>{t}</td><td class='fl-text'>{html.escape(repr(tok))}</td><td>{ex.logp[t]:.3f}</td><td>{ex.ref_logp[t]:.3f}</td>"
        f"<td style='background:{ratio_colours(ex.log_ratio[t])[0]};color:{ratio_colours(ex.log_ratio[t])[1]}'>{ex.log_ratio[t]:+.3f}</td>"
        f"<td>{ex.r[t]:+.3f}</td><td>{ex.G[t]:+.3f}</td></tr>"
        for t, tok in enumerate(ex.tokens)
    )
    return (
        f'<p class="fl-caption">{html.escape(caption)}</p><table class="fl-table fl-worked">{head}{rows}</table>'
        f'<p class="fl-caption fl-worked-total">{html.escape(total.strip())}</p>'
    )
