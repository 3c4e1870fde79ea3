"""The KL page's sentence under the live figure, written out in full."""

from app.pages.kl.text import runs_summary_html


def test_without_a_frontier_the_runs_are_counted_and_those_out_of_view_said():
    points = {"kl": [0.0, 1.0, 18.0], "reward": [0.4, 0.9, 2.8], "frontier_reward": [float("nan")] * 3}
    assert runs_summary_html(points, None, 11.4) == (
        '<p class="fl-lm-summary">3 evaluations drawn. 1 lie right of the view (up to 18.0 nats): zoom out to see them.</p>')
    assert runs_summary_html(points, None, 20.0) == '<p class="fl-lm-summary">3 evaluations drawn.</p>'


def test_no_runs_says_where_to_start_them():
    empty = {"kl": [], "reward": [], "frontier_reward": []}
    assert runs_summary_html(empty, None, 3.8) == ('<p class="fl-lm-summary">No run\'s evaluations to draw: start runs on '
                                                   "the live-run page with this model and reward.</p>")
