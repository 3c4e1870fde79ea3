"""The files Feedback Lab reads at run time, shipped inside the package so that an installed wheel has them.

    app.css             the pages' stylesheet (app/serving/server.py)
    page.html           the pages' template: the viewport, the header menu, names for controls Bokeh leaves unnamed (app/serving/server.py)
    thumbnails/         the index's picture of each page, drawn by `feedback-lab thumbnails` (app/pages/thumbnails.py)
    models/embedded/    the embedded language model and its tokenizer (engines/lm/models.py)
    prompts/            the movie-review openings the live run trains and evaluates on (engines/lm/review_corpus.py)
    preferences/        the lab's prompts, the word lists of the gold score g and the bundled
                        preference pairs (engines/lm/prompts.py, engines/lm/preferences.py)
    katex/              KaTeX's stylesheet and fonts, which the pages' equations need offline (widgets/katex.py)

Code finds them through this package, never through a path relative to its own source file: a
source checkout reads the files here, an installed wheel its own copies in site-packages.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def path(*parts: str) -> Path:
    """The file or folder assets/PARTS of the package in use, as a path on disk.

    A path, not a resource reader: transformers' from_pretrained and numpy's load read files by name. pip
    always installs packages as plain files, so the package's folder is a real one.
    """
    return Path(files(__name__).joinpath(*parts))


class KaTeXFiles:
    """The files of katex/ the app serves, at /components/assets/KaTeXFiles/__css__/katex/NAME (widgets/katex.py).

    Panel's component route (panel.io.server.ComponentResourceHandler, in `feedback-lab serve` and `panel serve`
    alike) serves a file relative to a class's module when that class lists it in `__css__`, and no other: here the
    two stylesheets and every font the second names.
    """

    __css__ = ["katex/katex.css", "katex/fonts.css"] + sorted(
        f"katex/fonts/{font.name}" for font in path("katex", "fonts").glob("*.woff2"))
