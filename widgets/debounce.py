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
        self._pending: dict[str, tuple[object, object]] = {}
        """Key -> the document and its timeout callback that will call the start."""

    def pending(self, key: str) -> bool:
        """Whether a start under `key` waits for quiet."""
        return key in self._pending

    def cancel(self, key: str) -> None:
        """Drop the start waiting under `key`, if any."""
        doc, callback = self._pending.pop(key, (None, None))
        if doc is not None:
            doc.remove_timeout_callback(callback)

    def soon(self, key: str, start: Callable[[], None]) -> None:
        doc = pn.state.curdoc if pn.state.curdoc and pn.state.curdoc.session_context else None
        if doc is None:
            start()
            return
        self.cancel(key)

        def run() -> None:
            self._pending.pop(key, None)
            start()

        self._pending[key] = (doc, doc.add_timeout_callback(run, self.delay_ms))
