"""What a language-model run is doing, in sentences: loading, downloading, waiting, running, paused, ended; the device queue.

The functions read an app.jobs.model_jobs.LiveState (or the cluster's queue overview) and write one
HTML paragraph each, for the page's status and queue lines.
"""

from __future__ import annotations

import html
import math
import statistics

from engines.lm.settings import LMSettings

CSS = """
.fl-status { font-size: 1.05em; margin: 0.2em 0.6em; }
.fl-queue { margin: 0 0.6em; opacity: 0.85; }
.fl-shared { margin: 0.2em 0.6em; padding: 0.3em 0.6em; border-left: 3px solid #0072B2; }
"""
"""The style sheet of the status and queue lines."""



def format_bytes(n: int) -> str:
    """548105171 -> '548 MB' (decimal units, as the hub shows sizes)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{n} bytes"


def status_html(state, label: str, pace: float | None = None) -> str:
    """The status line of a run under way (`label`: the run as the device queue names it; `pace`: its seconds a step
    of wall-clock time, when known)."""
    s = state.settings
    if state.phase == "loading":
        return (f'<p class="fl-status">Loading: {html.escape(label)} on {state.device or s.device} (the first run '
                "of a model on a worker reads it from disk)…</p>")
    if state.phase == "downloading":
        name, done, total = state.download
        return (f'<p class="fl-status">{html.escape(name)}: {format_bytes(total)} to download, {format_bytes(done)} done '
                f"(once only: it is kept in this machine's Hugging Face cache).{' ' + html.escape(state.message) if state.message else ''}</p>")
    if state.phase == "queued":  # where in line, and when it should start: the job's alert above says it
        return f'<p class="fl-status">Waiting for the {state.device}: {html.escape(label)}.</p>'
    if state.phase == "error":
        return idle_html(state)
    where = html.escape(str(state.folder))
    if state.phase == "paused":
        return (
            f'<p class="fl-status">Paused after step {state.step} of {s.steps}: your view holds here. The run holds too, '
            f"keeping its place on {state.device}, while every learner watching it has paused. Resume shows the newest "
            f"step; Stop leaves the run. Files: {where}</p>"
        )
    when = ""
    if pace is not None:
        left = pace * (s.steps - state.step)
        when = f" · {pace:.2f} s per step, about {left / 60:.0f} min of training left" if left >= 60 else f" · {pace:.2f} s per step"
    return f'<p class="fl-status">Running on {state.device}: {state.step} of {s.steps} steps done{when} · writing {where}</p>'


def idle_html(state, pace: str = "") -> str:
    """The status line when no run is under way: none yet (`state` None, with `pace`, `newest_pace`'s sentence), or
    how the last one ended."""
    if state is None:
        return ('<p class="fl-status">No run yet: choose the settings and press Start. Once it trains, this line gives '
                f"its seconds per step and the minutes left.{' ' + pace if pace else ''}</p>")
    if state.folder is None:
        text = "No run was started."
    else:
        done = state.metrics[-1]["step"] if state.metrics else 0
        # The run's name, not its path: the room's runs list it by name, and the server's folders are not the class's business.
        run = html.escape(state.folder.name)
        if done >= state.settings.steps:
            text = f"Finished: all {done} steps are written to the run {run}."
        else:
            text = f"Stopped after step {done} of {state.settings.steps}; the run {run} holds every step done."
    return f'<p class="fl-status">{text}</p>'


def shared_html(sentence: str) -> str:
    """The line above the status: how the learner came to the run shown, or that they left it."""
    return f'<p class="fl-shared">{sentence}</p>'


def queue_html(overview) -> str:
    """The device queue line: per device (app.jobs.cluster.DeviceQueue), what trains and how many wait."""
    lines = []
    for q in overview:
        running = "; ".join(map(html.escape, q.running)) or "nothing"
        lines.append(f"<b>{q.device}</b>: training {running}; {len(q.waiting)} waiting")
    text = " · ".join(lines) if lines else "No run is training on this server."
    return f'<p class="fl-queue">Device queue: {text}</p>'


def newest_pace(runs, model: str) -> str:
    """How fast the newest run of `model` on this server trained (`runs`: app.jobs.runs.Run, oldest first): its median
    seconds a step and its batch, as a sentence; '' where no run of it has a step yet."""
    of_model = [r for r in runs if r.config.get("settings", {}).get("model") == model and r.metrics]
    if not of_model:
        return ""
    run = of_model[-1]
    s = LMSettings().__dict__ | run.config["settings"]  # a run's config.json from before a setting existed holds its default
    seconds = statistics.median(m.get("step_time", math.nan) for m in run.metrics)
    return (f"The newest run of {html.escape(model)} on this server took {seconds:.2f} s a step "
            f"({s['prompts']} prompts × {s['replies']} replies × {s['T']} tokens).")
