"""Tiny language models and rewards the language-model engine tests share.

Tiny randomly initialised GPT-2 models (a handful of parameters, vocabularies of 7 to 12
tokens) stand in for GPT-2, so every quantity can be checked against a plain loop.
"""

import numpy as np
import torch
import torch.nn.functional as F

EOS = 3


def tiny_gpt2(vocab=12, seed=0, width=8):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_positions=40, n_embd=width, n_layer=1, n_head=2, bos_token_id=EOS, eos_token_id=EOS)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # larger weights than the default init, so the policy is far from uniform
        for p in model.parameters():
            p.mul_(20.0 if p.dim() > 1 else 1.0)
    return model


def slow_logp(model, seq, P):
    """log pi(y_t | s_t) by one forward pass per reply token, renormalised over the vocabulary without EOS."""
    N, L = seq.shape
    keep = [v for v in range(model.config.vocab_size) if v != EOS]
    out = torch.zeros(N, L - P)
    with torch.no_grad():
        for t in range(P, L):
            logits = model(seq[:, :t]).logits[:, -1][:, keep]  # drop the EOS column outright
            logp = F.log_softmax(logits.double(), -1)
            for i in range(N):
                out[i, t - P] = logp[i, keep.index(int(seq[i, t]))]
    return out


def huge_eos_gpt2(vocab=10):
    """A GPT-2 whose every position puts a logit of about 800 on EOS and about 0 elsewhere."""
    model = tiny_gpt2(vocab=vocab)
    with torch.no_grad():
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.fill_(1.0)  # every final hidden state is the all-ones vector
        model.transformer.wte.weight.mul_(0.01)
        model.transformer.wte.weight[EOS] = 100.0  # tied head: logit(EOS) = 100 * width
    return model


class Length:
    """A reward without a gold score: R = words in the reply."""

    name = "length"

    def score(self, prompts, replies):
        R = np.array([float(len(y.split())) for y in replies])
        return R, 1 / (1 + np.exp(-R))


class GoldLength(Length):
    """The same reward with a gold score beside it: g = characters in the reply."""

    def gold(self, prompts, replies):
        return np.array([float(len(y)) for y in replies])
