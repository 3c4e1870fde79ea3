"""Training the top blocks on a frozen trunk (engines/lm/frozen_trunk.py): what trains, what is shared, and that the
shortcuts compute the very numbers of the plain passes, on tiny GPT-2 and Llama models."""

import numpy as np
import pytest
import torch

from engines.lm.frozen_trunk import (
    TrunkCapture,
    blocks_of,
    reference_logits,
    reference_model,
    train_top_blocks,
    trainable_copy,
)
from engines.lm.reinforce import LMRun
from engines.lm.sampling import reply_logits, sample_with_logits, token_logp
from engines.lm.settings import LMSettings
from tests.engines.lm.tiny_models import EOS


def tiny_llama(vocab=16, seed=0, layers=4):
    """A randomly initialised model of SmolLM2's architecture (Llama: rotary positions, grouped keys, tied head)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True, eos_token_id=EOS)
    return LlamaForCausalLM(config).eval()


def tiny_gpt2_stack(layers=3):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=12, n_positions=40, n_embd=8, n_layer=layers, n_head=2, eos_token_id=EOS)
    return GPT2LMHeadModel(config).eval()


MODELS = {"gpt2": tiny_gpt2_stack, "llama": tiny_llama}


@pytest.mark.parametrize("kind", MODELS)
def test_the_top_blocks_and_the_final_norm_train_and_the_tied_embedding_does_not(kind):
    model = MODELS[kind]()
    stack = blocks_of(model)
    trained = train_top_blocks(model, 2)
    expected = {id(p) for block in stack[-2:] for p in block.parameters()}
    norm = model.transformer.ln_f if kind == "gpt2" else model.model.norm
    expected |= {id(p) for p in norm.parameters()}
    assert {id(p) for p in trained} == expected
    embedding = model.get_input_embeddings().weight
    assert embedding is model.get_output_embeddings().weight and not embedding.requires_grad  # tied, and frozen
    assert all(p.requires_grad == (id(p) in expected) for p in model.parameters())
    assert len(train_top_blocks(model, 0)) == len(list(model.parameters()))  # every weight again
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match="more than the model's"):
        train_top_blocks(model, len(stack) + 1)


@pytest.mark.parametrize("kind", MODELS)
def test_a_runs_copy_and_its_reference_share_the_trunk_and_copy_the_top(kind):
    loaded = MODELS[kind]()
    policy = trainable_copy(loaded, 1)
    trained = train_top_blocks(policy, 1)
    ref = reference_model(policy, trained)
    for a, b, c in zip(loaded.parameters(), policy.parameters(), ref.parameters()):
        top = any(b is p for p in trained)
        assert (a is b) == (not top) and (b is c) == (not top)  # the trunk is one tensor in all three
        assert torch.equal(a, c) and not c.requires_grad


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("K", [1, 3])
def test_the_sampling_pass_gives_the_policys_logits_and_the_trunk_gives_the_references(kind, K):
    """The logits kept while sampling, with their gradient, are a fresh pass's; the reference's top blocks on the
    trunk's captured states are its full pass's, once the policy's top has moved away from it."""
    policy = MODELS[kind]()
    trained = train_top_blocks(policy, 1)
    ref = reference_model(policy, trained)
    with torch.no_grad():
        for p in trained:
            p.add_(0.3 * torch.randn_like(p))  # the policy a few steps into a run
    x = torch.randint(4, 12, (2, 5), generator=torch.Generator().manual_seed(1))
    trunk = TrunkCapture(policy, 1)
    with trunk.recording():
        y, logits = sample_with_logits(policy, x, 6, EOS, torch.Generator().manual_seed(2), K)  # (2K, 6), (2K, 6, V)
    assert logits.requires_grad
    fresh = reply_logits(policy, x, y, EOS)
    torch.testing.assert_close(token_logp(logits, y), token_logp(fresh, y), atol=1e-5, rtol=0)
    ids = torch.cat([x.repeat_interleave(K, 0), y[:, :-1]], 1)
    with torch.no_grad():
        from_trunk = reference_logits(ref, 1, trunk.hidden(K), ids, 6)
        full = reply_logits(ref, x, y, EOS)
    keep = [v for v in range(full.shape[-1]) if v != EOS]
    torch.testing.assert_close(from_trunk[..., keep], full[..., keep], atol=1e-5, rtol=0)
    assert all(isinstance(block, type(blocks_of(policy)[-1])) for block in blocks_of(ref))  # the trunk is back


@pytest.mark.parametrize("kind", MODELS)
def test_a_step_on_a_frozen_trunk_moves_the_top_and_nothing_else(kind):
    settings = LMSettings(steps=1, prompts=2, replies=2, T=4, prompt_tokens=3, eval_every=1, eval_prompts=1, eval_replies=1,
                          keep_samples=2, device="cpu", beta=0.1, trained_blocks=1, lr=1e-2)
    lm = LMRun(settings, policy=MODELS[kind](), tokenizer=_Tokenizer(), reward=_Fives())
    before = {name: p.detach().clone() for name, p in lm.policy.named_parameters()}
    lm.step(1, np.random.default_rng(0), torch.Generator().manual_seed(0))
    top = {id(p) for p in lm.trained}
    for name, p in lm.policy.named_parameters():
        assert torch.equal(p, before[name]) != (id(p) in top), name


class _Fives:
    """R = how often the reply says w5, plus 1 for every second reply: the replies to a prompt differ in reward, so the
    step has a gradient."""

    def score(self, prompts, replies):
        R = np.array([float(y.split().count("w5")) for y in replies]) + np.arange(len(replies)) % 2
        return R, 1 / (1 + np.exp(-R))


class _Tokenizer:
    """Words w0, w1, ... for ids: enough for a run's prompts, decoding and the reward."""

    eos_token_id = EOS

    def __call__(self, texts):
        return {"input_ids": [[4 + (sum(map(ord, w)) % 8) for w in t.split()] for t in texts]}

    def batch_decode(self, ids):
        return [" ".join(f"w{i}" for i in row) for row in ids]

    def __len__(self):
        return 12
