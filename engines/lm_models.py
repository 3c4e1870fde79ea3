"""Loading the language models of the live run (seed 000 section 6.11): policy, reference, device.

A model is named by one string: `embedded` (the project's own small GPT-2-architecture
model in assets/models/embedded, made by `feedback-lab make-embedded-model`), a folder
holding a Hugging Face causal language model, or a hub id such as `gpt2` or `distilgpt2`.
All three go through the same `from_pretrained` path. A hub model is first looked up in
the local cache; if it is not there and cannot be downloaded (no network, or
HF_HUB_OFFLINE=1), `ModelNotAvailable` says so in one sentence.

Weights stay float32; on CUDA the forward passes run under bf16 autocast (`autocast`),
and every softmax is taken in float32.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from pathlib import Path

import torch

EMBEDDED = "embedded"
EMBEDDED_DIR = Path(__file__).resolve().parent.parent / "assets" / "models" / "embedded"
DEVICES = ("auto", "cpu", "cuda")


class ModelNotAvailable(RuntimeError):
    """A model or reward classifier is neither on this machine nor downloadable now."""


def resolve_device(device: str) -> torch.device:
    """'auto' -> CUDA when a GPU answers, else CPU; 'cpu' and 'cuda' (or 'cuda:N') as given."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available on this machine; use 'cpu' or 'auto'.")
    return torch.device(device)


def autocast(device: torch.device):
    """bf16 autocast on CUDA, nothing on CPU (where float32 is both faster and exact)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def model_source(name: str) -> str:
    """The folder or hub id that `from_pretrained` gets for model `name`."""
    return str(EMBEDDED_DIR) if name == EMBEDDED else name


def _offline() -> bool:
    """True when the Hugging Face libraries are told not to use the network."""
    flags = (os.environ.get(v, "").strip().upper() for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return any(f in ("1", "ON", "YES", "TRUE") for f in flags)


def from_pretrained(loader, name: str, what: str = "model", **kwargs):
    """`loader.from_pretrained` for `name`: local folder or cache first, then a download.

    Raises ModelNotAvailable with one sentence when neither works.
    """
    source = model_source(name)
    if Path(source).is_dir():
        return loader.from_pretrained(source, **kwargs)
    if name == EMBEDDED:
        raise ModelNotAvailable(f"The embedded model is missing from {EMBEDDED_DIR}; run `feedback-lab make-embedded-model` to make it.")
    try:
        return loader.from_pretrained(source, local_files_only=True, **kwargs)
    except (OSError, ValueError):
        pass
    hint = "use 'embedded' or a local folder" if what == "model" else "use the 'vader' reward"
    if _offline():
        raise ModelNotAvailable(f"The {what} '{name}' is not on this machine and cannot be downloaded without network; {hint}.")
    try:
        return loader.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelNotAvailable(f"The {what} '{name}' is not on this machine and could not be downloaded ({reason}); {hint}.") from error


def load_causal_lm(name: str, device: torch.device):
    """(model, tokenizer) for `name`, the model in eval mode (no dropout) on `device`, float32.

    Eval mode matters: the sampled policy and the differentiated policy must be the same
    function (seed 000 section 6.11), and dropout would make them differ.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = from_pretrained(AutoTokenizer, name)
    model = from_pretrained(AutoModelForCausalLM, name, dtype=torch.float32)
    return model.to(device).eval(), tokenizer


def cache_keyword(model) -> str:
    """Name of the key-value-cache argument: `cache` in recent transformers, else `past_key_values`."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def output_cache(out):
    """The key-value cache a forward pass returned, under either name."""
    return out["cache"] if "cache" in out else out["past_key_values"]
