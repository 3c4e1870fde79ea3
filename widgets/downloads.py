"""Downloads: CSV of a plot's data; the PNG comes from Bokeh's save tool on every plot."""

from __future__ import annotations

import csv
import io

import panel as pn
from bokeh.models import ColumnDataSource

from widgets.glyphs import lean_figure
from widgets.headings import section_heading


def source_csv(source: ColumnDataSource) -> str:
    """The columns of `source` as CSV text, one row per data point, header first."""
    columns = list(source.data)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*(list(source.data[c]) for c in columns)))
    return out.getvalue()


def csv_download(source: ColumnDataSource, filename: str, label: str = "Download CSV") -> pn.widgets.FileDownload:
    """A button that downloads the data of `source` as it is when clicked."""
    return pn.widgets.FileDownload(
        callback=lambda: io.StringIO(source_csv(source)),
        filename=filename,
        label=label,
        color="light",
        embed=False,
        width=180,
    )


def plot_with_downloads(fig, sources: dict[str, ColumnDataSource], title: str | None = None) -> pn.Column:
    """The figure (or layout of figures) with one CSV button per named source beneath it (PNG: the toolbar's
    save tool); its renderers send one glyph each (widgets.glyphs: no plot here selects or mutes)."""
    buttons = [csv_download(src, f"{name}.csv", f"CSV: {name}") for name, src in sources.items()]
    parts = ([section_heading(title)] if title else []) + [
        pn.pane.Bokeh(lean_figure(fig), sizing_mode="stretch_width"),
        pn.Row(*buttons),
    ]
    return pn.Column(*parts, sizing_mode="stretch_width")
