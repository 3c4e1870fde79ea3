"""Sizing and fetching a hub model before it loads: which files, how many bytes, the progress reported, the refusals;
the device 'auto' picks."""

from types import SimpleNamespace

import huggingface_hub
import pytest
import torch

from engines.lm.models import (
    EMBEDDED_DIR,
    Download,
    ModelNotAvailable,
    download_size,
    fetch,
    hub_files,
    progress_bar_class,
    resolve_device,
)

GPT2_FILES = [("model.safetensors", 548_105_171), ("pytorch_model.bin", 548_118_077), ("tf_model.h5", 497_933_648),
              ("onnx/decoder_model.onnx", 653_665_842), ("config.json", 665), ("generation_config.json", 124),
              ("merges.txt", 456_318), ("vocab.json", 1_042_301), ("tokenizer.json", 1_355_256), ("README.md", 8_092),
              ("64-8bits.tflite", 125_162_496), ("flax_model.msgpack", 497_764_120)]
"""gpt2's files on the hub, with their sizes in bytes."""


def test_the_files_fetched_are_configs_tokenizer_and_one_kind_of_weights():
    chosen = dict(hub_files(GPT2_FILES))
    assert set(chosen) == {"model.safetensors", "config.json", "generation_config.json", "merges.txt", "vocab.json", "tokenizer.json"}
    assert round(sum(chosen.values()) / 1e6) == 551  # the weights' 548 MB and the tokenizer's 3 MB
    without_safetensors = [f for f in GPT2_FILES if not f[0].endswith(".safetensors")]
    assert "pytorch_model.bin" in dict(hub_files(without_safetensors))
    assert hub_files([("README.md", 1), ("tf_model.h5", 2)]) == ()


def test_nothing_to_download_for_the_embedded_model_or_a_folder():
    assert download_size("embedded") is None and download_size(str(EMBEDDED_DIR)) is None


def test_offline_a_hub_id_is_refused_in_one_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailable) as error:
        download_size("feedback-lab-tests/not-cached")
    assert str(error.value) == ("The model 'feedback-lab-tests/not-cached' is not on this machine and cannot be downloaded "
                                "without network; use 'embedded' or a local folder.")


def test_without_a_route_to_the_hub_the_sentence_gives_the_reason(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def unreachable(self, repo_id, **kwargs):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    with pytest.raises(ModelNotAvailable) as error:
        download_size("feedback-lab-tests/far-away", "reward classifier")
    assert str(error.value) == ("The reward classifier 'feedback-lab-tests/far-away' is not on this machine and could not be "
                                "downloaded (Name or service not known); use the 'vader' reward.")


def test_the_size_comes_from_the_hub_and_the_progress_from_the_download(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    siblings = [SimpleNamespace(rfilename=n, size=s) for n, s in GPT2_FILES]
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", lambda self, repo_id, files_metadata=False, **kw: SimpleNamespace(siblings=siblings if files_metadata else None))
    download = download_size("feedback-lab-tests/gpt2-copy")
    assert download == Download("feedback-lab-tests/gpt2-copy", "model", hub_files(GPT2_FILES))
    assert download.size == sum(s for _, s in hub_files(GPT2_FILES))

    def snapshot(repo_id, allow_patterns, tqdm_class):
        # As the hub client does: a bar of files, a bar of bytes whose total grows as files start, bytes in pieces.
        files, received = tqdm_class(total=len(allow_patterns)), tqdm_class(total=0, initial=0, unit="B", unit_scale=True)
        for name in allow_patterns:
            size = dict(GPT2_FILES)[name]
            received.total += size
            received.update(size // 2)
            received.update(size - size // 2)
            files.update(1)
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    reports = []
    assert fetch(download, progress=lambda done, total: reports.append((done, total))) == str(tmp_path)
    assert reports[-1] == (download.size, download.size) and all(t == download.size for _, t in reports)
    assert [d for d, _ in reports] == sorted(d for d, _ in reports)  # never backwards


def test_a_client_that_counts_only_files_still_moves_the_bar():
    reports = []
    bar = progress_bar_class(lambda done, total: reports.append(done), 1000)(total=4)
    bar.update(1)
    bar.update(3)
    assert reports == [250, 1000]


def test_a_failed_download_is_one_sentence(monkeypatch):
    def broken(repo_id, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", broken)
    with pytest.raises(ModelNotAvailable) as error:
        fetch(Download("gpt2", "model", (("config.json", 665),)))
    assert str(error.value) == ("The model 'gpt2' is not on this machine and could not be downloaded (No space left on device); "
                                "use 'embedded' or a local folder.")


@pytest.mark.parametrize("cuda,mps,auto", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_auto_picks_cuda_then_mps_then_the_cpu(monkeypatch, cuda, mps, auto):
    """Neither a GPU nor Apple silicon is on this machine: the availability checks are replaced."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert resolve_device("auto") == torch.device(auto)
    if mps:
        assert resolve_device("mps") == torch.device("mps")
    else:
        with pytest.raises(ValueError, match="device 'mps' was asked for but Apple's Metal GPU is not available"):
            resolve_device("mps")


@pytest.mark.server
def test_transformers_classes_imported_by_several_threads_at_once_all_arrive():
    """A worker's runs that start together load their models on several threads; in a fresh process each must get
    transformers' classes (its lazy module, imported by two threads at once, can refuse the second)."""
    import subprocess
    import sys

    script = (
        "import threading\n"
        "from engines.lm.models import transformers_classes\n"
        "got = []\n"
        "threads = [threading.Thread(target=lambda: got.append(transformers_classes('AutoModelForCausalLM', 'AutoTokenizer')))"
        " for _ in range(6)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "assert len(got) == 6 and all(c[0].__name__ == 'AutoModelForCausalLM' for c in got), got\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
