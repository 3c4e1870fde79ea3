"""Work started once the controls have been still for a moment, so a dragged slider starts one run, not twenty."""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class Debounce:
    """`soon(key, start)` calls `start` after `delay_ms` of quiet; a later `soon` with the same key replaces it.

    Without a browser session (tests, scripts) `start` is called at once.
    """

    def __init__(self, delay_ms: int):
        self.delay_ms = delay_ms
        self._pending: dict[str, object] = {}

    def pending(self, key: str) -> bool:
        """Whether a start under `key` waits for quiet."""
        return key in self._pending

    def soon(self, key: str, start: Callable[[], None]) -> None:
        doc = pn.state.curdoc if pn.state.curdoc and pn.state.curdoc.session_context else None
        if doc is None:
            start()
            return
        pending = self._pending.pop(key, None)
        if pending is not None:
            doc.remove_timeout_callback(pending)

        def run() -> None:
            self._pending.pop(key, None)
            start()

        self._pending[key] = doc.add_timeout_callback(run, self.delay_ms)
