"""Browser tests: one app server for the whole run, Chromium from the system, screenshots.

Fixtures for every page's browser tests (helpers are fixtures too, so test modules
import nothing from here):
    server_url       base URL of a `python -m app.cli serve` started on a free localhost port
                     (offline, with an empty Hugging Face cache, writing runs to `runs_dir`)
    runs_dir         the test server's runs folder, a temporary one
    teacher_token    the test server's teacher token (its room view is /room?token=...)
    console_errors   console errors and page errors of the `page` fixture, filled as it runs
    open_page        open_page(route, query="", prompts=False, drawn=DRAWN) loads a page, waits until Bokeh has
                     drawn it (an element matching `drawn`: a plot, the index or the lab's listing) and the
                     page has read the browser's stored guide state; with prompts=False the browser starts
                     with guided prompts off, so every guarded panel is shown
                     (tests/browser/test_guided.py tests the prompts themselves)
    slider_handle    slider_handle(page, label): the handle of the slider titled `label...`
    slider_value     slider_value(page, label): the value its title shows, as text
    shown_text       shown_text(locator): the element's text, whitespace collapsed
    save_screenshot  save_screenshot(page, name) writes SCREENSHOTS/NAME.png: build/screenshots/, which git ignores,
                     or docs/screenshots/ under `make screenshots` (FEEDBACK_LAB_SCREENSHOTS)
    screenshot_path  screenshot_path(name): where the picture NAME goes, for a test that takes it as the screen shows it
    wait_for_guide   wait_for_guide(page): waits until the page has read the browser's guide state
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.servers import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("FEEDBACK_LAB_SCREENSHOTS", ROOT / "build" / "screenshots"))
"""Where the tests' pictures go: an ignored folder, so that a test run leaves the repository as it found it; `make
screenshots` points it at docs/screenshots/ to retake the committed pictures."""


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(item.fspath).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    """The test server's runs folder (FEEDBACK_LAB_RUNS): runs started in tests never land in runs/."""
    return tmp_path_factory.mktemp("runs")


TEACHER_TOKEN = "the-browser-tests-teacher"
"""The test server's teacher token (FEEDBACK_LAB_TEACHER_TOKEN)."""


@pytest.fixture(scope="session")
def teacher_token() -> str:
    return TEACHER_TOKEN


@pytest.fixture(scope="session")
def server_url(runs_dir):
    """One app server for the browser tests, on runs_dir, with no network and an empty Hugging Face cache
    (a hub model must be refused with one sentence); its stderr goes to a file, never to an unread pipe."""
    server = start_server(env={"FEEDBACK_LAB_RUNS": str(runs_dir), "FEEDBACK_LAB_TEACHER_TOKEN": TEACHER_TOKEN})
    try:
        yield server.url
    finally:
        stop_server(server)


@pytest.fixture
def console_errors(page):
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


PROMPTS_OFF = """
try {
  if (localStorage.getItem('feedback-lab.guide') === null) {
    localStorage.setItem('feedback-lab.guide', JSON.stringify({prompts: false, answers: {}}))
  }
} catch (error) {}
"""
"""Run before a page's scripts: a browser that has switched the guided prompts off (unless it has a state already)."""


def _wait_for_guide(page) -> None:
    """Wait until the header's switch is enabled: the server has the browser's stored guide state."""
    page.locator("[role=switch]:not([disabled])").first.wait_for(state="attached", timeout=20_000)


@pytest.fixture(scope="session")
def wait_for_guide():
    return _wait_for_guide


DRAWN = ".bk-Canvas, .fl-index, .fl-lab"
"""What a drawn page shows: a plot, or, on the index and the lab page, which have none, their listing."""


@pytest.fixture
def open_page(page, server_url, console_errors):
    prompts_off = False

    def go(route: str, query: str = "", prompts: bool = False, drawn: str = DRAWN):
        nonlocal prompts_off
        if not prompts and not prompts_off:
            page.add_init_script(PROMPTS_OFF)
            prompts_off = True
        page.goto(f"{server_url}/{route}{query}")
        # The document has rendered once Bokeh has its models and the first canvas (or, with prompts on, the
        # first question: the plots behind it are built once it is answered) is drawn; the index and the lab
        # page, which have no plot, once their listing is.
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
        page.locator(f"{drawn}, .fl-predict").first.wait_for(state="attached", timeout=20_000)
        _wait_for_guide(page)
        if not prompts:  # the parts behind the questions arrive once the browser's stored guide has reached the server
            page.locator(drawn).first.wait_for(state="attached", timeout=30_000)
        return page

    return go


def _shown_text(locator) -> str:
    return re.sub(r"\s+", " ", locator.inner_text()).strip()


def _slider_handle(page, label: str):
    """The handle of the slider whose title starts with `label` (Bokeh renders noUiSlider)."""
    slider = page.locator(".bk-input-group", has=page.locator(".bk-slider-title", has_text=label))
    return slider.locator(".noUi-handle").first


def _slider_value(page, label: str) -> str:
    """The value shown in the slider's title, e.g. "0.5" of "Baseline b: 0.5"."""
    title = page.locator(".bk-slider-title", has_text=label).first
    return _shown_text(title).split(":")[-1].strip()


def _screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{name}.png"


def _save_screenshot(page, name: str) -> Path:
    path = _screenshot_path(name)
    # The template scrolls inside its main area, so a tall viewport shows the whole page.
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 1500})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    return path


@pytest.fixture(scope="session")
def shown_text():
    return _shown_text


@pytest.fixture(scope="session")
def slider_handle():
    return _slider_handle


@pytest.fixture(scope="session")
def slider_value():
    return _slider_value


@pytest.fixture(scope="session")
def save_screenshot():
    return _save_screenshot


@pytest.fixture(scope="session")
def screenshot_path():
    return _screenshot_path


@pytest.fixture
def learner_tabs(browser, server_url):
    contexts = []

    def open_tabs(n: int, route: str, card: str) -> list:
        from playwright.sync_api import expect

        tabs = []
        for _ in range(n):
            contexts.append(browser.new_context())
            tab = contexts[-1].new_page()
            tab.goto(f"{server_url}/{route}")
            _wait_for_guide(tab)
            expect(tab.locator(card)).to_contain_text("counts, anonymously, in the room's tally")
            tabs.append(tab)
        return tabs

    yield open_tabs
    for context in contexts:  # a test may have closed one already (a learner who leaves): closing again does nothing
        context.close()
