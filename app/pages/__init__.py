"""The pages of the app, one package each, and the frame they share.

A page is a package `app/pages/NAME/` (or, for a page of a few lines, a module `app/pages/NAME.py`) whose
`__init__` has
    TITLE    the page's title (navigation and index),
    SUMMARY  one sentence for the index,
    a `pn.viewable.Viewer` subclass: typed, bounded `param` fields are its controls,
             and an optional `close()` stops its work when the browser tab closes,
    page()   a factory returning a fresh instance, one per browser session,
and, if its first view is a function of its controls alone (no run files, no job), may say
    READY_AHEAD = True   its sessions may be built before they are asked for (app/serving/ready_pages.py).
NAME is listed in PAGE_ORDER; its route is /NAME with "_" written "-". A page whose
module is absent simply has no route, link or index entry. Beside the view, the package holds
the page's words (text.py), its figures (figures.py) and any piece that serves this page alone
(the reward-models page's τ sweep, jobs.py): what a page is made of is found in one folder.
Its controls come from its engine's settings dataclass (widgets/settings_controls.py).
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from types import ModuleType

COURSE = (
    ("The policy gradient and its noise", ("baselines", "toy_target", "bandit")),
    ("Critics: values, TD errors and GAE", ("token_world",)),
    ("A language model and its KL penalty", ("live_run", "kl")),
    ("Rewards learned from comparisons", ("preferences", "reward_model")),
    ("The lab", ("lab",)),
)
"""The course as the index lays it out: its stages in reading order, each with its pages. Each text's own order of
sections is kept and the two are merged by topic (the policy gradient and its noise, critics, a language model and
its KL penalty, rewards learned from comparisons), then the lab's notebook, which exercises module 9 as a whole."""

PAGE_ORDER = tuple(name for _, names in COURSE for name in names)
"""Every page the app knows, in reading order (the navigation's and the index's)."""

SECTIONS = {
    "baselines": "Module 9, sections 3 and 4",
    "toy_target": "Module 9, sections 2 to 5 and Exercise 2",
    "bandit": "Chapter 6, sections 6.4 to 6.7",
    "token_world": "Chapter 6, sections 6.8 to 6.10",
    "live_run": "Chapter 6, section 6.11",
    "kl": "Chapter 6, section 6.12",
    "preferences": "Module 9, sections 6 and 7",
    "reward_model": "Module 9, section 8",
    "lab": "Module 9, the lab: Exercises 0 to 5 and the stretch",
}
"""Where each page's material is in the two texts (chapter 6 of the book, module 9 of the workshop)."""


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

    @property
    def ready_ahead(self) -> bool:
        """Whether its sessions may be built before a visitor asks (READY_AHEAD in the module)."""
        return getattr(self.module, "READY_AHEAD", False)

    @property
    def sections(self) -> str:
        """Where the page's material is in the texts ("" if not recorded)."""
        return SECTIONS.get(self.name, "")


def available_pages() -> list[PageInfo]:
    """The pages of PAGE_ORDER whose module exists, imported, in order."""
    pages = []
    for name in PAGE_ORDER:
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        pages.append(PageInfo(name=name, route=name.replace("_", "-"), module=module))
    return pages
