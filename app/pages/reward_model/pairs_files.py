"""The pairs files of the runs folder: pick one and load it, or save the pairs shown."""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class PairsFiles(pn.viewable.Viewer):
    """The files `listing()` names (file name -> path), a Load button and a Save button, off until there are pairs to save.

    `on_load(path)` and `on_save()` are the page's; it calls `refresh` when a file may have been added.
    """

    def __init__(self, listing: Callable[[], dict[str, str]], on_load: Callable[[str], None], on_save: Callable[[], None], **params):
        super().__init__(**params)
        self.listing = listing
        self.files = pn.widgets.Select(label="Pairs files in the runs folder", options={}, width=360)
        self.load_button = pn.widgets.Button(label="Load pairs", color="light", width=110, align="end")
        self.load_button.on_click(lambda _event: on_load(self.files.value))
        self.save_button = pn.widgets.Button(label="Save pairs", color="light", width=110, align="end", disabled=True)
        self.save_button.on_click(lambda _event: on_save())
        self.refresh()

    def refresh(self) -> None:
        """Read the list again; Load is off while it is empty."""
        self.files.options = self.listing()
        self.load_button.disabled = not self.files.options

    def __panel__(self):
        return pn.Row(self.files, self.load_button, self.save_button)
