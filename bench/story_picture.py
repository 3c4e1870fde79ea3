"""The README's picture: a beta = 0 run's replies collapsing beside a beta = 0.05 run's staying English.

Run by hand (about five minutes on a 2-core CPU): `python -m bench.story_picture`. It serves the app
offline, opens the live-run page in Chromium twice, the second time with the page's defaults and the
first with only beta set to 0, presses Start, waits for the run's last step, and takes the newest
readings and replies of each; the two go side by side into docs/screenshots/story.png. The default
run, opened from the room's runs as a learner would, is also the whole page's picture,
docs/screenshots/live_run.png.
"""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from bench.servers import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server
from engines.lm.settings import LMSettings

SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
RUNS = ((0.0, "β = 0: no KL penalty"), (LMSettings().beta, f"β = {LMSettings().beta:g}: the page's default"))
"""Each run's KL coefficient and the caption over its picture."""
COLUMN = 640
"""The width of each run's column in the picture, in CSS pixels."""
RUN_SECONDS = 1200
"""The longest a run may take before the script gives up."""


def finished_run_picture(page, url: str, beta: float, steps: int) -> tuple[bytes, bytes]:
    """Train one run from the live-run page and return pictures of its last readings and its newest replies."""
    page.goto(f"{url}/live-run?beta={beta:g}")
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= {steps}",
                           timeout=RUN_SECONDS * 1000, polling=1000)
    page.locator(".fl-status", has_text="Finished").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)  # the last step's replies are drawn after its metrics
    return page.locator(".fl-metrics").first.screenshot(), page.locator(".fl-samples").first.screenshot()


def side_by_side(page, pictures: list[tuple[str, bytes, bytes]]) -> bytes:
    """One picture: each run's caption over its readings over its replies, the runs side by side."""
    def data(png: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(png).decode()

    columns = "".join(
        f'<div class="run"><h2>{caption}</h2><img src="{data(readings)}"><img src="{data(replies)}"></div>'
        for caption, readings, replies in pictures)
    page.set_content(
        "<style>body{margin:0;font-family:sans-serif;background:white} #story{display:flex;gap:24px;padding:16px;width:max-content}"
        f".run{{display:flex;flex-direction:column;gap:8px;width:{COLUMN}px}} img{{width:100%}} h2{{margin:0;font-size:18px}}</style>"
        f'<div id="story">{columns}</div>')
    return page.locator("#story").screenshot()


def whole_page_picture(browser, url: str, run: str) -> bytes:
    """The live-run page showing the finished run `run`, as its link opens it, in a desktop window."""
    page = browser.new_page(viewport={"width": 1280, "height": 1500})  # the page scrolls inside its main area
    page.goto(f"{url}/live-run?run={run}")
    page.locator(".fl-status", has_text="Finished").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)  # the plots draw after the status line
    return page.screenshot()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SCREENSHOTS, help="the folder the two pictures go to")
    args = parser.parse_args()
    steps = LMSettings().steps
    runs = Path(tempfile.mkdtemp(prefix="fl-story-"))
    server = start_server(env={"FEEDBACK_LAB_RUNS": str(runs)})
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # A narrow window, so each run's replies wrap as on a tablet; twice the pixels, so the text stays sharp.
            page = browser.new_page(viewport={"width": COLUMN + 60, "height": 900}, device_scale_factor=2)
            pictures = [(caption, *finished_run_picture(page, server.url, beta, steps)) for beta, caption in RUNS]
            (args.out / "story.png").write_bytes(side_by_side(page, pictures))
            default_run = max(runs.iterdir(), key=lambda folder: folder.name)  # named by its start time: the second
            (args.out / "live_run.png").write_bytes(whole_page_picture(browser, server.url, default_run.name))
            browser.close()
    finally:
        stop_server(server)
    print(f"wrote {args.out / 'story.png'} and {args.out / 'live_run.png'}")


if __name__ == "__main__":
    main()
