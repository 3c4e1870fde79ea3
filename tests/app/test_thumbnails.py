"""The index's pictures: the shipped files are what the engines draw now, and the index shows each with its alt text."""

import html
import re
import xml.etree.ElementTree as ET

import assets
from app.cli import main
from app.pages import COURSE, PAGE_ORDER, available_pages
from app.pages.thumbnails import PICTURES, shipped
from app.serving.server import course_html, route_link


def test_the_shipped_pictures_are_what_the_command_draws_now(tmp_path, capsys):
    """Byte for byte: a change to an engine or a drawing that changes a picture fails here until
    `feedback-lab thumbnails` has been run and its files committed."""
    assert main(["thumbnails", "--out", str(tmp_path)]) == 0
    assert f"Wrote {len(PICTURES)} pictures into {tmp_path}." in capsys.readouterr().out
    folder = assets.path("thumbnails")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in folder.glob("*.svg"))
    for drawn in tmp_path.iterdir():
        assert drawn.read_bytes() == (folder / drawn.name).read_bytes(), f"{drawn.name} is out of date: run `feedback-lab thumbnails`"


def test_every_page_has_a_small_well_formed_picture():
    assert set(PICTURES) == set(PAGE_ORDER)
    for name in PAGE_ORDER:
        path = shipped(name)
        root = ET.fromstring(path.read_text(encoding="utf-8"))
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert len(root) >= 2  # something drawn, and the axes
        assert path.stat().st_size < 4000
        assert len(PICTURES[name].alt.split()) >= 8  # a sentence, not a label


def test_the_index_reads_as_the_course_with_a_picture_and_alt_text_per_page():
    pages = available_pages()
    text = course_html(pages, route_link)
    assert re.findall(r'<h2 class="fl-stage">([^<]+)</h2>', text) == [stage for stage, _ in COURSE]
    assert re.findall(r'<ol class="fl-index" start="(\d+)">', text) == ["1", "4", "5", "8", "10"]
    linked = re.findall(r'<a href="/([^"]+)">', text)
    assert linked == [p.route for p in pages]  # one entry per page, in reading order
    alts = re.findall(r'<img src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]+" width="160" height="96" alt="([^"]+)">', text)
    assert alts == [html.escape(PICTURES[p.name].alt) for p in pages]
