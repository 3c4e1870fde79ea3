"""The lab: seed 001's six exercises as a Jupyter notebook, listed here and offered for download.

The notebook runs where Feedback Lab is installed (it imports the engines and the checkpoints
of `app.lab`), offline and on a CPU. This page is deliberately light: one HTML pane and one
download button, so that a room of learners fetching the notebook costs the server little.
"""

from __future__ import annotations

import html

import panel as pn

from app.lab import EXERCISES, NOTEBOOK, PARTS, STRETCH
from widgets.headings import HEADING_CSS

TITLE = "The lab: six exercises in a notebook"
SUMMARY = "Write returns, the REINFORCE loss, a baseline, the Bradley-Terry rater and a reward model's loss; checkpoints say whether each is right."

OPENING = (
    "Module 9's lab is a Jupyter notebook: six exercises in two parts, about 50 minutes. Each is a "
    "<code># TODO</code> stub you fill in, with a folded hint and a folded solution beneath it, and a checkpoint "
    "cell that passes or says in a sentence what is wrong. The toy task, its exact gradient, the preference pairs "
    "and the reward model come with Feedback Lab, so the notebook runs offline, on a CPU, in a few minutes."
)
HOW = (
    "<p>Open it where Feedback Lab is installed, since it imports the project: "
    "<code>pip install -e \".[lab]\"</code> in the project adds Jupyter, then "
    "<code>feedback-lab lab --out lab9</code> writes the notebook and <code>jupyter lab lab9/lab9.ipynb</code> "
    "opens it. On a class server, download it below into your Jupyter session there. Exercise 5 saves your reward "
    "model where the live-run page finds it.</p>"
)


def exercises_html() -> str:
    """The exercises by part: number, title, the module's sections, the minutes, what you write."""
    parts = []
    for key, title in PARTS.items():
        rows = "".join(
            f"<li><b>Exercise {e.number} · {html.escape(e.title)}</b> (section {e.sections}, {e.minutes} min): "
            f"{html.escape(e.writes)}</li>" for e in EXERCISES if e.part == key)
        parts.append(f"<h2>Part {key} · {html.escape(title)}</h2><ul>{rows}</ul>")
    parts.append(f"<h2>Stretch</h2><ul><li>{html.escape(STRETCH)}</li></ul>")
    return f'<div class="fl-lab"><p>{OPENING}</p>{"".join(parts)}{HOW}</div>'


class LabPage(pn.viewable.Viewer):
    """The exercises and the notebook's download; nothing to compute, nothing to stop."""

    def __init__(self, **params):
        super().__init__(**params)
        self.download = pn.widgets.FileDownload(file=str(NOTEBOOK), filename=NOTEBOOK.name, embed=False,
                                                label=f"Download the notebook ({NOTEBOOK.name})", color="primary",
                                                width=320)

    def __panel__(self):
        return pn.Column(pn.pane.HTML(exercises_html(), sizing_mode="stretch_width", stylesheets=[HEADING_CSS]), self.download,
                         sizing_mode="stretch_width")


def page(query: dict[str, str] | None = None) -> LabPage:
    """A fresh page for one browser session (it has no controls, so the query is not read)."""
    return LabPage()
