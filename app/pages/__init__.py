"""The pages of the app, one module each, and the frame they share.

A page is a module `app/pages/NAME.py` with
    TITLE    the page's title (navigation and index),
    SUMMARY  one sentence for the index,
    a `pn.viewable.Viewer` subclass: typed, bounded `param` fields are its controls,
             and an optional `close()` stops its work when the browser tab closes,
    page()   a factory returning a fresh instance, one per browser session.
NAME is listed in PAGE_ORDER; its route is /NAME with "_" written "-". A page whose
module is absent simply has no route, link or index entry.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

PAGE_ORDER = ("baselines", "bandit", "token_world", "toy_target", "preferences", "kl")
"""Every page the app knows, in reading order (the seeds' order)."""


@dataclass(frozen=True)
class PageInfo:
    """A page module that is present, and where it is served."""

    name: str
    """Module name under app.pages, e.g. "token_world"."""
    route: str
    """URL path without the slash, e.g. "token-world"."""
    module: ModuleType
    """The imported module (TITLE, SUMMARY, page())."""

    @property
    def title(self) -> str:
        return self.module.TITLE

    @property
    def summary(self) -> str:
        return self.module.SUMMARY


def available_pages() -> list[PageInfo]:
    """The pages of PAGE_ORDER whose module exists, imported, in order."""
    pages = []
    for name in PAGE_ORDER:
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        pages.append(PageInfo(name=name, route=name.replace("_", "-"), module=module))
    return pages
