"""The room's runs: a table of a runs folder's runs to tick, a button that reads the folder again, one that opens
the first ticked run, and one that downloads the ticked runs (or all).

The table reads its folder (app.jobs.runs.RunsFolder) when told to `refresh`, and lists its runs with
what the page knows of them now (which train, how many learners watch each) on `show`. A tick belongs
to a run, not to a row, so it stays with its run when the list is read again and the rows move.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import panel as pn

# Panel sends a component's script with every page once its model is registered: the table is built when its tab
# first opens, after the browser was sent the page's scripts, and would have none to draw it on a fresh server.
import panel.models.tabulator  # noqa: F401

from app.jobs.runs import Run, RunsFolder, runs_frame, zip_runs
from widgets.headings import section_heading

RUN_COLUMN_PX = 140
"""Width of the runs table's first column, the run's name (wrapped on two lines)."""
NARROW_CELLS = """
.tabulator .tabulator-header .tabulator-col .tabulator-col-content { padding: 4px 6px !important; }
.tabulator .tabulator-header .tabulator-col.tabulator-sortable .tabulator-col-title { padding-right: 16px !important; }
.tabulator-row .tabulator-cell { padding: 4px 6px !important; }
"""
"""Less padding in the runs table's headers and cells (the sort arrow keeps its room), so that at 1366 px every
column fits the page's column."""


class RunsTable(pn.viewable.Viewer):
    """The runs of `runs_dir` with a checkbox each under `title` and `caption`; `ticked` holds the ids of the ticked ones."""

    def __init__(self, runs_dir: Path, title: str, caption: str, on_ticks: Callable[[], None], on_refresh: Callable[[], None],
                 on_open: Callable[[str], None] | None = None, **params):
        super().__init__(**params)
        self.title, self.caption, self.on_ticks = title, caption, on_ticks
        self.folder = RunsFolder(runs_dir)
        self.ticked: list[str] = []
        self.table = pn.widgets.Tabulator(runs_frame([], set()), selectable="checkbox", disabled=True, show_index=False,
                                          layout="fit_data_table", pagination="local", page_size=10,
                                          # The run's long name wraps in a narrower column, so that at 1366 px
                                          # every column fits beside it; narrower, the table scrolls sideways.
                                          widths={"run": RUN_COLUMN_PX}, formatters={"run": {"type": "textarea"}},
                                          sizing_mode="stretch_width", css_classes=["fl-runs"], stylesheets=[NARROW_CELLS])
        self.table.param.watch(self._ticks_changed, "selection")
        self.refresh_button = pn.widgets.Button(label="Refresh the list", width=150)
        self.refresh_button.on_click(lambda _e: on_refresh())
        self.open_button = pn.widgets.Button(label="Open the first ticked run", width=200, visible=on_open is not None)
        self.open_button.on_click(lambda _e: on_open(self.ticked[0]) if self.ticked else None)
        self.download = pn.widgets.FileDownload(callback=self.zip, filename="runs.zip", embed=False, color="light",
                                                label="Download runs (zip): the ticked ones, or all", width=320)

    def show(self, running: set[str], watchers: dict[str, int]) -> None:
        """List the runs as last read (`running`: the ids of those training; `watchers`: learners per run here), the
        runs that were ticked still ticked (one gone from the folder loses its tick)."""
        frame = runs_frame(list(self.folder.runs().values()), running, watchers)
        self.table.value = frame
        ids = list(frame["run"])
        self.table.selection = [ids.index(i) for i in self.ticked if i in ids]

    def ticked_runs(self) -> list[Run]:
        """The ticked runs, as last read."""
        found = self.folder.runs()
        return [found[i] for i in self.ticked if i in found]

    def zip(self) -> io.BytesIO:
        """The ticked runs' files in one zip, or every run's when none is ticked."""
        return zip_runs([self.folder.root / run_id for run_id in self.ticked or list(self.folder.runs())])

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
