"""The live-run page without a browser: a tiny run of the embedded model, its files, the queue, the runs list."""

import io
import time
import zipfile

import numpy as np
import pytest

from app.pages.live_run import DEVICE_CHOICES, RATIO_PALETTE, LiveRunPage, eval_lines, page, ratio_colours
from app.run_queue import MODELS, RunQueue
from app.runs import RunWriter, read_run
from engines.lm_reinforce import EvalResult, LMSettings, Sample, StepResult, default_lr, worked_example

TINY = {"steps": "3", "prompts": "2", "replies": "2", "T": "8", "eval_every": "2", "eval_prompts": "2", "eval_replies": "2"}
"""A run of a second or two on two shared cores: evaluations at steps 0, 2 and 3."""


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def tiny_page(tmp_path, queue=None, **query):
    return LiveRunPage(query=TINY | query, runs_dir=tmp_path, queue=queue or RunQueue(), models=MODELS)


def test_controls_start_from_the_engine_defaults():
    pg = page(query={})
    d = LMSettings()
    assert (pg.model, pg.reward, pg.beta, pg.steps, pg.prompts, pg.replies, pg.T, pg.seed) == (
        d.model, d.reward, d.beta, d.steps, d.prompts, d.replies, d.T, d.seed)
    assert pg.lr == default_lr(d.model) and pg.device == "auto" and not pg.notice.visible
    assert pg.settings() == LMSettings(lr=default_lr(d.model))
    assert "cuda" not in DEVICE_CHOICES or __import__("torch").cuda.is_available()
    pg.model = "gpt2"  # the learning rate follows the model's default...
    assert pg.lr == default_lr("gpt2")
    pg.lr = 1e-3
    pg.model = "distilgpt2"  # ...unless set by hand
    assert pg.lr == 1e-3


@pytest.mark.parametrize(
    "query,bad,why",
    [
        ({"steps": "abc"}, "steps", "not a number"),
        ({"beta": "-1"}, "beta", "outside the range"),
        ({"replies": "1"}, "replies", "outside the range"),
        ({"reward": "nope"}, "reward", "not one of"),
        ({"model": "a\x01b"}, "model", "not of the form"),
    ],
)
def test_bad_link_values_fall_back_with_a_notice(query, bad, why):
    pg = page(query=query | {"T": "12"})
    assert pg.notice.visible and why in pg.notice.object
    assert getattr(pg, bad) == LiveRunPage.param[bad].default and pg.T == 12


def test_a_tiny_run_shows_what_its_files_hold(tmp_path):
    pg = tiny_page(tmp_path, beta="0.05")
    pg.start()
    pg.runner.join(120)
    assert pg.phase == "idle" and not pg.error.visible
    (folder,) = tmp_path.iterdir()
    run = read_run(folder)
    assert run.finished and [e["step"] for e in run.evals] == [0, 2, 3]
    assert run.config["settings"]["T"] == 8 and run.config["learning_rate"] == default_lr("embedded")
    # The curves are the files' numbers, step by step.
    for key in ("step", "reward", "p_positive", "kl", "entropy"):
        assert list(pg.steps_source.data[key]) == [m[key] for m in run.metrics]
    for key in ("step", "reward", "kl_exact", "distinct_1", "distinct_2"):
        assert list(pg.evals_source.data[key]) == [e[key] for e in run.evals]
    assert pg.metrics.values()["reward"] == pytest.approx(run.metrics[-1]["reward"])
    # The newest replies: step 3's, as samples.jsonl has them, each token shaded by its log-ratio.
    sample = run.samples[-1]["samples"][0]
    for token, ratio in zip(sample["tokens"], sample["log_ratio"]):
        background, _ = ratio_colours(ratio)
        assert f"background:{background}" in pg.samples.object
    # The evaluation table and the seed's [eval] lines.
    state = pg._state
    assert pg.eval_text.object.count("[eval ") == 3 and "[eval end] 2 held-out prompts x 2: reward" in pg.eval_text.object
    assert eval_lines(state.eval_results, state.settings).splitlines()[0].startswith("[eval start]")
    assert pg.eval_table.object.count("<tr>") == 4 and f"{run.evals[-1]['distinct_1']:.3f}" in pg.eval_table.object
    # The worked example of any held-out reply of the latest evaluation, as the engine computes it.
    assert len(pg.example_choice.options) == 4
    pg.example_choice.value = 3
    ex = worked_example(state.eval_results[-1], 3)
    assert f"{ex.G[0]:+.3f}" in pg.example.object and f"{ex.log_ratio[-1]:+.3f}" in pg.example.object
    assert ex.G[0] == pytest.approx(ex.R - 0.05 * ex.log_ratio.sum(), abs=1e-5)
    assert "= G_0" in pg.example.object
    # The run is listed, finished.
    assert list(pg.runs_table.value["run"]) == [folder.name]
    assert list(pg.runs_table.value["status"]) == ["finished"]
    assert "Finished: all 3 steps" in pg.status.object


def test_queue_pause_resume_stop(tmp_path):
    """A paused run keeps the device; a second tab's run waits in line and leaves it when its tab closes;
    the first run resumes, is stopped, and keeps every step it did."""
    queue = RunQueue()
    a, b = tiny_page(tmp_path, queue, steps="50"), tiny_page(tmp_path, queue)
    a.start()
    wait_for(lambda: a.phase == "running")
    a.pause()
    wait_for(lambda: a.phase == "paused")
    assert a.pause_button.disabled and not a.resume_button.disabled and "Paused after step" in a.status.object
    b.start()
    wait_for(lambda: b.phase == "queued")
    assert "number 1 in line" in b.status.object
    assert "1 waiting" in a.queue_line.object  # every page sees the queue
    b.close()  # the tab of the waiting run closes: it leaves the line and writes nothing
    b.runner.join(10)
    assert queue.overview()[0].waiting == () and len(list(tmp_path.iterdir())) == 1
    a.resume()
    done = len(a._state.metrics)
    wait_for(lambda: len(a._state.metrics) >= done + 2)
    a.stop()
    a.runner.join(30)
    run = read_run(next(tmp_path.iterdir()))
    assert not run.finished and [m["step"] for m in run.metrics] == [m["step"] for m in a._state.metrics]
    assert list(a.steps_source.data["step"]) == [m["step"] for m in run.metrics]  # shown = on disk
    assert list(a.runs_table.value["status"]) == ["interrupted"] and queue.overview() == []
    assert "Stopped after step" in a.status.object and a.phase == "idle"


def test_a_hub_model_offline_gives_one_sentence_and_the_page_stays_usable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pg = tiny_page(tmp_path, model="feedback-lab-tests/no-such-model")
    pg.start()
    pg.runner.join(60)
    assert pg.error.visible and pg.error.object == (
        "The model &#x27;feedback-lab-tests/no-such-model&#x27; is not on this machine and cannot be downloaded "
        "without network; use &#x27;embedded&#x27; or a local folder."
    )
    assert pg.phase == "idle" and not pg.controls.start_button.disabled and list(tmp_path.iterdir()) == []


def test_a_refused_setting_is_said_at_once(tmp_path):
    pg = tiny_page(tmp_path)
    pg.model = "  "
    pg.start()
    assert pg.error.visible and "model must name a model" in pg.error.object and pg.phase == "idle"


def fake_run(root, beta, rewards):
    """A run folder written by the real RunWriter from hand-made results (no model needed)."""
    settings = LMSettings(beta=beta, steps=3)
    folder = root / f"run-beta{beta:g}"
    sample = Sample("A prompt", (" good", " film"), (0.5, -0.5), 1.0)
    ev = EvalResult(step=0, reward=0.1, p_positive=0.52, kl_exact=0.0, kl=0.0, entropy=0.8, ref_perplexity=2.0,
                    distinct_1=0.5, distinct_2=0.9, beta=beta, prompts=("A prompt",), replies=(" good film",),
                    tokens=((" good", " film"),), logp=np.array([[-1.0, -2.0]]), ref_logp=np.array([[-1.5, -1.5]]), R=np.array([1.0]))
    with RunWriter(folder, {"settings": {"beta": beta, "steps": settings.steps, "model": "embedded", "reward": "vader"}}) as writer:
        writer.write(ev)
        for step, r in enumerate(rewards, 1):
            writer.write(StepResult(step=step, reward=r, p_positive=0.5, kl=beta, entropy=0.7, grad_norm=1.0, loss=0.0,
                                    step_time=0.1, samples=(sample,)))
    return folder


def test_earlier_runs_overlay_the_curves_and_download(tmp_path):
    folders = [fake_run(tmp_path, beta, rewards) for beta, rewards in ((0.0, [1, 2, 3]), (0.05, [1, 1.5]), (0.2, [1, 1.2, 1.3]))]
    pg = tiny_page(tmp_path)
    assert list(pg.runs_table.value["status"]) == ["finished", "interrupted", "finished"]
    assert list(pg.runs_table.value["β"]) == [0.0, 0.05, 0.2]
    pg.runs_table.selection = [0, 1, 2]  # the seed's runs 1 to 3
    assert pg.overlay_steps.data["reward"] == [[1, 2, 3], [1, 1.5], [1, 1.2, 1.3]]
    assert pg.overlay_steps.data["xs"] == [[1, 2, 3], [1, 2], [1, 2, 3]]
    assert pg.overlay_evals.data["distinct_1"] == [[0.5], [0.5], [0.5]]
    assert len(set(pg.overlay_steps.data["colour"])) == 3 and "run-beta0.05" in pg.legend.object
    with zipfile.ZipFile(io.BytesIO(pg._download().read())) as archive:
        names = set(archive.namelist())
    assert {f"{f.name}/{n}" for f in folders for n in ("config.json", "metrics.jsonl", "samples.jsonl", "eval.jsonl")} == names
    pg.runs_table.selection = [1]
    with zipfile.ZipFile(io.BytesIO(pg._download().read())) as archive:
        assert {n.split("/")[0] for n in archive.namelist()} == {"run-beta0.05"}


def test_token_shading_is_a_symmetric_diverging_scale():
    assert ratio_colours(0.0)[0] == RATIO_PALETTE[5]  # white: the policy likes the token as the reference does
    assert ratio_colours(11.7)[0] == RATIO_PALETTE[-1] and ratio_colours(-11.7)[0] == RATIO_PALETTE[0]
    for x in (0.5, 1.6, 3.0):
        k_plus = RATIO_PALETTE.index(ratio_colours(x)[0])
        k_minus = RATIO_PALETTE.index(ratio_colours(-x)[0])
        assert k_plus + k_minus == len(RATIO_PALETTE) - 1 and k_plus > 5


def test_sessions_do_not_share_state(tmp_path):
    first, second = tiny_page(tmp_path), tiny_page(tmp_path)
    first.beta = 0.2
    assert second.beta == 0.05 and first.steps_source is not second.steps_source
