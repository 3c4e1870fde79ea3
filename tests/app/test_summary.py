"""A page's summary (widgets/summary.py): one paragraph, rewritten in place."""

from widgets.summary import Summary


def test_a_summary_is_one_paragraph_rewritten_in_place():
    summary = Summary()
    summary.show("At b = 4.0: the estimate is <strong>4.90</strong>.")
    assert summary.object == '<p class="fl-summary">At b = 4.0: the estimate is <strong>4.90</strong>.</p>'
    assert summary.sizing_mode == "stretch_width" and summary.styles == {"font-size": "1.1em"}
