"""A displayed equation's parts (widgets/equation_card.py): cut where the page may break a line, nowhere else."""

from widgets import katex
from widgets.equation_card import EQUATION_CSS, breakable, equation

GAP = "&emsp;&emsp;"


def test_parts_are_cut_at_a_top_level_quad_or_qquad_only():
    assert breakable(r"a = 1, \qquad b = \frac{x \quad y}{2},\quad c") == (
        rf"$\displaystyle a = 1,${GAP}$\displaystyle b = \frac{{x \quad y}}{{2}},${GAP}$\displaystyle c$")
    assert breakable(r"\quadratic = 1") == r"$\displaystyle \quadratic = 1$"  # a longer command is not a separator


def test_a_gathered_environments_rows_are_lines_and_an_escaped_brace_opens_nothing():
    assert breakable(r"\begin{gathered}a, \qquad b \\ c = \{1\} \qquad d\end{gathered}") == (
        rf"$\displaystyle a,${GAP}$\displaystyle b$<br>$\displaystyle c = \{{1\}}${GAP}$\displaystyle d$")


def test_the_pane_centres_its_lines_and_scrolls_a_part_wider_than_the_page():
    pane = equation(r"x = 1 \qquad y = 2")
    assert pane.object == rf"$\displaystyle x = 1${GAP}$\displaystyle y = 2$"
    assert pane.stylesheets == [*katex.stylesheets(), EQUATION_CSS]  # KaTeX's rules, served by the app, then its own
    assert pane.sizing_mode == "stretch_width" and "text-align: center" in EQUATION_CSS and "overflow-x: auto" in EQUATION_CSS
