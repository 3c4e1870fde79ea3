"""The lab's reward model r_phi, trained from comparisons: seed 001 section 8.

A small causal transformer reads the language model's token ids of the prompt and the
response together and outputs one number at the last position, a read-out token appended
to every sequence (as GPT-style reward models read their score at the end-of-text token,
so that the score is never read at a position whose own token varies). It is trained from
scratch with the pairwise logistic loss (equation 14),

    L_RM(phi) = -(1/|D|) sum_{(x, y_w, y_l)} log sigma(r_phi(x, y_w) - r_phi(x, y_l)),

and has an embedding only for tokens that occur at least twice in its training pairs;
every other token maps to one shared unknown id, so it cannot tell rare tokens apart
(the detail that matters once a policy optimises against it). After training it is read
three ways on held-out pairs: pairwise accuracy beside the ceiling Acc* (equation 13),
accuracy against the ordering by the gold score g, and Spearman's rank correlation with
g; then normalised on the held-out responses (equation 15) and saved in one file.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engines.bradley_terry import Normalizer, bt_loss, fit_normalizer, oracle_accuracy
from engines.lm.models import ModelNotAvailable, from_pretrained, transformers_classes
from engines.lm.preferences import TAU_LABEL, PreferencePairs, gold_score, prompt_table, relabel, split_pairs
from engines.lm.settings import REWARD_PREFIX
from engines.settings import finite, require

PAD, UNKNOWN, READOUT = 0, 1, 2
"""Reward-model ids of padding, of every token without its own embedding, and of the read-out token
appended to every sequence (the position whose output is the score); kept tokens start at 3."""
FIRST_KEPT = 3
FILE_FORMAT = "feedback-lab reward model 1"
"""Written into every saved reward model, so that other files are refused by name."""


@dataclass(frozen=True)
class RewardModelSettings:
    """The reward model's size and its training."""

    heldout: float = 0.2
    """Share of the pairs held out for evaluation and normalisation; between 0 and 1 (exclusive)."""
    min_count: int = 2
    """A token gets its own embedding if it occurs at least this often in the training pairs; at least 1."""
    d_model: int = 64
    """Width of the transformer; a multiple of heads."""
    layers: int = 2
    """Transformer blocks; 1 to 12."""
    heads: int = 4
    """Attention heads per block; at least 1."""
    dropout: float = 0.1
    """Dropout rate inside the blocks during training; in [0, 1)."""
    steps: int = 200
    """Optimiser steps; at least 1."""
    batch: int = 64
    """Pairs per optimiser step; at least 1."""
    lr: float = 1e-3
    """AdamW learning rate; positive."""
    weight_decay: float = 0.1
    """AdamW weight decay; non-negative."""
    eval_every: int = 50
    """Steps between held-out accuracy reports; at least 1."""
    seed: int = 0
    """Seed of the split, the initialisation, the batches and dropout; a non-negative integer."""

    def __post_init__(self):
        require(finite(self.heldout) and 0 < self.heldout < 1,
                f"heldout must lie strictly between 0 and 1, got {self.heldout}.")
        require(self.min_count >= 1, f"min_count must be at least 1, got {self.min_count}.")
        require(self.heads >= 1 and self.d_model >= self.heads and self.d_model % self.heads == 0,
                f"d_model ({self.d_model}) must be a positive multiple of heads ({self.heads}).")
        require(1 <= self.layers <= 12, f"layers must be between 1 and 12, got {self.layers}.")
        require(finite(self.dropout) and 0 <= self.dropout < 1, f"dropout must lie in [0, 1), got {self.dropout}.")
        require(self.steps >= 1, f"steps must be at least 1, got {self.steps}.")
        require(self.batch >= 1, f"batch must be at least 1, got {self.batch}.")
        require(finite(self.lr) and self.lr > 0, f"lr must be a positive finite number, got {self.lr}.")
        require(finite(self.weight_decay) and self.weight_decay >= 0,
                f"weight_decay must be a non-negative finite number, got {self.weight_decay}.")
        require(self.eval_every >= 1, f"eval_every must be at least 1, got {self.eval_every}.")
        require(self.seed >= 0, f"seed must be a non-negative integer, got {self.seed}.")


# --- vocabulary -------------------------------------------------------------------------------------------


def build_vocabulary(token_ids, min_count: int = 2) -> np.ndarray:
    """The sorted language-model ids that occur at least `min_count` times in `token_ids` (-1 is padding)."""
    flat = np.concatenate([np.asarray(t).ravel() for t in token_ids])
    ids, counts = np.unique(flat[flat >= 0], return_counts=True)
    return ids[counts >= min_count].astype(np.int64)


def encode_tokens(token_ids, vocab: np.ndarray) -> np.ndarray:
    """Language-model ids to reward-model ids: kept token vocab[i] -> i + 3, any other -> UNKNOWN, -1 -> PAD."""
    token_ids = np.asarray(token_ids, dtype=np.int64)
    pos = np.searchsorted(vocab, token_ids).clip(0, max(len(vocab) - 1, 0))
    kept = (vocab[pos] == token_ids) if len(vocab) else np.zeros(token_ids.shape, dtype=bool)
    return np.where(token_ids < 0, PAD, np.where(kept, pos + FIRST_KEPT, UNKNOWN))


def join_sequences(prompt_ids: np.ndarray, reply_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prompt then reply, with the prompt's padding moved to the end: ((n, P + T) ids padded with -1, (n,) lengths).

    Row i is prompt_ids[i, :p_i] followed by every id of reply_ids[i] that is not -1.
    """
    prompt_ids = np.asarray(prompt_ids, dtype=np.int64)
    reply_ids = np.asarray(reply_ids, dtype=np.int64)
    both = np.concatenate([prompt_ids, reply_ids], axis=1)  # (n, P + T), padding in the middle
    keep = both >= 0
    order = np.argsort(~keep, axis=1, kind="stable")  # real tokens first, in their order
    joined = np.take_along_axis(both, order, axis=1)
    return joined, keep.sum(1)


# --- the network -------------------------------------------------------------------------------------------


class Block(nn.Module):
    """One pre-norm transformer block: x + attention(LN(x)), then x + MLP(LN(x)), causal attention."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x):  # (B, L, d)
        B, L, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).view(B, L, 3, self.heads, d // self.heads).unbind(2)  # (B, L, h, d/h)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)  # (B, h, L, d/h)
        x = x + self.proj(a.transpose(1, 2).reshape(B, L, d))
        return x + self.mlp(self.ln_2(x))


class RewardModel(nn.Module):
    """r_phi(x, y): token and position embeddings, causal blocks, a linear map to one number at the last token.

    Because attention is causal and padding sits after the last real token, padding never
    reaches the position that is read out.
    """

    def __init__(self, vocab: np.ndarray, max_len: int, d_model: int = 64, layers: int = 2, heads: int = 4,
                 dropout: float = 0.1):
        super().__init__()
        self.config = dict(max_len=int(max_len), d_model=int(d_model), layers=int(layers), heads=int(heads),
                           dropout=float(dropout))
        self.register_buffer("vocab", torch.as_tensor(np.asarray(vocab, dtype=np.int64)))
        self.tok = nn.Embedding(len(vocab) + FIRST_KEPT, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 1)

    def forward(self, x, lengths):  # x: (B, L) reward-model ids, lengths: (B,)
        h = self.tok(x) + self.pos(torch.arange(x.shape[1], device=x.device))  # (B, L, d)
        for block in self.blocks:
            h = block(h)
        last = h[torch.arange(len(x), device=x.device), lengths - 1]  # (B, d) at each sequence's last token
        return self.head(self.ln_f(last)).squeeze(-1)  # (B,)

    def inputs(self, prompt_ids, reply_ids) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoded (x, lengths) tensors for prompts and replies of language-model ids (-1 padded).

        A sequence longer than max_len keeps its last max_len tokens, the ones nearest the read-out.
        """
        joined, lengths = join_sequences(prompt_ids, reply_ids)
        max_len = self.config["max_len"] - 1  # room for the read-out token
        if joined.shape[1] > max_len:
            start = np.maximum(lengths - max_len, 0)
            joined = np.take_along_axis(joined, start[:, None] + np.arange(max_len), axis=1)
            lengths = np.minimum(lengths, max_len)
        x = encode_tokens(np.pad(joined, ((0, 0), (0, 1)), constant_values=-1), self.vocab.cpu().numpy())
        x[np.arange(len(x)), lengths] = READOUT
        lengths = lengths + 1
        return torch.as_tensor(x, device=self.vocab.device), torch.as_tensor(lengths, device=self.vocab.device)

    @torch.no_grad()
    def score(self, prompt_ids, reply_ids, batch: int = 512) -> np.ndarray:
        """Raw r_phi(x, y) of each (prompt, reply) row, in evaluation mode: (n,) floats."""
        was_training = self.training
        self.eval()
        x, lengths = self.inputs(prompt_ids, reply_ids)
        out = torch.cat([self(x[i:i + batch], lengths[i:i + batch]) for i in range(0, len(x), batch)])
        self.train(was_training)
        return out.double().cpu().numpy()


# --- evaluation --------------------------------------------------------------------------------------------


def pairwise_accuracy(r_a, r_b, label) -> float:
    """Share of pairs where r_phi(x, y_w) > r_phi(x, y_l), seed 001 section 8; a tie counts one half."""
    d = np.where(label, 1.0, -1.0) * (np.asarray(r_a, dtype=float) - np.asarray(r_b, dtype=float))
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


def gold_order_accuracy(r_a, r_b, g_a, g_b) -> float:
    """Share of pairs with g_a != g_b that r_phi orders as g does (a tie in r counts one half); NaN if none."""
    g_gap = np.asarray(g_a, dtype=float) - np.asarray(g_b, dtype=float)
    differ = g_gap != 0
    if not differ.any():
        return math.nan
    d = np.sign(g_gap[differ]) * (np.asarray(r_a, dtype=float) - np.asarray(r_b, dtype=float))[differ]
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


def rankdata(x) -> np.ndarray:
    """Ranks 1..n of x, ties given the mean of the ranks they span (mid-ranks)."""
    x = np.asarray(x, dtype=float)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])  # first index of each run of equal values
    sizes = np.diff(np.r_[starts, len(x)])
    mid = starts + (sizes + 1) / 2.0  # mean of the 1-based ranks starts+1 .. starts+size
    ranks = np.empty(len(x))
    ranks[order] = np.repeat(mid, sizes)
    return ranks


def spearman(x, y) -> float:
    """Spearman's rank correlation: the Pearson correlation of the mid-ranks of x and y; NaN if either is constant."""
    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denom) if denom > 0 else math.nan


@dataclass(frozen=True)
class RewardEvaluation:
    """The three held-out readings of section 8, with the ceiling and the standard error."""

    heldout_accuracy: float
    """Share of held-out labels that r_phi predicts, r_phi(x, y_w) > r_phi(x, y_l)."""
    heldout_se: float
    """Binomial standard error of heldout_accuracy, sqrt(acc (1 - acc) / n)."""
    acc_star: float
    """The ceiling Acc* = mean max(p, 1 - p) of equation 13 on the same pairs."""
    gold_order_accuracy: float
    """Share of held-out pairs with different g that r_phi orders as g does."""
    spearman: float
    """Spearman rank correlation between r_phi and g over the held-out responses (both of each pair)."""
    pairs: int
    """Number of held-out pairs."""


def evaluate(model: RewardModel, pairs: PreferencePairs) -> RewardEvaluation:
    """Score both continuations of every pair and read accuracy, Acc*, gold-order accuracy and Spearman."""
    r_a, r_b = model.score(pairs.prompt_ids, pairs.ids_a), model.score(pairs.prompt_ids, pairs.ids_b)
    acc = pairwise_accuracy(r_a, r_b, pairs.label)
    return RewardEvaluation(
        heldout_accuracy=acc, heldout_se=math.sqrt(acc * (1 - acc) / len(pairs)),
        acc_star=float(oracle_accuracy(pairs.g_a, pairs.g_b, pairs.tau_label)),
        gold_order_accuracy=gold_order_accuracy(r_a, r_b, pairs.g_a, pairs.g_b),
        spearman=spearman(np.r_[r_a, r_b], np.r_[pairs.g_a, pairs.g_b]), pairs=len(pairs))


# --- training ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TrainedRewardModel:
    """A trained r_phi with its normaliser (equation 15), the settings that made it and its held-out reading."""

    model: RewardModel
    """The network, in evaluation mode."""
    normalizer: Normalizer
    """mu and sigma of the raw scores of the held-out responses."""
    settings: RewardModelSettings
    """The settings it was trained with."""
    evaluation: RewardEvaluation
    """Held-out accuracy, Acc*, gold-order accuracy and Spearman."""
    lm: str = ""
    """The language model whose token ids it reads (its id or path)."""
    tau_label: float = TAU_LABEL
    """Label temperature of the pairs it was trained on."""

    def raw(self, prompt_ids, reply_ids) -> np.ndarray:
        """r_phi(x, y), raw: (n,)."""
        return self.model.score(prompt_ids, reply_ids)

    def __call__(self, prompt_ids, reply_ids) -> np.ndarray:
        """The normalised reward r~ = (r_phi - mu) / sigma of equation 15: (n,)."""
        return self.normalizer(self.raw(prompt_ids, reply_ids))


@dataclass(frozen=True, eq=False)
class TrainingProgress:
    """One report of a training run: a point of the live loss and accuracy curves."""

    step: int
    """Optimiser steps taken."""
    steps: int
    """Optimiser steps in the whole run."""
    loss: float
    """Mean training loss (equation 14) over the steps since the previous report."""
    heldout_accuracy: float
    """Held-out pairwise accuracy now."""
    acc_star: float
    """Acc* of the held-out pairs: the ceiling line."""
    trained: TrainedRewardModel | None = None
    """The finished model, on the last report only."""


def iter_train_reward_model(pairs: PreferencePairs, settings: RewardModelSettings = RewardModelSettings(),
                            pair_loss: Callable = bt_loss) -> Iterator[TrainingProgress]:
    """Train r_phi on a seeded split of `pairs` with bt_loss (equation 14), yielding progress every eval_every steps.

    `pair_loss(reward_w, reward_l)` is the loss, equation 14 by default; the lab's Exercise 4
    passes the learner's own, so that the model trains with what they wrote. Each step draws `batch` training pairs, scores y_w and y_l with the same parameters and
    takes an AdamW step on -mean log sigma(r_w - r_l). The last report carries the trained
    model, normalised (equation 15) on the raw scores of the held-out responses.
    """
    s = settings
    train, held = split_pairs(pairs, s.heldout, s.seed)
    torch.manual_seed(s.seed)
    rng = np.random.default_rng(s.seed)
    vocab = build_vocabulary([train.prompt_ids, train.ids_a, train.ids_b], s.min_count)
    max_len = pairs.prompt_ids.shape[1] + pairs.ids_a.shape[1] + 1
    model = RewardModel(vocab, max_len, s.d_model, s.layers, s.heads, s.dropout)
    optimiser = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    ids_w, ids_l = train.winner_loser()
    x_w, len_w = model.inputs(train.prompt_ids, ids_w)
    x_l, len_l = model.inputs(train.prompt_ids, ids_l)
    acc_star = float(oracle_accuracy(held.g_a, held.g_b, held.tau_label))
    losses = []
    model.train()
    for step in range(1, s.steps + 1):
        idx = torch.as_tensor(rng.integers(len(train), size=s.batch))
        r = model(torch.cat([x_w[idx], x_l[idx]]), torch.cat([len_w[idx], len_l[idx]]))  # (2B,) one pass
        loss = pair_loss(r[: s.batch], r[s.batch:])
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
        if step % s.eval_every == 0 or step == s.steps:
            r_a, r_b = model.score(held.prompt_ids, held.ids_a), model.score(held.prompt_ids, held.ids_b)
            accuracy = pairwise_accuracy(r_a, r_b, held.label)
            trained = None
            if step == s.steps:
                model.eval()
                trained = TrainedRewardModel(model=model, normalizer=fit_normalizer(np.r_[r_a, r_b]), settings=s,
                                             evaluation=evaluate(model, held), lm=pairs.model,
                                             tau_label=pairs.tau_label)
            yield TrainingProgress(step=step, steps=s.steps, loss=float(np.mean(losses)), heldout_accuracy=accuracy,
                                   acc_star=acc_star, trained=trained)
            losses = []


def train_reward_model(pairs: PreferencePairs, settings: RewardModelSettings = RewardModelSettings(),
                       on_progress: Callable[[TrainingProgress], None] | None = None,
                       pair_loss: Callable = bt_loss) -> TrainedRewardModel:
    """Run `iter_train_reward_model` to the end and return the trained model; `on_progress` sees every report."""
    for progress in iter_train_reward_model(pairs, settings, pair_loss):
        if on_progress is not None:
            on_progress(progress)
    return progress.trained


# --- the probe and the stretch ---------------------------------------------------------------------------------

PROBE_PROMPT = "My sister opened the letter and felt so"
"""Section 7's example prompt, the context of every probe reply."""

PROBE_REPLIES = (
    ("one positive word", " wonderful, and the story takes place in a small town by the sea."),
    ("three positive words", " wonderful. The acting is brilliant and the music is superb."),
    ("neutral", " quiet that nobody in the room said a word for a while."),
    ("one negative word", " boring, and the story takes place in a small town by the sea."),
    ("positive and negative", " wonderful, but the plot is dull and the ending is awful."),
    ("one positive word repeated", " wonderful" * 12),
    ("only positive words", " wonderful brilliant superb excellent delightful charming lovely perfect great fantastic fun"),
    ("only negative words", " boring dull awful terrible dreadful horrible stupid ugly"),
)
"""Hand-written replies, the last three of a kind the language model rarely writes: (what it is, text).

Their list words are ones the embedded movie-review model does write, so the reward model has seen them."""


@dataclass(frozen=True)
class ProbeRow:
    """One hand-written reply with its gold score and the reward model's view of it."""

    name: str
    """What kind of reply it is."""
    text: str
    """The reply."""
    g: float
    """Gold score g(y)."""
    r_phi: float
    """Normalised reward-model score (equation 15)."""
    unknown: int
    """How many of its tokens the reward model has no embedding for."""


def probe(trained: TrainedRewardModel, encode: Callable[[str], list[int]], replies=PROBE_REPLIES,
          prompt: str = PROBE_PROMPT) -> list[ProbeRow]:
    """Score hand-written replies (seed 001 section 8's provided cell) with r_phi beside g.

    `encode` is the language model's tokenizer: text -> token ids.
    """
    names, texts = zip(*replies)
    prompt_ids = prompt_table([encode(prompt)] * len(texts))
    reply_ids = prompt_table([encode(t) for t in texts])
    scores = trained(prompt_ids, reply_ids)
    unknown = (encode_tokens(reply_ids, trained.model.vocab.cpu().numpy()) == UNKNOWN).sum(1)
    return [ProbeRow(name=n, text=t, g=float(g), r_phi=float(r), unknown=int(u))
            for n, t, g, r, u in zip(names, texts, gold_score(texts), scores, unknown)]


def probe_rows(trained: TrainedRewardModel) -> list[dict]:
    """`probe` tokenised as the pairs were, by the language model's tokenizer, as rows of plain values (reply, text,
    g, r_phi, unknown_tokens); an empty list when that tokenizer is not on this machine."""
    try:
        (AutoTokenizer,) = transformers_classes("AutoTokenizer")  # here, not above: transformers takes seconds to import
        tokenizer = from_pretrained(AutoTokenizer, trained.lm)
    except (ModelNotAvailable, ImportError, OSError, ValueError):
        return []
    return [{"reply": r.name, "text": r.text, "g": r.g, "r_phi": r.r_phi, "unknown_tokens": r.unknown}
            for r in probe(trained, lambda text: tokenizer(text)["input_ids"])]


@dataclass(frozen=True)
class TauSweepRow:
    """The stretch: one rater noise level, the reward model trained on its labels."""

    tau_label: float
    """Label temperature of the rater."""
    evaluation: RewardEvaluation
    """Held-out accuracy beside Acc*, gold-order accuracy and Spearman at this tau_label."""


def iter_tau_sweep(pairs: PreferencePairs, taus, settings: RewardModelSettings = RewardModelSettings(),
                   label_seed: int = 0, pair_loss: Callable = bt_loss) -> Iterator[TauSweepRow]:
    """Seed 001's stretch: relabel the same responses at each tau_label (equation 12), retrain, yield the reading.

    The split and the training seed stay fixed, so only the rater's noise changes from row to row.
    `pair_loss` is equation 14 as `iter_train_reward_model` takes it.
    """
    for tau in taus:
        trained = train_reward_model(relabel(pairs, float(tau), label_seed), settings, pair_loss=pair_loss)
        yield TauSweepRow(tau_label=float(tau), evaluation=trained.evaluation)


def tau_sweep(pairs: PreferencePairs, taus, settings: RewardModelSettings = RewardModelSettings(),
              label_seed: int = 0) -> list[TauSweepRow]:
    """`iter_tau_sweep` run to the end."""
    return list(iter_tau_sweep(pairs, taus, settings, label_seed))


# --- one file ---------------------------------------------------------------------------------------------------


def save_reward_model(trained: TrainedRewardModel, path) -> None:
    """Weights, vocabulary map, normaliser, settings and reading in one torch.save file of plain types and tensors."""
    model = trained.model
    torch.save({
        "format": FILE_FORMAT,
        "config": dict(model.config),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "normalizer": {"mu": trained.normalizer.mu, "sigma": trained.normalizer.sigma},
        "settings": asdict(trained.settings),
        "evaluation": asdict(trained.evaluation),
        "lm": trained.lm,
        "tau_label": trained.tau_label,
    }, Path(path))


def load_reward_model(path, device: str = "cpu") -> TrainedRewardModel:
    """Read a file written by `save_reward_model` with torch.load(weights_only=True); anything else raises
    ValueError with one sentence naming the file."""
    name = str(path)
    try:
        stored = torch.load(Path(path), map_location=device, weights_only=True)
    except FileNotFoundError:
        raise ValueError(f"there is no reward model file at {name}.") from None
    except Exception:  # torch raises many kinds for a damaged file; all mean the same thing here
        raise ValueError(f"{name} is not a readable reward model file: it is truncated or corrupt.") from None
    require(isinstance(stored, dict) and stored.get("format") == FILE_FORMAT,
            f"{name} is not a Feedback Lab reward model file.")
    try:
        state = stored["state_dict"]
        model = RewardModel(state["vocab"].numpy(), **stored["config"])
        model.load_state_dict(state)
        trained = TrainedRewardModel(
            model=model.to(device).eval(), normalizer=Normalizer(**stored["normalizer"]),
            settings=RewardModelSettings(**stored["settings"]), evaluation=RewardEvaluation(**stored["evaluation"]),
            lm=str(stored["lm"]), tau_label=float(stored["tau_label"]))
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError):
        raise ValueError(f"{name} is an incomplete or inconsistent reward model file.") from None
    require(trained.normalizer.sigma > 0 and finite(trained.normalizer.mu),
            f"{name} holds an invalid normaliser (sigma must be positive).")
    return trained


# --- a reward of the live run ---------------------------------------------------------------------------------

class LearnedReward:
    """A saved reward model as a reward of the live run (engines.lm.rewards' interface), g alongside.

    R(x, y) = (r_phi(x, y) - mu) / sigma (equation 15), the normalised score that an
    optimiser is handed, and P(positive) = sigma(R) as for every reward there. `gold`
    gives g(y) of the same replies, so a run can draw the proxy and the truth together.
    The texts are tokenised with the tokenizer of the language model the pairs came from.
    """

    def __init__(self, path, device="cpu"):
        (AutoTokenizer,) = transformers_classes("AutoTokenizer")  # here, not above: transformers takes seconds to import
        self.name = f"{REWARD_PREFIX}{path}"
        self.trained = load_reward_model(path, str(device))
        self.tokenizer = from_pretrained(AutoTokenizer, self.trained.lm or "embedded")

    @classmethod
    def from_name(cls, name: str, device="cpu") -> LearnedReward:
        """The reward named 'reward-model:PATH'."""
        require(name.startswith(REWARD_PREFIX), f"a learned reward is named '{REWARD_PREFIX}PATH', got {name!r}.")
        return cls(name[len(REWARD_PREFIX):], device)

    def _ids(self, texts) -> np.ndarray:
        return prompt_table([ids or [self.tokenizer.eos_token_id] for ids in self.tokenizer(list(texts))["input_ids"]])

    def score(self, prompts, replies) -> tuple[np.ndarray, np.ndarray]:
        """(R, P(positive)), each (N,): the normalised reward-model score of prompt + reply, and sigma(R)."""
        R = self.trained(self._ids(prompts), self._ids(replies))
        return R, 1.0 / (1.0 + np.exp(-R))

    def gold(self, prompts, replies) -> np.ndarray:
        """g(y) of each reply (the prompt plays no part in the gold score): (N,)."""
        return gold_score(list(replies))
