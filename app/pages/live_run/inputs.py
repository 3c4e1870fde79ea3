"""The run's settings as the page's inputs, in rows: menus, number boxes, the seed and its New seed button.

Each input is bound to its control, a `param` field of the page (made from LMSettings). A number typed
beyond its control's bounds is put back within them with one sentence (widgets/number_box.py), worded as
the server's limit for a control that has one (app/serving/limits.py). While a run is under way the
inputs are disabled: what is shown is the run of the settings it started with.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import panel as pn
import param

from app.serving.limits import limit_sentence
from widgets.number_box import number_box
from widgets.run_controls import seed_control

COUNTS = ("steps", "prompts", "replies", "T", "eval_every", "eval_prompts", "eval_replies")
"""The controls that count (steps, prompts, replies, tokens): number boxes, a value above the server's limit said as one."""


class SettingsInputs(pn.viewable.Viewer):
    """The inputs of `page`'s run settings, by control name (`inputs["beta"]`), laid out in rows; `say(sentence)`
    tells the learner a typed value that was put back."""

    enabled = param.Boolean(default=True, doc="Whether the settings may be changed: no run is under way.")

    def __init__(self, page: param.Parameterized, say: Callable[[str], None], **params):
        super().__init__(**params)
        self.inputs: dict[str, pn.widgets.Widget] = {
            "model": pn.widgets.Select.from_param(page.param.model, width=330),
            "reward": pn.widgets.Select.from_param(page.param.reward, width=220),
            "device": pn.widgets.Select.from_param(page.param.device, width=110),
            "advantage": pn.widgets.Select.from_param(page.param.advantage, width=200),
            "lr": number_box(page, "lr", say, width=160),
            "beta": number_box(page, "beta", say, width=160),
            "at_pace": pn.widgets.Checkbox.from_param(page.param.at_pace),
            "trained_blocks": number_box(page, "trained_blocks", say, width=160),
        }
        self.inputs["seed"], self.inputs["new_seed"] = seed_control(page.param.seed)
        for name in COUNTS:
            self.inputs[name] = number_box(page, name, say, too_high=partial(limit_sentence, name), width=160)

    def __getitem__(self, name: str) -> pn.widgets.Widget:
        return self.inputs[name]

    @param.depends("enabled", watch=True)
    def _enable(self) -> None:
        for widget in self.inputs.values():
            widget.disabled = not self.enabled

    def __panel__(self) -> pn.Column:
        w = self.inputs
        return pn.Column(
            pn.Row(w["model"], w["reward"], w["device"]),
            pn.Row(w["beta"], w["lr"], w["steps"], w["seed"], w["new_seed"]),
            pn.Row(w["prompts"], w["replies"], w["advantage"], w["T"]),
            pn.Row(w["trained_blocks"], w["eval_every"], w["eval_prompts"], w["eval_replies"]),
            w["at_pace"],
        )
