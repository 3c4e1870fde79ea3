"""Every sentence a page's jobs can say reaches the learner: each streaming run's notice (a time limit, a failure,
a wait for the device) is placed in its page once the page's sections are open."""

import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from app.pages import available_pages
from bench.bench_page_build import prompts
from widgets.streaming import StreamingRun

PAGES = [info for info in available_pages() if info.name != "lab"]
NO_JOBS = {"baselines", "preferences"}
"""Pages that compute every result as the slider moves, with no streamed job."""


def streaming_runs(obj, seen: set[int], depth: int = 0) -> list[StreamingRun]:
    """The StreamingRuns `obj` holds, directly or through the app's own objects it holds (a JobView, a curve, a sweep)."""
    if id(obj) in seen or depth > 3:
        return []
    seen.add(id(obj))
    if isinstance(obj, StreamingRun):
        return [obj]
    if not type(obj).__module__.startswith(("app.", "widgets.")):
        return []
    found = []
    for value in vars(obj).values():
        found += streaming_runs(value, seen, depth + 1)
    return found


@pytest.mark.parametrize("info", PAGES, ids=[info.route for info in PAGES])
def test_every_job_notice_of_a_page_is_in_its_layout(info):
    # In a document of its own, as a session's page is built: its onload work (a reward-model page's training) waits
    # for a browser that never comes, so this test starts no job on the cluster.
    with set_curdoc(Document()), prompts(False):  # every guarded part shown, as once its question is answered
        page = info.module.page()
        try:
            layout = page.__panel__()
            for section in page.param.section.objects if "section" in page.param else ():
                page.section = section  # built on first view
            shown = {id(part) for part in layout.select()}
        finally:
            if hasattr(page, "close"):
                page.close()  # the work it started stops, as when a tab closes
    runs = streaming_runs(page, set())
    assert bool(runs) == (info.route not in NO_JOBS), f"/{info.route}: {len(runs)} streamed jobs"
    for run in runs:
        assert id(run.notice) in shown, f"/{info.route}: the notice of the job of {run.apply} is not on the page"
