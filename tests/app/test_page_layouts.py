"""Every sentence a page's jobs can say reaches the learner: each streaming run's notice (a time limit, a failure,
a wait for the device) is placed in its page once the page's sections are open, and each job's view says a wait and
a failure (engines/snapshots.py) in that notice, never handing them to the page."""

import threading

import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from app.pages import available_pages
from bench.bench_page_build import prompts
from engines.snapshots import Failed, Waiting
from widgets.job_view import JobView
from widgets.streaming import StreamingRun

PAGES = [info for info in available_pages() if info.name != "lab"]
NO_JOBS = {"baselines", "preferences"}
"""Pages that compute every result as the slider moves, with no streamed job."""


def held(obj, kind: type, seen: set[int], depth: int = 0) -> list:
    """The objects of `kind` that `obj` holds, directly or through the app's own objects it holds (a JobView, a curve,
    a sweep)."""
    if id(obj) in seen or depth > 3:
        return []
    seen.add(id(obj))
    if isinstance(obj, kind):
        return [obj]
    if not type(obj).__module__.startswith(("app.", "widgets.")):
        return []
    found = []
    for value in vars(obj).values():
        found += held(value, kind, seen, depth + 1)
    return found


def opened(info):
    """The page of `info` with every section built, and the ids of every part of its layout; closed at the end."""
    # In a document of its own, as a session's page is built: its onload work (a reward-model page's training) waits
    # for a browser that never comes, so this test starts no job on the cluster.
    with set_curdoc(Document()), prompts(False):  # every guarded part shown, as once its question is answered
        page = info.module.page()
        layout = page.__panel__()
        for section in page.param.section.objects if "section" in page.param else ():
            page.section = section  # built on first view
        return page, {id(part) for part in layout.select()}


def close(page) -> None:
    if hasattr(page, "close"):
        page.close()  # the work it started stops, as when a tab closes


@pytest.mark.parametrize("info", PAGES, ids=[info.route for info in PAGES])
def test_every_job_notice_of_a_page_is_in_its_layout(info):
    page, shown = opened(info)
    close(page)
    runs = held(page, StreamingRun, set())
    assert bool(runs) == (info.route not in NO_JOBS), f"/{info.route}: {len(runs)} streamed jobs"
    for run in runs:
        assert id(run.notice) in shown, f"/{info.route}: the notice of the job of {run.apply} is not on the page"


WAIT = "The test job waits for the cpu (place 3 in line)."
FAILURE = "The test job failed: change a setting."


def wait_then_fail(waited: threading.Event, go_on: threading.Event):
    """A job's snapshots: its place in line, said until `go_on`, then its failure."""
    yield Waiting(WAIT)
    waited.wait(0.2)  # past the stream's period, so that the next snapshot is handed over at once
    yield Waiting(WAIT)
    waited.set()
    go_on.wait(10)
    yield Failed(FAILURE)


@pytest.mark.parametrize("info", [i for i in PAGES if i.route not in NO_JOBS], ids=[i.route for i in PAGES if i.route not in NO_JOBS])
def test_every_job_of_a_page_says_its_place_in_line_and_its_failure_in_its_own_alert(info):
    page, shown = opened(info)
    try:
        jobs = held(page, JobView, set())
        assert jobs, f"/{info.route} has no job view"
        for job in jobs:
            handed = []
            job.apply = handed.append  # the page's own drawing: a wait or a failure never reaches it
            waited, go_on = threading.Event(), threading.Event()
            job.start(lambda: wait_then_fail(waited, go_on))
            assert waited.wait(10)
            assert job.notice.visible and job.notice.object == WAIT and job.notice.alert_type == "warning"
            go_on.set()
            job.run.join(10)
            assert job.notice.visible and job.notice.object == FAILURE and job.notice.alert_type == "danger" and job.failed
            assert handed == [] and not job.controls.running and id(job.notice) in shown
            job.fail("")
    finally:
        close(page)
