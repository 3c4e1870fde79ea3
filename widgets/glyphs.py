"""Renderers that send the browser one glyph each instead of three.

Bokeh's plotting methods give every renderer two extra copies of its glyph, one drawn when other
points are selected and one when its legend entry is muted. Plots without a selection tool or a
muting legend never draw them, yet each is a model the server builds and sends on every visit.
Set to "auto", BokehJS derives them itself if it ever needs them.
"""

from __future__ import annotations

from bokeh.models import GlyphRenderer, Plot


def lean(renderer: GlyphRenderer) -> GlyphRenderer:
    """`renderer` without its own selection-faded and muted glyphs (the browser derives them)."""
    renderer.nonselection_glyph = "auto"
    renderer.muted_glyph = "auto"
    return renderer


def lean_figure(fig):
    """Every glyph renderer of `fig` (a figure, or a layout of figures) made lean; returns `fig`.

    It follows the layout's children and each figure's renderers rather than `fig.select`, which walks
    every property of every model reachable from `fig` (axes, tools, ranges): that walk, once per plot,
    was about 6 ms of each visit.
    """
    if isinstance(fig, Plot):
        for renderer in fig.renderers:
            if isinstance(renderer, GlyphRenderer):
                lean(renderer)
    for child in getattr(fig, "children", ()):
        lean_figure(child[0] if isinstance(child, tuple) else child)  # a GridPlot's children are (plot, row, column)
    return fig
