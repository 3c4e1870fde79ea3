"""A language-model run's held-out evaluation: the seed's `[eval]` table and lines, and section 6.12's worked example.

Every `eval_every` steps the run scores held-out prompts (engines.lm.results.EvalResult); this
view shows them as a table with the seed's columns and rounding, as the seed's `[eval ...]`
lines, and, for one held-out reply the learner picks, the token-by-token worked example of
seed 000 section 6.12: log pi, log ref, the log-ratio, the shaped reward
r_t = -beta (logp - ref_logp) + [t = T-1] R and the return G_t it sums to.
"""

from __future__ import annotations

from functools import cached_property

import panel as pn

from app.pages.live_run.replies import CSS, eval_lines_html, eval_table_html, worked_example_html
from engines.lm.results import EvalResult, worked_example
from engines.lm.settings import LMSettings
from widgets.headings import section_heading

NO_EXAMPLE = '<p class="fl-caption">The worked example appears after the first evaluation.</p>'


def example_options(result: EvalResult) -> dict[str, int]:
    """The worked-example selector's entries: every held-out reply of an evaluation."""
    return {f"{i}: {p}|{y[:60]}": i for i, (p, y) in enumerate(zip(result.prompts, result.replies))}


class RunEvaluation(pn.viewable.Viewer):
    """The evaluations of the run shown: a table, the `[eval]` lines and the worked example of a chosen reply."""

    def __init__(self, **params):
        super().__init__(**params)
        self.table = pn.pane.HTML(eval_table_html([]), sizing_mode="stretch_width", stylesheets=[CSS])
        self.lines = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self.choice = pn.widgets.Select(label="Held-out reply of the latest evaluation", options={}, width=640)
        self.choice.param.watch(lambda _e: self._show_example(), "value")
        self.example = pn.pane.HTML(NO_EXAMPLE, sizing_mode="stretch_width", stylesheets=[CSS])
        self._results: tuple = ()
        self._settings: LMSettings | None = None

    def show(self, evals: list[dict], results: tuple, settings: LMSettings) -> None:
        """Show `evals` (eval.jsonl records) and `results` (their EvalResults); the chosen reply stays chosen if it still exists."""
        self._results, self._settings = results, settings
        self.table.object = eval_table_html(evals)
        self.lines.object = eval_lines_html(results, settings)
        if results:
            chosen = self.choice.value
            options = example_options(results[-1])
            self.choice.param.update(options=options, value=chosen if chosen in options.values() else 0)
            if self.choice.value == chosen:  # the same reply of a newer evaluation: the watcher saw no change
                self._show_example()

    def _show_example(self) -> None:
        if not self._results or self.choice.value is None:
            return
        ex = worked_example(self._results[-1], int(self.choice.value))
        self.example.object = worked_example_html(ex, self._settings.reward)

    @cached_property
    def _layout(self) -> pn.Column:
        return pn.Column(
            section_heading("Held-out evaluation (Chapter 6's `[eval]` lines)"),
            self.table,
            self.lines,
            section_heading("The worked example of section 6.12: one held-out reply, token by token"),
            self.choice,
            self.example,
            sizing_mode="stretch_width",
        )

    def __panel__(self):
        return self._layout
