"""Sections of a page as tabs, each built the first time the learner opens it.

A page visit costs the server about 1 to 3 ms of CPU per Bokeh model it builds, and one figure
with its tools and one renderer is about 40 models. A part the learner has not opened yet (a
training run below the fold, a second experiment) need not cost anything: `LazySections` shows
the first section and builds another only when its tab is first clicked: until then its tab
holds an empty column, so an unopened section costs neither its Python objects (figures,
widgets) nor its Bokeh models. Once built, a section stays in the document while another tab is
shown: Panel's dynamic tabs would detach it, and a pane that a run updates while detached makes
Panel reset the document's shared stylesheet to its CDN address, which an offline room cannot reach.

The open section is a `param.Selector` of the page, so it is in the URL like every other control
and a shared link opens the same section. A section, once built, stays built: switching back and
forth costs no rebuild, and what a run drew there is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn
import param


class LazySections(pn.viewable.Viewer):
    """Tabs whose contents come from `builders` (title -> function returning the section), built on first view.

    `section` is the page's selector parameter naming the open section; its objects are the
    builders' keys in order. A section is built when the page is drawn with it open, or when it is
    opened later; `on_open(key)` is called once per section, after it is first built (a page
    starts the work that feeds it there).
    """

    def __init__(self, section: param.Selector, builders: dict[str, tuple[str, Callable[[], object]]],
                 on_open: Callable[[str], None] | None = None, **params):
        super().__init__(**params)
        self._owner, self._name = section.owner, section.name
        self._builders = builders
        self._on_open = on_open
        self.opened: set[str] = set()
        self._holders = {key: pn.Column(sizing_mode="stretch_width") for key in builders}
        self.tabs = pn.Tabs(
            *((title, self._holders[key]) for key, (title, _) in builders.items()),
            active=self._index(), sizing_mode="stretch_width",
        )
        self.tabs.param.watch(self._tab_clicked, "active")
        self._owner.param.watch(self._section_changed, self._name)

    def _index(self) -> int:
        return list(self._builders).index(getattr(self._owner, self._name))

    def _tab_clicked(self, event) -> None:
        setattr(self._owner, self._name, list(self._builders)[event.new])

    def _section_changed(self, event) -> None:
        self._build(event.new)
        self.tabs.active = self._index()

    def _build(self, key: str) -> None:
        if key in self.opened:
            return
        self.opened.add(key)
        self._holders[key].objects = [self._builders[key][1]()]
        if self._on_open is not None:
            self._on_open(key)

    def __panel__(self):
        # The open section is built when the page is first drawn, not before: a link's section replaces the default.
        self._build(getattr(self._owner, self._name))
        return self.tabs
