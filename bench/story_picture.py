"""The README's picture: a beta = 0 run's replies collapsing beside a beta = 0.05 run's staying English.

Run by hand (about five minutes on a 2-core CPU): `python -m bench.story_picture`. It serves the app
offline, opens the live-run page in Chromium twice, the second time with the page's defaults and the
first with only beta set to 0, presses Start, waits for the run's last step, and takes the newest
readings and replies of each; the two go side by side into docs/screenshots/story.png. The default
run, opened from the room's runs as a learner would, is also the whole page's picture,
docs/screenshots/live_run.png.

`--model smollm2-135m` does the same for the packaged model on its recipe, into story_smollm2-135m.png;
`--runs DIR` serves a runs folder that already holds both runs (as `feedback-lab train-lm --model NAME
--beta B` writes them) and opens them from the room's runs instead of training them again.
"""

from __future__ import annotations

import argparse
import base64
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from app.jobs.runs import list_runs
from bench.servers import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server
from engines.lm.settings import EMBEDDED, LMSettings

SCREENSHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
def story_runs(model: str) -> tuple[tuple[float, str], ...]:
    """Each run's KL coefficient and the caption over its picture: none, and the model's default."""
    beta = LMSettings.of_model(model).beta
    return (0.0, "β = 0: no KL penalty"), (beta, f"β = {beta:g}: the page's default")
COLUMN = 640
"""The width of each run's column in the picture, in CSS pixels."""
RUN_SECONDS = 1200
"""The longest a run may take before the script gives up."""


def finished_run(runs: Path, model: str, beta: float) -> str | None:
    """The name of a finished run of `model` with KL coefficient `beta` in the folder `runs`, if there is one."""
    for run in list_runs(runs):
        settings = run.config.get("settings", {})
        if run.finished and settings.get("model") == model and settings.get("beta") == beta:
            return run.id
    return None


def finished_run_picture(page, url: str, model: str, beta: float, steps: int, run: str | None) -> tuple[bytes, bytes]:
    """Train one run from the live-run page (or open the finished `run`) and return pictures of its last readings and
    its newest replies."""
    if run is None:
        page.goto(f"{url}/live-run?model={model}&beta={beta:g}")
        page.get_by_role("button", name="Start", exact=True).click()
        page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= {steps}",
                               timeout=RUN_SECONDS * 1000, polling=1000)
    else:
        page.goto(f"{url}/live-run?run={run}")
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
    parser.add_argument("--model", default=EMBEDDED, help="the model of both runs (default: embedded)")
    parser.add_argument("--runs", type=Path, default=None, help="a runs folder holding both runs, finished (default: train them)")
    args = parser.parse_args()
    steps = LMSettings().steps
    runs = args.runs or Path(tempfile.mkdtemp(prefix="fl-story-"))
    server = start_server(env={"FEEDBACK_LAB_RUNS": str(runs)})
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            # A narrow window, so each run's replies wrap as on a tablet; twice the pixels, so the text stays sharp.
            page = browser.new_page(viewport={"width": COLUMN + 60, "height": 900}, device_scale_factor=2)
            pictures = [(caption, *finished_run_picture(page, server.url, args.model, beta, steps, finished_run(runs, args.model, beta)))
                        for beta, caption in story_runs(args.model)]
            if args.model != EMBEDDED:
                (args.out / f"story_{args.model}.png").write_bytes(side_by_side(page, pictures))
                browser.close()
                return
            (args.out / "story.png").write_bytes(side_by_side(page, pictures))
            default_run = max(runs.iterdir(), key=lambda folder: folder.name)  # named by its start time: the second
            (args.out / "live_run.png").write_bytes(whole_page_picture(browser, server.url, default_run.name))
            browser.close()
    finally:
        stop_server(server)
    print(f"wrote its pictures to {args.out}")


if __name__ == "__main__":
    main()
