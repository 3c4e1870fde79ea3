"""The curves of a language-model run: this tab's run in one colour, earlier runs drawn over it in others.

Each figure reads four ColumnDataSources the page fills: the run's training steps and held-out
evaluations (one row each), and the overlaid runs' steps and evaluations (one list per run, with
its colour). The gold score g of a learned reward model is drawn dashed beside the reward; on the
reward figure its lines are added (`add_gold`) once a run has one, as a page without it would
draw nothing there (the column is NaN). `RunCurves` holds a page's four sources, its figures and the legend;
`RunDisplay` holds everything the page draws of the run it watches, and draws each of the run's snapshots.
"""

from __future__ import annotations

import html

import panel as pn
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, DataRange1d, HoverTool

from app.jobs.model_jobs import LiveState, run_label
from app.jobs.runs import Run, columns_of, overlay_columns, wall_pace
from app.jobs.shared_runs import PACE_STEPS
from app.pages.live_run.evaluation import RunEvaluation
from app.pages.live_run.replies import CSS as RUN_CSS
from app.pages.live_run.replies import NEWEST_BESIDE_CURVE, ratio_scale_html, samples_html
from app.pages.live_run.status import CSS as STATUS_CSS
from app.pages.live_run.status import idle_html, queue_html, shared_html, status_html
from app.pages.live_run.text import GOODHART
from widgets.glyphs import lean_figure
from widgets.headings import section_heading
from widgets.metrics import MetricRow
from widgets.style import OKABE_ITO, plot

LIVE = OKABE_ITO["blue"]
"""The colour of this tab's run."""
OVERLAY_COLOURS = tuple(OKABE_ITO[k] for k in ("orange", "green", "vermillion", "purple", "sky", "yellow", "grey"))
"""Colours of earlier runs drawn over the curves, in the order they are ticked."""
REWARD_LABEL = "reward R (log-odds)"
LEARNED_LABEL = "learned reward R and gold g"
"""The reward axes' label, for a registered reward and for a learned reward model (with its gold score)."""
STEP_COLUMNS = ("step", "reward", "p_positive", "kl", "entropy", "grad_norm", "step_time", "gold")
EVAL_COLUMNS = ("step", "reward", "p_positive", "kl_exact", "kl", "entropy", "ref_perplexity", "distinct_1", "distinct_2", "gold")
"""The curves' columns; "gold" is NaN (drawn as nothing) unless the reward is a learned reward model."""
CSS = """
.fl-legend { display: flex; flex-wrap: wrap; gap: 0.3em 1.4em; align-items: center; margin: 0.2em 0.6em; }
.fl-swatch { display: inline-block; width: 1.6em; height: 0.3em; vertical-align: middle; margin-right: 0.4em; }
"""
"""The style sheet of the legend."""


def step_figure(column: str, label: str, eval_column: str, y_range, steps: ColumnDataSource, evals: ColumnDataSource,
                overlay_steps: ColumnDataSource):
    """One metric over the training steps: the earlier runs, this run's line, its held-out evaluations as diamonds."""
    fig = plot("training step", label, y_range=y_range if y_range else DataRange1d(), height=260)
    fig.multi_line("xs", column, source=overlay_steps, line_color="colour", line_width=1.6, line_alpha=0.9)
    line = fig.line("step", column, source=steps, color=LIVE, line_width=2.5)
    fig.scatter("step", eval_column, source=evals, marker="diamond", size=11, color=LIVE, line_color="white")
    fig.add_tools(HoverTool(renderers=[line], tooltips=[("step", "@step"), (label, f"@{column}{{0.000}}")]))
    return lean_figure(fig)


def reward_figure(steps: ColumnDataSource, evals: ColumnDataSource, overlay_steps: ColumnDataSource):
    """The reward over the steps (the gold score comes with `add_gold`)."""
    return step_figure("reward", REWARD_LABEL, "reward", None, steps, evals, overlay_steps)


def add_gold(fig, steps: ColumnDataSource, evals: ColumnDataSource, overlay_steps: ColumnDataSource) -> None:
    """The gold score g beside the reward of `fig` (a reward_figure), dashed, in each run's colour; once only."""
    if fig.select_one({"name": "gold"}) is not None:
        return
    fig.multi_line("xs", "gold", source=overlay_steps, line_color="colour", line_width=1.6, line_dash="dashed")
    gold = fig.line("step", "gold", source=steps, color=LIVE, line_width=2.5, line_dash="dashed", name="gold")
    fig.scatter("step", "gold", source=evals, marker="square", size=9, color=LIVE, line_color="white")
    fig.add_tools(HoverTool(renderers=[gold], tooltips=[("step", "@step"), ("gold score g", "@gold{0.000}")]))
    lean_figure(fig)


def curve_figures(steps: ColumnDataSource, evals: ColumnDataSource, overlay_steps: ColumnDataSource,
                  overlay_evals: ColumnDataSource) -> list:
    """P(positive), the KL, the entropy and distinct-n over the steps, then the reward over the KL (the last)."""
    figures = [
        step_figure(column, label, eval_column, y_range, steps, evals, overlay_steps)
        for column, label, eval_column, y_range in (
            ("p_positive", "P(positive)", "p_positive", (0.0, 1.02)),
            ("kl", "KL to the reference (nats/reply)", "kl_exact", None),
            ("entropy", "policy entropy (nats/token)", "entropy", None),
        )
    ]
    distinct = plot("training step", "distinct-n of held-out replies", y_range=(0.0, 1.02), height=260)
    distinct.multi_line("xs", "distinct_1", source=overlay_evals, line_color="colour", line_width=1.6)
    distinct.multi_line("xs", "distinct_2", source=overlay_evals, line_color="colour", line_width=1.6, line_dash="dashed")
    distinct.line("step", "distinct_1", source=evals, color=LIVE, line_width=2.5, legend_label="distinct-1")
    distinct.line("step", "distinct_2", source=evals, color=LIVE, line_width=2.5, line_dash="dashed", legend_label="distinct-2")
    distinct.scatter("step", "distinct_1", source=evals, marker="diamond", size=11, color=LIVE, line_color="white")
    distinct.scatter("step", "distinct_2", source=evals, marker="diamond", size=11, color=LIVE, line_color="white")
    distinct.legend.location = "top_right"
    figures.append(lean_figure(distinct))
    # Over the KL (Gao et al. 2023): each training batch a dot, the held-out evaluations (exact KL) joined by lines.
    over_kl = plot("KL to the reference (nats/reply)", REWARD_LABEL, height=260)
    over_kl.multi_line("kl_xs", "reward", source=overlay_evals, line_color="colour", line_width=1.6)
    over_kl.multi_line("kl_xs", "gold", source=overlay_evals, line_color="colour", line_width=1.6, line_dash="dashed")
    over_kl.scatter("kl", "reward", source=steps, size=4, color=LIVE, alpha=0.35)
    over_kl.scatter("kl", "gold", source=steps, marker="square", size=4, color=LIVE, alpha=0.35)
    over_kl.line("kl_exact", "reward", source=evals, color=LIVE, line_width=2.5)
    over_kl.line("kl_exact", "gold", source=evals, color=LIVE, line_width=2.5, line_dash="dashed", name="gold_over_kl")
    over_kl.scatter("kl_exact", "reward", source=evals, marker="diamond", size=11, color=LIVE, line_color="white")
    over_kl.scatter("kl_exact", "gold", source=evals, marker="square", size=9, color=LIVE, line_color="white")
    figures.append(lean_figure(over_kl))
    return figures


def curve_grid(figures: list):
    """The figures two to a row, each with its own tools."""
    return gridplot(figures, ncols=2, sizing_mode="stretch_width", merge_tools=False)


def legend_html(labels: list[str] = (), colours: list[str] = (), gold: bool = False) -> str:
    """What the lines are: this tab's run, each overlaid run by its label, and (`gold`) the dashed gold score."""
    items = [f'<span><span class="fl-swatch" style="background:{LIVE}"></span>this tab\'s run: each training batch; '
             f'<span style="color:{LIVE}">◆</span> its held-out evaluations</span>']
    items += [f'<span><span class="fl-swatch" style="background:{c}"></span>{html.escape(label)}</span>' for label, c in zip(labels, colours)]
    if gold:
        items.append(f'<span><span class="fl-swatch" style="background:repeating-linear-gradient(90deg,{LIVE} 0 5px,transparent 5px 9px)">'
                     "</span>dashed: the gold score g of the same replies</span>")
    return f'<div class="fl-legend">{"".join(items)}</div>'


class RunCurves:
    """The curves of a page: this tab's run in `steps` and `evals` (a row a training step, a row a held-out evaluation),
    the ticked earlier runs in `overlay_steps` and `overlay_evals` (a list per run), the `reward` figure, the `others`
    once `grid()` has made them, and the `legend`."""

    def __init__(self, stylesheets: list[str]):
        self.steps = ColumnDataSource({k: [] for k in STEP_COLUMNS}, name="metrics")
        self.evals = ColumnDataSource({k: [] for k in EVAL_COLUMNS}, name="evals")
        self.overlay_steps = ColumnDataSource({k: [] for k in ("xs", "reward", "p_positive", "kl", "entropy", "gold", "colour", "label")}, name="overlay_metrics")
        self.overlay_evals = ColumnDataSource({k: [] for k in ("xs", "distinct_1", "distinct_2", "kl_xs", "reward", "gold", "colour", "label")}, name="overlay_evals")
        self.reward = reward_figure(self.steps, self.evals, self.overlay_steps)
        self.others: list = []  # the other curves, made when their section is first opened
        self.legend = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=stylesheets)

    def grid(self):
        """Make the other curves (curve_figures) and lay them out, two to a row."""
        self.others = curve_figures(self.steps, self.evals, self.overlay_steps, self.overlay_evals)
        return curve_grid(self.others)

    def name_reward(self, learned: bool) -> None:
        """Label the reward's axes (over the steps, and over the KL once made) for a learned reward model or not."""
        for fig in (self.reward, *self.others[-1:]):
            fig.yaxis.axis_label = LEARNED_LABEL if learned else REWARD_LABEL

    def overlay(self, runs: list[Run], learned: bool) -> None:
        """Draw earlier runs over the curves (their columns by app.jobs.runs.overlay_columns, a colour each in turn) and
        name them in the legend; the gold scores are drawn, dashed, when this run's reward is `learned` (a reward
        model's) or an overlaid run has them."""
        steps, evals = overlay_columns(runs)
        labels = [run.label for run in runs]
        gold = learned or any(m.get("gold") is not None for run in runs for m in run.metrics[:1])
        colours = [OVERLAY_COLOURS[k % len(OVERLAY_COLOURS)] for k in range(len(labels))]
        self.overlay_steps.data = steps | {"colour": colours, "label": labels}
        self.overlay_evals.data = evals | {"colour": colours, "label": labels}
        if gold:
            add_gold(self.reward, self.steps, self.evals, self.overlay_steps)
        self.legend.object = legend_html(labels, colours, gold)


class RunDisplay:
    """The run this tab watches, as the page shows it: the line of how the learner came to it, the status line, the
    download bar, the device queue, the metric row, the curves with the gold score's note, the newest replies (the
    first of them also beside the curve) and the
    held-out evaluation. `show` draws a snapshot (a LiveState), only its changed parts."""

    def __init__(self, metrics: dict):
        self.css = STATUS_CSS + CSS + RUN_CSS
        self.shared_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[self.css], visible=False)
        self.status = pn.pane.HTML(idle_html(None), sizing_mode="stretch_width", stylesheets=[self.css])
        self.queue_line = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[self.css])
        self.goodhart = pn.pane.Markdown(GOODHART, sizing_mode="stretch_width", margin=(0, 10), css_classes=["fl-goodhart"])
        self.download_bar = pn.indicators.Progress(value=0, max=1000, visible=False, sizing_mode="stretch_width",
                                                   css_classes=["fl-download"])
        self.metrics = MetricRow(metrics)
        self.curves = RunCurves(stylesheets=[self.css])
        self.samples = pn.pane.HTML(samples_html(0, ()), sizing_mode="stretch_width", stylesheets=[self.css])
        # The first of them beside the curve, once a step has some (the section below says what appears before).
        self.newest = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[self.css], visible=False)
        self.evaluation = RunEvaluation()
        self.shown = (-1, -1)  # the steps and evaluations drawn: a snapshot sends only what is new
        self.no_run_yet = True

    def show_no_run(self, pace: str) -> None:
        """The status line before this tab's first run, with `pace` (status.newest_pace's sentence)."""
        if self.no_run_yet:
            self.status.object = idle_html(None, pace)

    def begin(self, sentence: str) -> None:
        """Another run is shown from now: all of its steps are drawn afresh, under `sentence` (say's)."""
        self.shown = (-1, -1)
        self.say(sentence)

    def say(self, sentence: str) -> None:
        """`sentence` above the status line (how the learner came to the run, or that they left it); '' hides it."""
        self.shared_line.param.update(object=shared_html(sentence), visible=bool(sentence))

    def show_queue(self, overview) -> None:
        """The device queue's line (app.jobs.cluster.Cluster.overview)."""
        self.queue_line.object = queue_html(overview)

    def name_reward(self, learned: bool) -> None:
        """For a learned reward (a reward model's), the gold score's note shows and the curves' labels name it."""
        self.goodhart.visible = learned
        self.curves.name_reward(learned)

    def show(self, state: LiveState) -> None:
        self.no_run_yet = False
        self.status.object = status_html(state, run_label(state.settings), wall_pace(list(state.metrics[-PACE_STEPS:])))
        self.download_bar.visible = state.download is not None
        if state.download is not None:
            _, done, total = state.download
            self.download_bar.value = int(self.download_bar.max * done / total) if total else 0
        if len(state.metrics) != self.shown[0]:
            self._show_steps(state)
        if len(state.evals) != self.shown[1]:
            evals = list(state.evals)
            self.curves.evals.data = columns_of(evals, EVAL_COLUMNS)
            self.evaluation.show(evals, state.eval_results, state.settings)
        self.shown = (len(state.metrics), len(state.evals))

    def _show_steps(self, state: LiveState) -> None:
        shown = self.shown[0]
        if 0 <= shown < len(state.metrics):  # the same run, further on: only its new steps travel to the browser
            self.curves.steps.stream(columns_of(list(state.metrics[shown:]), STEP_COLUMNS))
        else:
            self.curves.steps.data = columns_of(list(state.metrics), STEP_COLUMNS)
        if state.metrics:
            self.metrics.update(**state.metrics[-1])
        self.samples.object = samples_html(state.step, state.samples)
        self.newest.param.update(object=samples_html(state.step, state.samples, first=NEWEST_BESIDE_CURVE),
                                 visible=bool(state.samples))

    def curves_section(self, learned: bool) -> pn.pane.Bokeh:
        """The other curves, made now (their section's first opening), the reward over the KL named for the reward
        in force (`learned`: a reward model's, with its gold score)."""
        grid = self.curves.grid()
        self.curves.name_reward(learned)
        return pn.pane.Bokeh(grid, sizing_mode="stretch_width")

    def samples_section(self) -> pn.Column:
        return pn.Column(
            section_heading("The newest replies, each token shaded by its log-ratio to the reference"),
            pn.pane.HTML(ratio_scale_html(), sizing_mode="stretch_width", stylesheets=[self.css]),
            self.samples,
            sizing_mode="stretch_width",
        )
