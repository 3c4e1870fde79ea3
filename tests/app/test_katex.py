"""KaTeX's stylesheets and fonts as the app serves them (widgets/katex.py): of the KaTeX Panel bundles, every font
the stylesheet names shipped, and only the app's own routes named."""

import re

from panel.models.katex import KATEX_VERSION

import assets
from widgets import katex


def test_the_files_are_of_the_katex_panel_bundles():
    assert katex.VERSION == KATEX_VERSION, "take the fonts of Panel's KaTeX (assets/katex/README.md)"
    rules, faces = katex.split(katex.bundled_css().read_text(encoding="utf-8"))
    assert (katex.folder() / "katex.css").read_text(encoding="utf-8") == rules, "run python -m widgets.katex"
    assert (katex.folder() / "fonts.css").read_text(encoding="utf-8") == faces, "run python -m widgets.katex"
    assert "Khan Academy" in (katex.folder() / "LICENSE").read_text(encoding="utf-8")


def test_the_rules_name_no_font_file_and_the_faces_name_only_shipped_woff2():
    rules = (katex.folder() / "katex.css").read_text(encoding="utf-8")
    faces = (katex.folder() / "fonts.css").read_text(encoding="utf-8")
    assert "@font-face" not in rules and "url(" not in rules and ".katex .katex-html" in rules
    assert faces.count("@font-face") == 20
    families = set(re.findall(r"font-family:(KaTeX_\w+)", faces))
    assert {"KaTeX_Main", "KaTeX_Math", "KaTeX_Size1", "KaTeX_AMS"} <= families
    named = katex.font_files(faces)
    assert all(name.startswith("fonts/") and name.endswith(".woff2") for name in named)
    shipped = sorted(f"fonts/{font.name}" for font in (katex.folder() / "fonts").iterdir())
    assert sorted(named) == shipped
    assert all((katex.folder() / name).read_bytes()[:4] == b"wOF2" for name in named)


def test_the_app_serves_each_file_from_its_own_route():
    listed = assets.KaTeXFiles.__css__
    names = ["katex.css", "fonts.css"] + [name for name in katex.font_files((katex.folder() / "fonts.css").read_text())]
    assert sorted(listed) == sorted(f"katex/{name}" for name in names)  # Panel's component route serves these alone
    assert katex.stylesheets()[0] == "components/assets/KaTeXFiles/__css__/katex/katex.css"
    assert katex.FONTS == "components/assets/KaTeXFiles/__css__/katex/fonts.css"
