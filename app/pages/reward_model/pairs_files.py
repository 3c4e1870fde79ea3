"""The pairs files of the runs folder: pick one and load it, or save the pairs shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import panel as pn

import app.jobs.runs as runs


class PairsFiles(pn.viewable.Viewer):
    """The files of `root`'s pairs folder (app.jobs.runs.pairs_files), a Load button and a Save button, off until there
    are pairs to save; a file that cannot be loaded is one sentence, said by `fail` (the pairs job's alert: a file
    read stands in for the pairs that job samples), and nothing else.

    `on_load(pairs, path)` takes the pairs of a file read; `current()` gives the pairs to save, and `on_saved(path)`
    is told where they went. The page calls `refresh` when a file may have been added.
    """

    def __init__(self, root: Path, on_load: Callable[[object, str], None], current: Callable[[], object],
                 on_saved: Callable[[Path], None], fail: Callable[[str], None], **params):
        super().__init__(**params)
        self.root, self.on_load, self.current, self.on_saved, self.fail = root, on_load, current, on_saved, fail
        self.files = pn.widgets.Select(label="Pairs files in the runs folder", options={}, width=360)
        self.load_button = pn.widgets.Button(label="Load pairs", color="light", width=110, align="end")
        self.load_button.on_click(lambda _event: self.load(self.files.value))
        self.save_button = pn.widgets.Button(label="Save pairs", color="light", width=110, align="end", disabled=True)
        self.save_button.on_click(lambda _event: self.save())
        self.refresh()

    def refresh(self) -> None:
        """Read the list again; Load is off while it is empty."""
        self.files.options = runs.pairs_files(self.root)
        self.load_button.disabled = not self.files.options

    def load(self, path: str | None) -> None:
        """Read the listed file at `path` and hand its pairs on; a file not listed or not readable is one sentence."""
        if not path:
            return
        try:
            pairs = runs.read_listed_pairs(self.root, path)
        except ValueError as error:
            self.fail(str(error))
            return
        self.on_load(pairs, path)

    def save(self) -> Path | None:
        """Write the pairs shown to the pairs folder (the file `feedback-lab train-reward --pairs` reads)."""
        pairs = self.current()
        if pairs is None:
            return None
        path = runs.write_pairs(self.root, pairs)
        self.refresh()
        self.on_saved(path)
        return path

    def __panel__(self):
        return pn.Row(self.files, self.load_button, self.save_button)
