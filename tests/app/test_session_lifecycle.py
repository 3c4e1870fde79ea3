"""Sessions share nothing: each builds its own page objects. (Resident memory over many open-and-close
cycles is measured by hand: `python -m bench.soak`.)"""

import asyncio

import panel as pn

from app.pages import available_pages
from app.serving.limits import ServerLimits
from bench.servers import page_token, pull_document, serving_in_process, wait_until


def test_two_sessions_get_distinct_page_objects_sharing_no_mutable_state():
    for info in available_pages():
        first, second = info.module.page(), info.module.page()
        assert first is not second
        shared = [
            name for name, value in vars(first).items()
            if isinstance(value, (list, dict, set)) and value and vars(second).get(name) is value
        ]
        assert not shared, (info.name, shared)
        for close in (getattr(first, "close", None), getattr(second, "close", None)):
            if close:
                close()


def test_a_closed_session_leaves_no_root_listed_in_panel_s_state(monkeypatch):
    """Panel lists each template document's hidden root in `state._fake_roots`; a closed page's id leaves that list."""
    with serving_in_process(monkeypatch, ServerLimits(ready_pages=0, unused_session_seconds=1)) as url:
        listed_before, added = set(pn.state._fake_roots), set()
        for _ in range(3):
            asyncio.run(pull_document(url, "baselines", page_token(url, "baselines", "")))
            # read at once: a closed session is dropped only after its 1 s unused lifetime
            added |= set(pn.state._fake_roots) - listed_before
        assert len(added) == 3  # one hidden root a visit, listed while its page is open
        wait_until(lambda: not set(pn.state._fake_roots) & added, 30, "the closed sessions' roots to leave the list")
