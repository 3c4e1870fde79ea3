"""Where each page's first slider and first plot are when it opens, and pictures of the pages, on the screens learners bring.

    python -m bench.page_layout [--url http://localhost:5006] [--out DIR] [--pages ROUTE ...]
    python -m bench.page_layout --pages live-run      # the live run after Start: its step, reward curve and first reply

For each page at each screen (a 1366 x 768 laptop, a 1920 x 1080 projector, a 390 x 844 phone), with guided prompts
off, in Debian's Chromium: the window-relative top and bottom of the page's first slider and of its first plot as the
page opens, and on the phone once the slider is scrolled to the top of the screen; with `--out`, a picture of the
window as it opens (NAME_WIDTHxHEIGHT.png). Without `--url` it starts the app server of this checkout. The figures
are what tests/browser/test_in_view.py asserts; this prints them for a checkout that has no such test (main, before).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from app.pages import available_pages
from bench.servers import CHROMIUM, CHROMIUM_ARGS, start_server, stop_server

SCREENS = {
    "laptop": {"viewport": {"width": 1366, "height": 768}},
    "projector": {"viewport": {"width": 1920, "height": 1080}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 3},
}
"""The screens, in CSS pixels; the phone is an iPhone 13's, with its pixel ratio and touch, as tests/browser/test_phone.py."""
PROMPTS_OFF = "try { localStorage.setItem('feedback-lab.guide', JSON.stringify({prompts: false, answers: {}})) } catch (e) {}"

FIRST_SLIDER_AND_PLOT = """
(scroll) => {
  // The page's elements in document order, inside Bokeh's shadow roots too.
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(document);
  const shown = (el) => el.checkVisibility({ visibilityProperty: true, opacityProperty: true }) && el.getBoundingClientRect().width > 0;
  const handle = all.find((el) => el.matches('[role=slider]') && shown(el));
  const plot = all.find((el) => el.classList.contains('bk-Figure') && shown(el));
  if (!handle || !plot) return null;
  const slider = handle.getRootNode().host;  // the whole slider: its title, value and track
  if (scroll) slider.scrollIntoView({ block: 'start' });
  const box = (el) => { const r = el.getBoundingClientRect(); return [Math.round(r.top), Math.round(r.bottom)] };
  const s = box(slider), p = box(plot);
  return { slider: s, plot: p, height: window.innerHeight,
           inView: s[0] >= 0 && s[1] <= window.innerHeight && p[0] >= 0 && p[1] <= window.innerHeight };
}
"""
"""The window-relative [top, bottom] of the first shown slider (its whole widget) and of the first shown plot, and
whether both are entirely within the window; with `scroll`, after scrolling the slider to the top first."""

RUN_IN_VIEW = """
() => {
  const all = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el); if (el.shadowRoot) walk(el.shadowRoot) } };
  walk(document);
  const first = (test) => all.find((el) => test(el) && el.checkVisibility() && el.getBoundingClientRect().width > 0);
  const parts = { step: first((el) => el.matches('.fl-metric[data-key=step]')), curve: first((el) => el.classList.contains('bk-Figure')),
                  reply: first((el) => el.matches('.fl-sample')) };
  return Object.fromEntries(Object.entries(parts).map(([name, el]) => {
    const box = el && el.getBoundingClientRect();
    return [name, box ? [Math.round(box.top), Math.round(box.bottom)] : null];
  }));
}
"""
"""The window-relative [top, bottom] of the step counter, the reward curve and the first of the newest replies."""
LIVE_RUN_QUERY = "?steps=400&prompts=2&replies=2&T=8&eval_every=20&eval_prompts=2&eval_replies=2&beta=0"
"""A live run small enough for seconds a step on two shared cores (and long enough not to finish before Stop)."""

ANALYTIC = ("baselines", "bandit", "token-world", "toy-target", "kl", "preferences", "reward-model")


def measure(page, url: str, scroll: bool) -> dict | None:
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    page.locator(".bk-Canvas").first.wait_for(state="attached", timeout=30_000)
    page.locator("[role=switch]:not([disabled])").first.wait_for(state="attached", timeout=30_000)  # the guide state is in
    page.wait_for_timeout(1500)  # the parts behind the questions and the laid-out rows arrive after the first drawing
    return page.evaluate(FIRST_SLIDER_AND_PLOT, scroll)


def measure_live_run(page, url: str, picture: Path | None) -> dict:
    """The live run after Start (a run of LIVE_RUN_QUERY), once its first step is drawn and its settings folded: RUN_IN_VIEW's
    boxes, and a picture of the window at `picture`; the run is stopped afterwards."""
    page.goto(url + LIVE_RUN_QUERY)
    start, stop = (page.locator("button", has_text=re.compile(f"^{label}$")).first for label in ("Start", "Stop"))
    start.click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=120_000)
    page.locator(".fl-sample").first.wait_for(state="attached")
    page.wait_for_timeout(500)  # the settings' fold closes and the curve moves up
    found = page.evaluate(RUN_IN_VIEW)
    if picture is not None:
        page.screenshot(path=str(picture))
    stop.click()
    expect(start).to_be_enabled(timeout=30_000)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="a running app server (default: start this checkout's)")
    parser.add_argument("--out", type=Path, default=None, help="write a picture of each page on each screen here")
    parser.add_argument("--pages", nargs="*", default=list(ANALYTIC), help="routes (default: the analytic pages)")
    parser.add_argument("--screens", nargs="*", default=list(SCREENS), choices=list(SCREENS))
    args = parser.parse_args(argv)
    server = None if args.url else start_server()
    url = args.url or server.url
    known = {info.route for info in available_pages()}
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for screen in args.screens:
                context = browser.new_context(**SCREENS[screen])
                context.add_init_script(PROMPTS_OFF)
                page = context.new_page()
                for route in args.pages:
                    if route == "live-run":
                        size = SCREENS[screen]["viewport"]
                        picture = args.out / f"live_run_started_{size['width']}x{size['height']}.png" if args.out else None
                        print(f"{screen:9} /live-run after Start: {measure_live_run(page, f'{url}/live-run', picture)}", flush=True)
                        continue
                    if route not in known:
                        continue
                    found = measure(page, f"{url}/{route}", scroll=False)
                    if args.out is not None:
                        size = SCREENS[screen]["viewport"]
                        page.screenshot(path=str(args.out / f"{route.replace('-', '_')}_{size['width']}x{size['height']}.png"))
                    line = f"{screen:9} /{route:13} open: {found}"
                    if screen == "phone":
                        line += f"   slider at top: {page.evaluate(FIRST_SLIDER_AND_PLOT, True)}"
                    print(line, flush=True)
                context.close()
            browser.close()
    finally:
        if server is not None:
            stop_server(server)


if __name__ == "__main__":
    main()
