"""One slider step, one update: the browser's messages held and the document's model graph walked at most once.

Bokeh walks every model of a document to recompute its set of models whenever a property holding
models changes. Panel gives a pane, on its first update in a session, the document's shared
stylesheet models in place of those it was built with, so a page's first slider step, which
updates several panes, walked the whole document once per pane: 300 ms on the KL page against
10 to 15 ms for later steps. Inside `one_update` those walks wait and happen once, at the end,
and only if one was asked for (Bokeh's own `freeze` walks the document every time).
"""

from __future__ import annotations

from contextlib import contextmanager

import panel as pn


@contextmanager
def one_update():
    """`pn.io.hold()` (one message to the browser) with the current document's model walks deferred to the end."""
    doc = pn.state.curdoc
    with pn.io.hold():
        if doc is None or "invalidate" in vars(doc.models):  # no document, or an outer one_update defers already
            yield
            return
        models, asked = doc.models, []
        models.invalidate = lambda: asked.append(True)  # the instance's method shadows the class's for this block
        try:
            yield
        finally:
            del models.invalidate
            if asked:
                models.invalidate()
