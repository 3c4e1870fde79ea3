"""Training the top blocks of a language model on a frozen trunk: what makes a live run of a 135M model fit a CPU.

A run may train only the top k transformer blocks and the final norm (`LMSettings.trained_blocks`); the
token embedding and the lower blocks, the trunk, stay as they were, so they are the reference's too
(seed 000 section 6.12: pi_ref is the policy as it started). Three savings follow, none of which
changes a number the run computes:

- the reference shares the trunk's parameters with the policy instead of copying them (`reference_model`);
- the backward pass stops at the lowest trained block;
- the trunk's hidden states of prompt and reply, computed once while the replies are sampled
  (`TrunkCapture`), feed the reference's top k blocks directly (`reference_logits`): the reference
  never runs the trunk again, where a full forward pass of it cost as much as the policy's.
"""

from __future__ import annotations

import contextlib
import copy
import inspect

import torch


def blocks_of(model) -> torch.nn.ModuleList:
    """The model's stack of transformer blocks: the ModuleList as long as its config's layer count (GPT-2's
    `transformer.h`, Llama's `model.layers`)."""
    config = model.config
    n = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n:
            return module
    raise ValueError(f"{type(model).__name__} has no list of {n} transformer blocks to train the top ones of.")


def _top_parameters(model, blocks: int) -> list[torch.nn.Parameter]:
    """Those of the top `blocks` transformer blocks and of every module after the stack (the final norm); a parameter
    registered before the blocks is not among them, the token embedding included where the output head shares it
    (tied weights, as GPT-2's and SmolLM2's): it belongs to the trunk."""
    stack = blocks_of(model)
    if not 1 <= blocks <= len(stack):
        raise ValueError(f"trained_blocks = {blocks} is more than the model's {len(stack)} blocks.")
    before, seen_stack = set(), False
    for module in model.modules():  # registration order: embeddings, the blocks, the final norm, the head
        seen_stack = seen_stack or module is stack
        if not seen_stack:
            before.update(id(p) for p in module.parameters(recurse=False))
    in_stack = {id(p) for p in stack.parameters()}
    top = {id(p) for block in stack[len(stack) - blocks:] for p in block.parameters()}
    return [p for p in model.parameters() if id(p) in top or (id(p) not in in_stack and id(p) not in before)]


def train_top_blocks(model, blocks: int) -> list[torch.nn.Parameter]:
    """The parameters a run trains, the others frozen: every one (`blocks` = 0), or the top `blocks` transformer
    blocks' and the final norm's (`_top_parameters`)."""
    trained = list(model.parameters()) if blocks == 0 else _top_parameters(model, blocks)
    keep = set(map(id, trained))
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)
    return trained


def trunk_parameters(model, blocks: int) -> list[torch.nn.Parameter]:
    """The parameters a run training the top `blocks` blocks leaves as they are (none when `blocks` = 0)."""
    if blocks == 0:
        return []
    top = set(map(id, _top_parameters(model, blocks)))
    return [p for p in model.parameters() if id(p) not in top]


def trainable_copy(model, blocks: int):
    """A run's own policy from a loaded model that several runs start from: the top `blocks` blocks and the final
    norm copied, the trunk shared (all of it copied when `blocks` = 0). A run of a 135M model then holds 7M
    weights of its own, not 135M."""
    return copy_sharing(model, trunk_parameters(model, blocks))


def reference_model(policy, trained: list[torch.nn.Parameter]):
    """pi_ref: a frozen copy of the policy as it starts, sharing (not copying) every parameter the run does not train."""
    keep = set(map(id, trained))
    return copy_sharing(policy, [p for p in policy.parameters() if id(p) not in keep]).requires_grad_(False)


def copy_sharing(model, shared: list[torch.nn.Parameter]):
    """A deep copy of `model` whose parameters in `shared` are the very tensors of `model`, not copies."""
    return copy.deepcopy(model, memo={id(p): p for p in shared})


class TrunkCapture:
    """Keeps the trunk's output (the input of the lowest trained block) of every forward pass of the policy.

    Sampling feeds the model the prompt once, (N_p, P, d), then one token at a time, (N, 1, d); `hidden(K)` joins
    them into the (N, P + T - 1, d) states of every position that predicted a reply token, each prompt's repeated
    for its K replies.
    """

    def __init__(self, model, blocks: int):
        self.stack = blocks_of(model)
        self.first = len(self.stack) - blocks
        self.pieces: list[torch.Tensor] = []

    @contextlib.contextmanager
    def recording(self):
        self.pieces = []

        def keep(_module, _args, output):
            self.pieces.append(output.detach())

        handle = self.stack[self.first - 1].register_forward_hook(keep)
        try:
            yield self
        finally:
            handle.remove()

    def hidden(self, K: int) -> torch.Tensor:
        prompt, *tokens = self.pieces
        return torch.cat([prompt.repeat_interleave(K, 0), *tokens], 1)  # (N, P + T - 1, d)


class _Replay(torch.nn.Module):
    """Stands in for a trunk block during the reference's pass: returns the trunk's output already computed."""

    def __init__(self, hidden: torch.Tensor):
        super().__init__()
        self.hidden = hidden

    def forward(self, *args, **kwargs) -> torch.Tensor:
        return self.hidden


def reference_logits(ref, blocks: int, hidden: torch.Tensor, ids: torch.Tensor, T: int) -> torch.Tensor:
    """(N, T, V) logits of pi_ref that predicted the T reply tokens, from the trunk's states `hidden` (N, P + T - 1, d)
    of the (N, P + T - 1) token ids `ids` (the prompt, and the reply but its last token); `blocks` are the top blocks
    the run trains.

    The reference's trunk blocks are stood in for by the states the policy's sampling computed (the trunk is
    shared: `reference_model`), so only its top blocks, final norm and head run, over the whole sequence at once,
    and the head only at the T positions that predicted a reply token.
    """
    stack = blocks_of(ref)
    trunk = list(stack[: len(stack) - blocks])
    stand_in = _Replay(hidden)
    keep = {"logits_to_keep": T} if "logits_to_keep" in inspect.signature(ref.forward).parameters else {}
    try:
        for i in range(len(trunk)):
            stack[i] = stand_in
        logits = ref(ids, use_cache=False, **keep).logits
    finally:
        for i, block in enumerate(trunk):
            stack[i] = block
    return logits[:, -T:]  # (N, T, V)
