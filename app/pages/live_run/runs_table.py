"""A table of runs to tick, a button that reads the list again, and one that downloads the ticked runs (or all).

The page hands it each new table (a DataFrame whose "run" column holds the runs' ids) and is told
when the ticks change. A tick belongs to a run, not to a row, so it stays with its run when the
list is read again and the rows move.
"""

from __future__ import annotations

import io
from collections.abc import Callable

import pandas as pd
import panel as pn

from widgets.headings import section_heading


class RunsTable(pn.viewable.Viewer):
    """The runs with a checkbox each under `title` and `caption`; `ticked` holds the ids of the ticked ones."""

    def __init__(self, frame: pd.DataFrame, title: str, caption: str, on_ticks: Callable[[], None], on_refresh: Callable[[], None],
                 download: Callable[[], io.BytesIO], on_open: Callable[[str], None] | None = None, **params):
        super().__init__(**params)
        self.title, self.caption, self.on_ticks = title, caption, on_ticks
        self.ticked: list[str] = []
        self.table = pn.widgets.Tabulator(frame, selectable="checkbox", disabled=True, show_index=False, layout="fit_data_table",
                                          pagination="local", page_size=10, sizing_mode="stretch_width", css_classes=["fl-runs"])
        self.table.param.watch(self._ticks_changed, "selection")
        self.refresh_button = pn.widgets.Button(label="Refresh the list", width=150)
        self.refresh_button.on_click(lambda _e: on_refresh())
        self.open_button = pn.widgets.Button(label="Open the first ticked run", width=200, visible=on_open is not None)
        self.open_button.on_click(lambda _e: on_open(self.ticked[0]) if self.ticked else None)
        self.download = pn.widgets.FileDownload(callback=download, filename="runs.zip", embed=False, color="light",
                                                label="Download runs (zip): the ticked ones, or all", width=320)

    def show(self, frame: pd.DataFrame) -> None:
        """Show `frame`, its runs that were ticked still ticked (one gone from it loses its tick)."""
        self.table.value = frame
        ids = list(frame["run"])
        self.table.selection = [ids.index(i) for i in self.ticked if i in ids]

    def _ticks_changed(self, _event) -> None:
        ids = list(self.table.value["run"])
        self.ticked = [ids[i] for i in self.table.selection if i < len(ids)]
        self.on_ticks()

    def __panel__(self):
        return pn.Column(
            section_heading(self.title),
            pn.pane.Markdown(self.caption, margin=(0, 10), sizing_mode="stretch_width"),
            self.table,
            pn.Row(self.refresh_button, self.open_button, self.download),
            sizing_mode="stretch_width",
        )
