"""A row of numbers shown as text indicators, updated in place."""

from __future__ import annotations

import html

import panel as pn

CSS = """
.fl-metrics { display: flex; flex-wrap: wrap; gap: 0.4em 2.2em; margin: 0.2em 0.6em; }
.fl-metric-label { font-size: 10pt; opacity: 0.8; }
.fl-metric-value { font-size: 22pt; font-variant-numeric: tabular-nums; }
"""


class MetricRow(pn.viewable.Viewer):
    """Labelled numbers side by side, drawn as one HTML element.

    `metrics` maps a key to (label, format), the format a `str.format` template on
    `value` such as "{value:.2f}"; `update(key=number, ...)` changes the shown values.
    All numbers live in one pane, so an update is one message to the browser, not one
    per number: a slider drag stays fast.
    """

    def __init__(self, metrics: dict[str, tuple[str, str]], **params):
        super().__init__(**params)
        self.metrics = metrics
        self._values = {key: 0.0 for key in metrics}
        self.pane = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS])
        self._render()

    def update(self, **values: float) -> None:
        self._values.update({key: float(value) for key, value in values.items() if key in self.metrics})
        self._render()

    def values(self) -> dict[str, float]:
        return dict(self._values)

    def text(self, key: str) -> str:
        """The number `key` as shown."""
        return self.metrics[key][1].format(value=self._values[key])

    def _render(self) -> None:
        blocks = "".join(
            f'<div class="fl-metric" data-key="{key}"><div class="fl-metric-label">{html.escape(label)}</div>'
            f'<div class="fl-metric-value">{self.text(key)}</div></div>'
            for key, (label, _) in self.metrics.items()
        )
        self.pane.object = f'<div class="fl-metrics">{blocks}</div>'

    def __panel__(self):
        return self.pane
