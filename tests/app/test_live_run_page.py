"""The live-run page without a browser: a tiny run of the embedded model on this test session's local Dask cluster,
its files, the device's line, the runs list, a learned reward with its gold score, a hub model downloaded with a
progress bar (from a fake hub), the server's limits."""

import io
import math
import shutil
import statistics
import threading
import time
import zipfile
from types import SimpleNamespace

import huggingface_hub
import numpy as np
import pytest

from app.cli import main as cli
from app.jobs.cluster import current as current_cluster
from app.jobs.model_jobs import LiveState, live_snapshots
from app.jobs.runs import REWARD_MODELS, RunWriter, read_run
from app.jobs.shared_runs import Watching
from app.pages.live_run import LiveRunPage, page
from app.pages.live_run import evaluation as run_evaluation
from app.pages.live_run.evaluation import RunEvaluation
from app.pages.live_run.replies import RATIO_PALETTE, ratio_colours, ratio_scale_html, sample_html
from app.pages.live_run.status import status_html
from app.pages.live_run.text import ELSEWHERE, JOINED, watching_sentence
from app.serving.limits import LIMITED
from engines.lm.models import EMBEDDED_DIR
from engines.lm.results import EvalResult, Sample, StepResult, worked_example
from engines.lm.settings import GPU_RECIPES, RECIPES, LMSettings, default_lr
from engines.snapshots import Waiting

TINY = {"steps": "3", "prompts": "2", "replies": "2", "T": "8", "eval_every": "2", "eval_prompts": "2", "eval_replies": "2"}
"""A run of a second or two on two shared cores: evaluations at steps 0, 2 and 3."""


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def tiny_page(tmp_path, **query):
    return LiveRunPage(query=TINY | query, runs_dir=tmp_path)


def test_controls_start_from_the_engine_defaults(offer):
    offer(models=("embedded", "gpt2", "distilgpt2"))
    pg = page(query={})
    d = LMSettings()
    assert (pg.model, pg.reward, pg.beta, pg.steps, pg.prompts, pg.replies, pg.T, pg.seed) == (
        d.model, d.reward, d.beta, d.steps, d.prompts, d.replies, d.T, d.seed)
    assert pg.lr == default_lr(d.model) and pg.device == "auto" and not pg.notice.visible
    assert pg.settings() == LMSettings(lr=default_lr(d.model))
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
        ({"model": "a\x01b"}, "model", "not one of"),
    ],
)
def test_bad_link_values_fall_back_with_a_notice(query, bad, why):
    pg = page(query=query | {"T": "12"})
    assert pg.notice.visible and why in pg.notice.object
    assert getattr(pg, bad) == LiveRunPage.param[bad].default and pg.T == 12


@pytest.mark.server
def test_a_tiny_run_shows_what_its_files_hold(tmp_path, monkeypatch):
    pg = tiny_page(tmp_path, beta="0.05")
    pg.start()
    pg.run_job.job.run.join(120)
    assert pg.phase == "idle" and not pg.run_job.job.notice.visible
    (folder,) = tmp_path.iterdir()
    run = read_run(folder)
    assert run.finished and [e["step"] for e in run.evals] == [0, 2, 3]
    assert run.config["settings"]["T"] == 8 and run.config["learning_rate"] == default_lr("embedded")
    # The curves are the files' numbers, step by step.
    for key in ("step", "reward", "p_positive", "kl", "entropy"):
        assert list(pg.display.curves.steps.data[key]) == [m[key] for m in run.metrics]
    for key in ("step", "reward", "kl_exact", "distinct_1", "distinct_2"):
        assert list(pg.display.curves.evals.data[key]) == [e[key] for e in run.evals]
    assert pg.display.metrics.values()["reward"] == pytest.approx(run.metrics[-1]["reward"])
    # The newest replies: step 3's, as samples.jsonl has them, each token shaded by its log-ratio.
    sample = run.samples[-1]["samples"][0]
    for token, ratio in zip(sample["tokens"], sample["log_ratio"]):
        background, _ = ratio_colours(ratio)
        assert f"background:{background}" in pg.display.samples.object
    # The evaluation table and the seed's [eval] lines.
    state = pg.run_job.state
    assert pg.display.evaluation.lines.object.count("[eval ") == 3 and "[eval end] 2 held-out prompts x 2: reward" in pg.display.evaluation.lines.object
    assert pg.display.evaluation.lines.object.startswith('<pre class="fl-lines">[eval start] 2 held-out prompts x 2: reward')
    assert pg.display.evaluation.table.object.count("<tr>") == 4 and f"{run.evals[-1]['distinct_1']:.3f}" in pg.display.evaluation.table.object
    # The worked example of any held-out reply of the latest evaluation, as the engine computes it.
    assert len(pg.display.evaluation.choice.options) == 4
    pg.display.evaluation.choice.value = 3
    ex = worked_example(state.eval_results[-1], 3)
    assert f"{ex.G[0]:+.3f}" in pg.display.evaluation.example.object and f"{ex.log_ratio[-1]:+.3f}" in pg.display.evaluation.example.object
    assert ex.G[0] == pytest.approx(ex.R - 0.05 * ex.log_ratio.sum(), abs=1e-5)
    assert "= G_0" in pg.display.evaluation.example.object
    # Each evaluation shown computes the worked example once: the chosen reply kept, or the first one chosen.
    computed = []
    monkeypatch.setattr(run_evaluation, "worked_example", lambda result, i: computed.append(i) or worked_example(result, i))
    pg.display.evaluation.show(run.evals, state.eval_results, state.settings)
    fresh = RunEvaluation()
    fresh.show(run.evals, state.eval_results, state.settings)
    assert computed == [3, 0] and pg.display.evaluation.choice.value == 3 and fresh.choice.value == 0
    # The run is listed, finished.
    assert list(pg.runs_list.table.value["run"]) == [folder.name]
    assert list(pg.runs_list.table.value["status"]) == ["finished"]
    assert "Finished: all 3 steps" in pg.display.status.object
    # Before a new tab's first run, its status line says how fast the newest run of its model trained here: measured.
    seconds = statistics.median(m["step_time"] for m in run.metrics)
    assert f"The newest run of embedded on this server took {seconds:.2f} s a step (2 prompts" in tiny_page(tmp_path).display.status.object
    assert "newest run" not in LiveRunPage(query=TINY, runs_dir=tmp_path / "none").display.status.object


def test_a_waiting_run_says_its_place_once_known_and_never_none():
    settings = LMSettings()
    waiting = LiveState("queued", settings, position=2, device="cpu", starts_in=151)
    (said,) = live_snapshots(iter([waiting]))
    assert isinstance(said, Waiting) and said.snapshot is waiting
    assert said.sentence.startswith("Your run waits for the cpu (place 2 in line): ")
    assert "It should start in about 2 min 30 s." in said.sentence
    (before,) = live_snapshots(iter([LiveState("queued", settings, position=None, device="cpu")]))
    assert "(place" not in before.sentence and "None" not in before.sentence and "start in about" not in before.sentence
    assert "Waiting for the cpu" in status_html(waiting, "a run") and "in line" not in status_html(waiting, "a run")


def test_the_line_above_the_status_says_how_the_learner_came_to_the_run():
    def said(how, **more):
        return watching_sentence(Watching(lambda: iter(()), LMSettings(), how, **more))

    assert said("started") == "" and said("joined") == JOINED
    assert said("files", run_id="beta<0>") == "The run beta&lt;0&gt; is shown from its files."  # a folder's name, escaped
    assert said("opened", elsewhere=True) == (
        "You are watching a run of the room as it trains. Pause holds your view only; Stop leaves it. " + ELSEWHERE)


@pytest.mark.server
def test_queue_pause_resume_stop(tmp_path):
    """A paused run keeps the device; a second tab's run waits in line and leaves it when its tab closes;
    the first run resumes, is stopped, and keeps every step it did."""
    cluster = current_cluster()
    a, b = tiny_page(tmp_path, steps="50"), tiny_page(tmp_path)
    try:
        a.start()
        wait_for(lambda: a.phase == "running")
        a.run_job.pause()
        wait_for(lambda: a.phase == "paused")
        assert a.run_job.job.pause_buttons[0].disabled and not a.run_job.job.pause_buttons[1].disabled and "Paused after step" in a.display.status.object
        b.start()
        # Its place is known once the scheduler has handed the job to the worker (until then it waits without a number).
        wait_for(lambda: b.phase == "queued" and "(place 1 in line)" in b.run_job.job.notice.object)
        wait_for(lambda: "1 waiting" in a.display.queue_line.object)  # every page sees the line
        b.close()  # the tab of the waiting run closes: it leaves the line and writes nothing
        b.run_job.job.run.join(10)
        wait_for(lambda: cluster.overview()[0].waiting == ())
        assert len(list(tmp_path.iterdir())) == 1
        a.run_job.resume()
        done = len(a.run_job.state.metrics)
        wait_for(lambda: len(a.run_job.state.metrics) >= done + 2)
        a.run_job.stop()
        a.run_job.job.run.join(30)
        run = read_run(next(tmp_path.iterdir()))
        assert not run.finished and [m["step"] for m in run.metrics] == [m["step"] for m in a.run_job.state.metrics]
        assert list(a.display.curves.steps.data["step"]) == [m["step"] for m in run.metrics]  # shown = on disk
        assert list(a.runs_list.table.value["status"]) == ["interrupted"]
        wait_for(lambda: cluster.overview() == [])
        assert "Stopped after step" in a.display.status.object and a.phase == "idle"
    finally:
        for pg in (a, b):  # a paused run left behind would hold the device for every later test
            pg.close()


@pytest.mark.parametrize(
    "query,sentence",
    [
        ({"model": "feedback-lab-tests/no-such-model"},
         "The model &#x27;feedback-lab-tests/no-such-model&#x27; is not on this machine and cannot be downloaded "
         "without network; use &#x27;embedded&#x27; or a local folder."),
        ({"reward": "lvwerra/distilbert-imdb"},
         "The reward classifier &#x27;lvwerra/distilbert-imdb&#x27; is not on this machine and cannot be downloaded "
         "without network; use the &#x27;vader&#x27; reward."),
    ],
)
@pytest.mark.server
def test_a_hub_model_or_reward_offline_gives_one_sentence_and_the_page_stays_usable(tmp_path, monkeypatch, offer, query, sentence):
    offer(models=("embedded", "feedback-lab-tests/no-such-model"), rewards=("lvwerra/distilbert-imdb",))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("engines.lm.models.in_cache", lambda name: False)  # whatever this machine's cache holds
    pg = tiny_page(tmp_path, **query)
    pg.start()
    pg.run_job.job.run.join(60)
    assert pg.run_job.job.notice.visible and pg.run_job.job.notice.object == sentence and not pg.display.download_bar.visible
    assert pg.phase == "idle" and not pg.run_job.job.controls.start_button.disabled and list(tmp_path.iterdir()) == []


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
    assert list(pg.runs_list.table.value["status"]) == ["finished", "interrupted", "finished"]
    assert list(pg.runs_list.table.value["β"]) == [0.0, 0.05, 0.2]
    pg.runs_list.table.selection = [0, 1, 2]  # the seed's runs 1 to 3
    assert pg.display.curves.overlay_steps.data["reward"] == [[1, 2, 3], [1, 1.5], [1, 1.2, 1.3]]
    assert pg.display.curves.overlay_steps.data["xs"] == [[1, 2, 3], [1, 2], [1, 2, 3]]
    assert pg.display.curves.overlay_evals.data["distinct_1"] == [[0.5], [0.5], [0.5]]
    assert len(set(pg.display.curves.overlay_steps.data["colour"])) == 3 and "run-beta0.05" in pg.display.curves.legend.object
    with zipfile.ZipFile(io.BytesIO(pg.runs_list.zip().read())) as archive:
        names = set(archive.namelist())
    assert {f"{f.name}/{n}" for f in folders for n in ("config.json", "metrics.jsonl", "samples.jsonl", "eval.jsonl")} == names
    pg.runs_list.table.selection = [1]
    with zipfile.ZipFile(io.BytesIO(pg.runs_list.zip().read())) as archive:
        assert {n.split("/")[0] for n in archive.namelist()} == {"run-beta0.05"}


def test_token_shading_is_a_symmetric_diverging_scale():
    assert ratio_colours(0.0)[0] == RATIO_PALETTE[5]  # white: the policy likes the token as the reference does
    assert ratio_colours(11.7)[0] == RATIO_PALETTE[-1] and ratio_colours(-11.7)[0] == RATIO_PALETTE[0]
    for x in (0.5, 1.6, 3.0):
        k_plus = RATIO_PALETTE.index(ratio_colours(x)[0])
        k_minus = RATIO_PALETTE.index(ratio_colours(-x)[0])
        assert k_plus + k_minus == len(RATIO_PALETTE) - 1 and k_plus > 5


def test_a_token_s_number_is_reached_by_a_tap_or_the_keyboard_as_by_a_mouse():
    shown = sample_html(Sample(prompt="The film", tokens=(" was", " fine"), log_ratio=(0.25, -1.5), reward=0.4))
    assert shown.count('tabindex="0"') == 2  # focusable: a tap or Tab focuses it, and its number is drawn
    assert 'title="log π − log π_ref = +0.250 nats" data-ratio="log π − log π_ref = +0.250 nats"' in shown
    assert 'data-ratio="log π − log π_ref = -1.500 nats"' in shown
    legend = ratio_scale_html()
    assert "tap it" in legend and "Hover a token" not in legend


def test_sessions_do_not_share_state(tmp_path):
    first, second = tiny_page(tmp_path), tiny_page(tmp_path)
    first.beta = 0.2
    assert second.beta == 0.05 and first.display.curves.steps is not second.display.curves.steps


# ----------------------------------------------------------------------------- a learned reward and its gold score


@pytest.fixture(scope="module")
def reward_model(tmp_path_factory):
    """A small reward model saved where the reward-models page saves them: RUNS/reward-models/rm.pt (seconds to make)."""
    root = tmp_path_factory.mktemp("runs")
    pairs, model = root / "pairs.npz", root / REWARD_MODELS / "rm.pt"
    model.parent.mkdir()
    assert cli(["make-pairs", "--pairs", "24", "--T", "6", "--device", "cpu", "--out", str(pairs)]) == 0
    assert cli(["train-reward", "--pairs", str(pairs), "--out", str(model), "--steps", "3", "--d-model", "8",
                "--layers", "1", "--heads", "1", "--json"]) == 0
    return model


def test_a_saved_reward_model_is_offered_by_file_name_and_follows_the_runs_folder(tmp_path, reward_model):
    pg = tiny_page(tmp_path)
    assert "learned: rm.pt" not in pg.inputs["reward"].options  # nothing saved in this runs folder
    (tmp_path / REWARD_MODELS).mkdir()
    shutil.copy(reward_model, tmp_path / REWARD_MODELS / "rm.pt")
    pg.refresh_runs()
    options = pg.inputs["reward"].options
    assert options["learned: rm.pt"] == f"reward-model:{tmp_path / REWARD_MODELS / 'rm.pt'}"
    pg.reward = options["learned: rm.pt"]
    assert pg.settings().prompt_set == "feelings" and pg.display.goodhart.visible and "gold" in pg.display.curves.reward.yaxis.axis_label
    pg.section = "curves"  # the other curves, made when first shown, name the reward in force too
    assert "gold" in pg.display.curves.others[-1].yaxis.axis_label
    (tmp_path / REWARD_MODELS / "rm.pt").unlink()
    pg.refresh_runs()  # gone from the folder: gone from the list, and the reward falls back to the default
    assert pg.reward == "vader" and "learned: rm.pt" not in pg.inputs["reward"].options
    assert not pg.display.goodhart.visible and pg.settings().prompt_set == "reviews"


@pytest.mark.server
def test_a_run_against_a_learned_reward_draws_its_gold_score_over_steps_and_over_kl(reward_model):
    root = reward_model.parent.parent
    pg = LiveRunPage(query=TINY, runs_dir=root)
    pg.reward = f"reward-model:{reward_model}"
    pg.start()
    pg.run_job.job.run.join(120)
    assert pg.phase == "idle" and not pg.run_job.job.notice.visible, pg.run_job.job.notice.object
    (folder,) = [f for f in root.iterdir() if (f / "config.json").is_file()]
    run = read_run(folder)
    assert run.config["settings"]["prompt_set"] == "feelings" and run.finished
    # The curves hold the files' gold scores beside the learned reward, step by step and at each evaluation.
    assert list(pg.display.curves.steps.data["gold"]) == [m["gold"] for m in run.metrics] and all(map(math.isfinite, pg.display.curves.steps.data["gold"]))
    assert list(pg.display.curves.evals.data["gold"]) == [e["gold"] for e in run.evals]
    assert list(pg.display.curves.steps.data["reward"]) == [m["reward"] for m in run.metrics]
    # Drawn: dashed over the steps, and over the KL (the held-out evaluations' exact KL on x).
    gold = pg.display.curves.reward.select_one({"name": "gold"})
    assert gold.data_source is pg.display.curves.steps and gold.glyph.y == "gold" and gold.glyph.line_dash == [6]
    pg.section = "curves"  # opened after the run: its figures draw what the sources already hold
    over_kl = pg.display.curves.others[-1].select_one({"name": "gold_over_kl"})
    assert over_kl.data_source is pg.display.curves.evals and (over_kl.glyph.x, over_kl.glyph.y) == ("kl_exact", "gold")
    assert "<th>gold</th>" in pg.display.evaluation.table.object and "dashed: the gold score" in pg.display.curves.legend.object
    assert list(pg.runs_list.table.value["gold"]) == [round(run.evals[-1]["gold"], 2)]
    # The run overlaid later draws its gold too.
    pg.runs_list.table.selection = [0]
    assert pg.display.curves.overlay_steps.data["gold"] == [[m["gold"] for m in run.metrics]]
    assert pg.display.curves.overlay_evals.data["gold"] == [[e["gold"] for e in run.evals]]
    assert pg.display.curves.overlay_evals.data["kl_xs"] == [[e["kl_exact"] for e in run.evals]]


def test_an_overlaid_run_without_a_gold_score_draws_none(tmp_path):
    fake_run(tmp_path, 0.0, [1, 2])
    pg = tiny_page(tmp_path)
    pg.runs_list.table.selection = [0]
    assert all(math.isnan(g) for g in pg.display.curves.overlay_steps.data["gold"][0]) and len(pg.display.curves.overlay_steps.data["gold"][0]) == 2
    assert "dashed" not in pg.display.curves.legend.object and math.isnan(pg.runs_list.table.value["gold"][0])


# ----------------------------------------------------------------------------- a hub model that must be downloaded


class FakeHub:
    """The hub client's two calls, answered from the embedded model's folder: sizes, then a download that reports
    its bytes through `tqdm_class` in two halves (as snapshot_download's byte bar does) and waits at half way."""

    def __init__(self, tmp_path):
        self.files = {p.name: p.stat().st_size for p in EMBEDDED_DIR.iterdir() if p.is_file()}
        self.folder, self.halfway, self.go_on, self.asked = tmp_path / "snapshot", threading.Event(), threading.Event(), None

    def model_info(self, repo_id, files_metadata=False, **kwargs):
        assert files_metadata
        siblings = [SimpleNamespace(rfilename=n, size=s) for n, s in self.files.items()]
        siblings += [SimpleNamespace(rfilename="tf_model.h5", size=10**9), SimpleNamespace(rfilename="onnx/model.onnx", size=10**9)]
        return SimpleNamespace(siblings=siblings)

    def snapshot_download(self, repo_id, allow_patterns=None, tqdm_class=None, **kwargs):
        self.asked = sorted(allow_patterns)
        total = sum(self.files[n] for n in allow_patterns)
        files, progress = tqdm_class(total=len(allow_patterns)), tqdm_class(total=0, initial=0, unit="B", unit_scale=True)
        progress.total = total
        progress.update(total // 2)
        self.halfway.set()
        assert self.go_on.wait(60)
        shutil.copytree(EMBEDDED_DIR, self.folder, ignore=shutil.ignore_patterns("README.md"))
        progress.update(total - total // 2)
        files.update(len(allow_patterns))
        return str(self.folder)


@pytest.mark.server
def test_a_hub_model_not_on_this_machine_shows_its_size_and_a_progress_bar_then_runs(tmp_path, monkeypatch, offer):
    offer(models=("embedded", "feedback-lab-tests/tiny-gpt2"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    hub = FakeHub(tmp_path)
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda self, repo_id, **kw: hub.model_info(repo_id, **kw))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", hub.snapshot_download)
    runs = tmp_path / "runs"
    pg = tiny_page(runs, model="feedback-lab-tests/tiny-gpt2")
    pg.start()
    assert hub.halfway.wait(60)
    wait_for(lambda: pg.phase == "downloading" and pg.display.download_bar.value > 0)
    size = sum(hub.files[n] for n in hub.asked)
    assert hub.asked == sorted(n for n in hub.files if n != "README.md")  # weights, config, tokenizer; not README, TF or ONNX
    assert f"feedback-lab-tests/tiny-gpt2: {size / 1e6:.1f} MB to download" in pg.display.status.object
    assert pg.display.download_bar.visible and pg.display.download_bar.value == pg.display.download_bar.max * (size // 2) // size
    hub.go_on.set()
    pg.run_job.job.run.join(120)
    assert pg.phase == "idle" and not pg.run_job.job.notice.visible and not pg.display.download_bar.visible
    (folder,) = runs.iterdir()
    assert read_run(folder).finished and read_run(folder).config["settings"]["model"] == "feedback-lab-tests/tiny-gpt2"


@pytest.mark.server
def test_a_hub_id_the_hub_does_not_have_is_said_in_one_sentence(tmp_path, monkeypatch, offer):
    offer(models=("embedded", "feedback-lab-tests/unknown"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def missing(self, repo_id, **kwargs):
        response = SimpleNamespace(headers={}, status_code=404, request=None)  # what the error reads of the answer
        raise huggingface_hub.errors.RepositoryNotFoundError("404 Client Error: Repository Not Found", response=response)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", missing)
    pg = tiny_page(tmp_path, model="feedback-lab-tests/unknown")
    pg.start()
    pg.run_job.job.run.join(60)
    assert pg.run_job.job.notice.object == ("The hub has no model &#x27;feedback-lab-tests/unknown&#x27; (or it is private); "
                               "use &#x27;embedded&#x27; or a local folder.")
    assert pg.phase == "idle" and not pg.run_job.job.controls.start_button.disabled and list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- the server's limits


@pytest.mark.parametrize("name", list(LIMITED))
def test_a_link_asking_for_more_than_the_server_allows_is_set_to_the_limit_with_one_sentence(tmp_path, monkeypatch, name):
    field, what = LIMITED[name]
    monkeypatch.setenv(f"FEEDBACK_LAB_{field.upper()}", "3")
    pg = tiny_page(tmp_path, **{name: "999999"})
    assert getattr(pg, name) == 3 and pg.param[name].bounds[1] == 3
    assert pg.notice.visible and pg.notice.object == f"- This server allows at most 3 {what}; the run was set to 3."
    with pytest.raises(ValueError):
        setattr(pg, name, 4)  # the setting itself never holds more than the limit
    box = pg.inputs[name]
    box.value = 999  # typed above the limit: put back to it, with the same sentence
    assert (box.value, getattr(pg, name)) == (3, 3) and pg.run_job.job.notice.object == f"This server allows at most 3 {what}; the run was set to 3."


@pytest.mark.server
def test_defaults_above_a_limit_start_at_the_limit_and_runs_within_it_start(tmp_path, monkeypatch):
    monkeypatch.setenv("FEEDBACK_LAB_MAX_STEPS", "2")
    monkeypatch.setenv("FEEDBACK_LAB_MAX_REPLY_TOKENS", "8")
    pg = page(query={}, runs_dir=tmp_path)
    assert (pg.steps, pg.eval_every, pg.T) == (2, 2, 8) and not pg.notice.visible
    pg = tiny_page(tmp_path, steps="2")
    pg.start()
    pg.run_job.job.run.join(120)
    assert not pg.run_job.job.notice.visible and read_run(next(tmp_path.iterdir())).finished


def test_a_run_beyond_a_limit_is_never_started(tmp_path, monkeypatch):
    """A limit below what a run needs (the leave-one-out baseline takes two replies) refuses the run in one sentence."""
    monkeypatch.setenv("FEEDBACK_LAB_MAX_REPLIES", "1")
    pg = tiny_page(tmp_path)
    pg.start()
    assert pg.run_job.job.notice.object == "This server allows at most 1 replies per prompt; this run asks for 2, so it was not started."
    assert pg.phase == "idle" and list(tmp_path.iterdir()) == []


@pytest.mark.server
def test_a_number_box_emptied_or_below_its_range_is_put_back_with_one_sentence(tmp_path):
    pg = tiny_page(tmp_path)
    steps, beta = pg.inputs["steps"], pg.inputs["beta"]
    steps.value = None
    assert (steps.value, pg.steps) == (3, 3) and pg.run_job.job.notice.object == "Training steps needs a number; it stays 3."
    beta.value = -1.0
    assert (beta.value, pg.beta) == (0.0, 0.0) and pg.run_job.job.notice.object == "KL coefficient β is at least 0.0; it was set to 0.0."
    steps.value = 2  # a value in range goes to the setting, and a link set elsewhere shows in the box
    pg.replies = 3
    assert pg.steps == 2 and pg.inputs["replies"].value == 3
    pg.start()
    pg.run_job.job.run.join(120)
    assert not pg.run_job.job.notice.visible and read_run(next(tmp_path.iterdir())).config["settings"]["steps"] == 2


def test_the_sections_below_the_reward_curve_are_built_when_first_opened(tmp_path):
    pg = tiny_page(tmp_path)
    pg.__panel__()  # the page drawn, as a visit draws it
    assert pg.sections.opened == {"samples"} and pg.display.curves.others == []  # a visit builds the newest replies only
    pg.section = "curves"
    assert len(pg.display.curves.others) == 5 and pg.sections.tabs.active == 1
    linked = tiny_page(tmp_path, section="runs")  # a link opens its section
    linked.__panel__()
    assert linked.sections.opened == {"runs"} and linked.sections.tabs.active == 3


@pytest.mark.server
def test_the_advantage_is_a_control_in_the_link_the_config_and_the_runs_table(tmp_path):
    assert page(query={}).advantage == LMSettings().advantage == "loo"  # the seed's leave-one-out by default
    pg = tiny_page(tmp_path, advantage="grpo")
    assert pg.advantage == "grpo" and pg.settings().advantage == "grpo" and not pg.notice.visible
    assert pg.inputs["advantage"].value == "grpo"
    pg.start()
    pg.run_job.job.run.join(120)
    (folder,) = tmp_path.iterdir()
    assert folder.name.endswith("-beta0.05-grpo") and read_run(folder).config["settings"]["advantage"] == "grpo"
    assert list(pg.runs_list.table.value["advantage"]) == ["grpo"]
    bad = page(query={"advantage": "ppo"})
    assert bad.notice.visible and "not one of" in bad.notice.object and bad.advantage == "loo"


def test_the_settings_of_a_models_recipe_follow_the_model_chosen_unless_set_by_hand(offer, tmp_path):
    offer(models=("embedded", "smollm2-135m"))
    pg = LiveRunPage(query={}, runs_dir=tmp_path)
    pg.prompts = 8  # by hand
    pg.model = "smollm2-135m"
    recipe = RECIPES["smollm2-135m"]
    assert (pg.lr, pg.beta, pg.replies, pg.T, pg.trained_blocks) == (recipe.lr, recipe.beta, recipe.replies, recipe.T, recipe.trained_blocks)
    assert pg.prompts == 8 and pg.settings().trained_blocks == recipe.trained_blocks
    pg.device = "cuda"  # a GPU's recipe: the seed's batch, every weight
    assert (pg.replies, pg.T, pg.trained_blocks) == (GPU_RECIPES["smollm2-135m"].replies, 24, 0)
    pg.device, pg.model = "cpu", "embedded"
    assert (pg.lr, pg.beta, pg.T, pg.trained_blocks) == (default_lr("embedded"), LMSettings().beta, LMSettings().T, 0)
    linked = LiveRunPage(query={"model": "smollm2-135m", "T": "20"}, runs_dir=tmp_path)
    assert linked.T == 20 and linked.trained_blocks == recipe.trained_blocks  # a link's own values stay
