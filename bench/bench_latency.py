"""Slider to redrawn plot, in Chromium: p50 and p95 per page against its goal.

    python -m bench.bench_latency [--moves 30]

starts `python -m app.cli serve` on a free port, opens every page present, and moves
each of its sliders `--moves` times with the keyboard (one step per key press), after
one warm-up move whose latency is printed apart (the session's first update pays
one-off costs). A move's latency runs from the key press (a capturing keydown
listener) to the first animation frame after the server's new data reached a
ColumnDataSource of the page, the frame in which Bokeh repaints the plot.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

from app.pages import available_pages
from bench.servers import CHROMIUM, CHROMIUM_ARGS, free_port, wait_until_up

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = {"bandit": 400, "token-world": 400, "toy-target": 400}
"""p95 goals of the pages with heavier analytic panels; every other page: 150 ms."""
QUERY = {"reward-model": "?pairs=300&steps=60"}
"""Lighter starting states where the default work (2,000 pairs, 200 steps) outlasts the bench's waits."""

INSTRUMENT = """() => {
  window.__lat = []; window.__t0 = null;
  window.addEventListener('keydown', () => { window.__t0 = performance.now(); }, true);
  const doc = Bokeh.documents[0];
  const models = doc._all_models ? [...doc._all_models.values()] : [...doc.all_models];
  let sources = 0;
  for (const m of models) {
    if (m.constructor.__name__ !== 'ColumnDataSource') continue;
    sources += 1;
    m.properties.data.change.connect(() => {
      if (window.__t0 === null) return;
      const t0 = window.__t0; window.__t0 = null;
      requestAnimationFrame(() => window.__lat.push(performance.now() - t0));
    });
  }
  return sources;
}"""


def start_server() -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://localhost:{port}"
    try:
        wait_until_up(url + "/", process)
    except RuntimeError:
        process.kill()
        raise
    return process, url


def press(page, handle, step: int) -> None:
    """Step `step` of the slider: right and left in turn, away from an end of its range;
    returns once the page has recorded the move's latency."""
    now, low, high = (float(handle.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemin", "aria-valuemax"))
    right = now <= low or (step % 2 == 0 and now < high)
    recorded = page.evaluate("() => window.__lat.length")
    handle.press("ArrowRight" if right else "ArrowLeft")
    page.wait_for_function(f"() => window.__lat.length > {recorded}", timeout=10_000)


def measure_page(page, url: str, moves: int) -> tuple[dict[str, list[float]], list[float]]:
    """Latencies in ms for every slider of the page, by slider title, and the warm-up moves'."""
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.locator(".bk-Canvas").first.wait_for(state="attached", timeout=30_000)
    page.wait_for_timeout(500)
    page.evaluate(INSTRUMENT)
    results, warm_up = {}, []
    sliders = page.locator(".bk-input-group", has=page.locator(".bk-slider-title"))
    for k in range(sliders.count()):
        slider = sliders.nth(k)
        if not slider.is_visible():
            continue
        title = slider.locator(".bk-slider-title").inner_text().split(":")[0]
        handle = slider.locator(".noUi-handle").first
        handle.focus()
        page.evaluate("() => { window.__lat = []; }")
        press(page, handle, 0)
        warm_up += page.evaluate("() => window.__lat")
        page.evaluate("() => { window.__lat = []; }")
        for step in range(1, moves + 1):
            press(page, handle, step)
        results[title] = page.evaluate("() => window.__lat")
    return results, warm_up


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=30, help="key presses per slider (default: 30)")
    args = parser.parse_args(argv)
    process, url = start_server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            # guided prompts off, so no prediction card hides a slider
            page.add_init_script("localStorage.setItem('feedback-lab.guide', JSON.stringify({prompts: false, answers: {}}))")
            for info in available_pages():
                per_slider, warm_up = measure_page(page, f"{url}/{info.route}{QUERY.get(info.route, '')}", args.moves)
                every = np.concatenate([np.asarray(v) for v in per_slider.values()]) if per_slider else np.array([])
                if every.size == 0:
                    print(f"{info.route}: no sliders")
                    continue
                detail = ", ".join(f"{title} p95 {np.percentile(v, 95):.0f} ms" for title, v in per_slider.items())
                goal = GOAL_MS.get(info.route, 150)
                verdict = "meets" if np.percentile(every, 95) < goal else "misses"
                print(
                    f"{info.route}: slider to redrawn plot over {every.size} moves: p50 {np.percentile(every, 50):.0f} ms, "
                    f"p95 {np.percentile(every, 95):.0f} ms ({verdict} the {goal} ms goal; {detail}; "
                    f"warm-up moves {', '.join(f'{w:.0f}' for w in warm_up)} ms)"
                )
            browser.close()
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main()
