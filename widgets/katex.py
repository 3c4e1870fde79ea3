"""KaTeX's stylesheet and fonts, served by the app itself, so that equations are typeset offline.

Panel bundles KaTeX's script and `katex.min.css` but not the fonts that stylesheet names, and it
links the stylesheet in the page's head only: Bokeh draws each LaTeX pane in a shadow root, which
the head's rules do not reach, so Panel hides KaTeX's typeset HTML there (its `katex.css`) and the
browser shows KaTeX's MathML copy in its own fonts, no KaTeX font ever requested. Here:

    assets/katex/katex.css    KaTeX's rules without its @font-face rules: every LaTeX pane takes them into its
                              shadow root (`stylesheets()`), with a rule that shows KaTeX's HTML again
    assets/katex/fonts.css    the @font-face rules, woff2 only, in the page's head (`FONTS`, app/serving/server.py):
                              Chromium ignores @font-face rules in a shadow root, and the document's apply inside it
    assets/katex/fonts/       KaTeX's woff2 fonts, of the version Panel bundles (`VERSION`), with its licence

Panel's own link to `katex.min.css` is left out of the head (`leave_panels_stylesheet_out`). Both stylesheets and
the fonts are served from Panel's component route
(/components/assets/KaTeXFiles/__css__/katex/..., `assets.KaTeXFiles` lists them), which `feedback-lab serve`
and `panel serve app/serving/server.py` both have, so nothing is fetched from outside. The two stylesheets are
cut from Panel's bundled `katex.min.css` by `split` (`python -m widgets.katex` writes them again);
tests/app/test_katex.py checks they match the KaTeX Panel bundles.
"""

from __future__ import annotations

import re
from pathlib import Path

from panel.io.resources import COMPONENT_PATH, component_resource_path

import assets

VERSION = "0.16.22"
"""KaTeX's version of the fonts and stylesheets in assets/katex/ (Panel's `panel.models.katex.KATEX_VERSION`)."""
FONT_FACE = re.compile(r"@font-face\{[^}]*\}")
SOURCE = re.compile(r"src:[^;}]*")


def bundled_css() -> Path:
    """Panel's bundled copy of KaTeX's stylesheet."""
    from panel.io.resources import BUNDLE_DIR
    from panel.models.katex import KATEX_VERSION

    return BUNDLE_DIR / "katex" / f"katex@{KATEX_VERSION}" / "dist" / "katex.min.css"


def split(css: str) -> tuple[str, str]:
    """KaTeX's minified stylesheet as (its rules without @font-face, its @font-face rules with only the woff2 source,
    one a line). Every browser that runs Bokeh 3 reads woff2, so the woff and ttf copies are left out."""
    faces = []
    for face in FONT_FACE.findall(css):
        name = re.search(r"url\((fonts/[^)]+\.woff2)\)", face).group(1)
        faces.append(SOURCE.sub(f'src:url({name}) format("woff2")', face))
    return FONT_FACE.sub("", css), "\n".join(faces) + "\n"


def font_files(faces: str) -> list[str]:
    """The files the @font-face rules `faces` name, relative to the stylesheet."""
    return re.findall(r"url\(([^)]+)\)", faces)


SHOWN = ".katex span.katex-html { display: inline; }"
"""KaTeX's typeset HTML shown: Panel's `katex.css` hides it (`span.katex-html`), for want of KaTeX's rules in the
shadow root; KaTeX's own rules hide the MathML beside it from sight, not from screen readers."""


def stylesheets() -> list[str]:
    """A LaTeX pane's stylesheets: KaTeX's rules (where the app serves them, relative to the session's page) and
    `SHOWN`."""
    return [component_resource_path(assets.KaTeXFiles, "__css__", "katex/katex.css"), SHOWN]


FONTS = f"{COMPONENT_PATH}assets/KaTeXFiles/__css__/katex/fonts.css"
"""KaTeX's @font-face rules, for a template's `css_files` (which puts them in the page's head, relative to the page)."""


def leave_panels_stylesheet_out() -> None:
    """Leave Panel's link to its bundled `katex.min.css` out of every page's head (the KaTeX model's `__css__`).

    Its rules apply to nothing there (the equations are in shadow roots, which take `stylesheet()`), and its
    @font-face rules name fonts Panel does not ship: beside ours, Chromium fetched them too while ours loaded, three
    404s a face (woff2, woff, ttf), and marked those faces as failed. Panel sets a model's `__css__` the same way
    for its own ipywidgets model. Idempotent."""
    from panel.models.katex import KaTeX

    KaTeX.__css__ = []


def folder() -> Path:
    """assets/katex/: the two stylesheets, the fonts and KaTeX's licence, all shipped in the wheel."""
    return assets.path("katex")


def main() -> None:
    """Write assets/katex/katex.css and fonts.css from Panel's bundled KaTeX stylesheet."""
    rules, faces = split(bundled_css().read_text(encoding="utf-8"))
    (folder() / "katex.css").write_text(rules, encoding="utf-8")
    (folder() / "fonts.css").write_text(faces, encoding="utf-8")


if __name__ == "__main__":
    main()
