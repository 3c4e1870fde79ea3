"""Preference data as seed 001's lab makes it (sections 7 and 8, "In the lab").

Prompts are eight-word openings that stop just before a feeling ("My sister opened the
letter and felt so"). For each pair the language model writes two continuations y_a and
y_b of T = 24 tokens. A hidden rule, the gold score g(y), says how good each is:

    g(y) = min(P, 3) - N - max(0, L - 4)

with P the number of distinct positive words in y, N the number of negative words
(every occurrence counts), and L the number of words from either list: a reply crowded
with list words loses a point for each one beyond the fourth. A synthetic rater then
labels the pair with equation 12,

    P(y_a > y_b | x) = sigma((g(y_a) - g(y_b)) / tau_label).

The pairs are stored in one .npz file holding token ids, texts, both gold scores and the
label, which is what the reward model (engines/lm/reward_model.py) trains on.
"""

from __future__ import annotations

import functools
import re
import zipfile
import zlib
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

import assets
from engines.bradley_terry import sample_labels
from engines.lm.models import load_causal_lm, resolve_device
from engines.lm.prompts import load_prompts, read_lines
from engines.lm.sampling import sample_replies
from engines.settings import finite, require

ASSETS = assets.path("preferences")
POSITIVE_PATH = ASSETS / "positive.txt"
NEGATIVE_PATH = ASSETS / "negative.txt"
BUNDLED_PAIRS = ASSETS / "pairs-2000-seed0.npz"
"""The default pair set (PairSettings' 2,000 pairs, seed 0, the embedded model), made once by
`feedback-lab make-pairs --pairs 2000 --tau-label 0.5 --seed 0`: the reward-model page and the lab
start from it at once instead of sampling the same 4,000 continuations again."""

POSITIVE_CAP = 3
"""At most this many distinct positive words count toward g."""
CROWD_FREE = 4
"""List words (positive or negative) a reply may hold before each further one costs a point."""
TAU_LABEL = 0.5
"""Default label temperature: section 7's check-yourself rater."""
REPLY_TOKENS = 24
"""Tokens in each continuation, as in the seed's lab."""
FILE_FORMAT = "feedback-lab preference pairs 1"
"""Written into every pairs file, so that other .npz files are refused by name."""

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


@functools.cache
def load_words(path: Path) -> frozenset[str]:
    """A word list (one lower-case word a line) as a set."""
    return frozenset(word.lower() for word in read_lines(path))


def words(text: str) -> list[str]:
    """The words of a reply as g reads them: lower-case letters, with an inner apostrophe kept."""
    return _WORD.findall(text.lower())


def gold_counts(texts, positive: frozenset[str] | None = None, negative: frozenset[str] | None = None):
    """(P, N, L) per reply: distinct positive words, negative words, list words (both lists, repeats counted).

    Each is an int array of shape (len(texts),).
    """
    positive = load_words(POSITIVE_PATH) if positive is None else positive
    negative = load_words(NEGATIVE_PATH) if negative is None else negative
    counts = np.zeros((len(texts), 3), dtype=np.int64)
    for i, text in enumerate(texts):  # string work: one reply at a time
        ws = words(text)
        n_neg = sum(w in negative for w in ws)
        n_pos = sum(w in positive for w in ws)
        counts[i] = len({w for w in ws if w in positive}), n_neg, n_pos + n_neg
    return counts[:, 0], counts[:, 1], counts[:, 2]


def gold_from_counts(P, N, L, cap: int = POSITIVE_CAP, crowd_free: int = CROWD_FREE):
    """g = min(P, cap) - N - max(0, L - crowd_free), seed 001 section 7's gold score, from the counts."""
    P, N, L = (np.asarray(a) for a in (P, N, L))
    return (np.minimum(P, cap) - N - np.maximum(0, L - crowd_free)).astype(float)


def gold_score(texts, positive: frozenset[str] | None = None, negative: frozenset[str] | None = None):
    """The lab's gold score g(y) of each reply, seed 001 section 7:

        g(y) = min(P, 3) - N - max(0, L - 4)

    P distinct positive words, N negative words, L words from either list. (len(texts),) floats.
    """
    return gold_from_counts(*gold_counts(texts, positive, negative))


def label_pairs(g_a, g_b, tau_label: float, seed: int) -> np.ndarray:
    """Rater labels by equation 12: True where y_a is preferred, drawn with P = sigma((g_a - g_b) / tau_label)."""
    return sample_labels(g_a, g_b, tau_label, np.random.default_rng(seed))


@dataclass(frozen=True)
class PairSettings:
    """How `make_pairs` builds a preference data set."""

    pairs: int = 2000
    """Number of preference pairs (each two sampled continuations of one prompt); 1 to 100000."""
    tau_label: float = TAU_LABEL
    """Label temperature of the synthetic rater (equation 12); positive, gold-score units."""
    T: int = REPLY_TOKENS
    """Tokens in each continuation; 1 to 128."""
    seed: int = 0
    """Seed of the prompt order, the sampling and the labels; a non-negative integer."""
    model: str = "embedded"
    """Language model that writes the continuations: 'embedded', a hub id (gpt2, distilgpt2) or a local folder."""
    device: str = "auto"
    """'auto' (CUDA if available, else CPU), 'cpu' or 'cuda'."""

    def __post_init__(self):
        require(isinstance(self.model, str) and self.model.strip() != "",
                "model must name a language model: 'embedded', a hub id or a folder.")
        require(self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:"),
                f"device must be one of auto, cpu, cuda, got {self.device!r}.")
        require(1 <= self.pairs <= 100_000, f"pairs must be between 1 and 100000, got {self.pairs}.")
        require(finite(self.tau_label) and self.tau_label > 0,
                f"tau_label must be a positive finite number, got {self.tau_label}.")
        require(1 <= self.T <= 128, f"T must be between 1 and 128 tokens, got {self.T}.")
        require(self.seed >= 0, f"seed must be a non-negative integer, got {self.seed}.")


@dataclass(frozen=True, eq=False)
class PreferencePairs:
    """A preference data set: n pairs (x, y_a, y_b) with gold scores and the rater's label."""

    prompt: np.ndarray
    """(n,) prompt texts."""
    prompt_ids: np.ndarray
    """(n, P) language-model token ids of the prompts, right-padded with -1."""
    ids_a: np.ndarray
    """(n, T) token ids of continuation a."""
    ids_b: np.ndarray
    """(n, T) token ids of continuation b."""
    text_a: np.ndarray
    """(n,) decoded text of continuation a."""
    text_b: np.ndarray
    """(n,) decoded text of continuation b."""
    g_a: np.ndarray
    """(n,) gold score g(y_a)."""
    g_b: np.ndarray
    """(n,) gold score g(y_b)."""
    label: np.ndarray
    """(n,) bool: True where the rater preferred y_a."""
    tau_label: float = TAU_LABEL
    """Label temperature the labels were drawn at."""
    seed: int = 0
    """Seed the labels were drawn with."""
    model: str = ""
    """The language model that wrote the continuations (its id or path)."""

    def __post_init__(self):
        n = len(self.label)
        require(n >= 1, "a preference data set needs at least one pair.")
        for name in ("prompt", "text_a", "text_b", "g_a", "g_b", "label"):
            require(getattr(self, name).shape == (n,), f"{name} must hold one entry per pair ({n}).")
        require(self.prompt_ids.ndim == 2 and len(self.prompt_ids) == n,
                f"prompt_ids must be a table with one row per pair ({n}).")
        require(self.ids_a.ndim == 2 and self.ids_a.shape == self.ids_b.shape and len(self.ids_a) == n,
                f"ids_a and ids_b must be tables of the same shape with one row per pair ({n}).")
        require(bool(np.all(self.ids_a >= 0) and np.all(self.ids_b >= 0)), "reply token ids must be non-negative.")
        require(bool(np.all(self.prompt_ids[:, 0] >= 0)), "every prompt must have at least one token.")
        require(bool(np.all(np.isfinite(self.g_a)) and np.all(np.isfinite(self.g_b))), "gold scores must be finite.")
        require(self.label.dtype == bool, "labels must be booleans (True where y_a was preferred).")
        require(finite(self.tau_label) and self.tau_label > 0, "tau_label must be a positive finite number.")

    def __len__(self) -> int:
        return len(self.label)

    def subset(self, index) -> PreferencePairs:
        """The pairs at `index` (an index array or a boolean mask), same metadata."""
        arrays = {f.name: getattr(self, f.name)[index] for f in fields(self) if f.name in _ARRAYS}
        return PreferencePairs(**arrays, tau_label=self.tau_label, seed=self.seed, model=self.model)

    def winner_loser(self):
        """(ids_w, ids_l): the preferred and the rejected continuation of each pair, (n, T) each."""
        w = self.label[:, None]
        return np.where(w, self.ids_a, self.ids_b), np.where(w, self.ids_b, self.ids_a)


_ARRAYS = ("prompt", "prompt_ids", "ids_a", "ids_b", "text_a", "text_b", "g_a", "g_b", "label")


def relabel(pairs: PreferencePairs, tau_label: float, seed: int) -> PreferencePairs:
    """The same responses labelled afresh by a rater at `tau_label` (the stretch: noisier raters)."""
    label = label_pairs(pairs.g_a, pairs.g_b, tau_label, seed)
    arrays = {name: getattr(pairs, name) for name in _ARRAYS if name != "label"}
    return PreferencePairs(**arrays, label=label, tau_label=float(tau_label), seed=int(seed), model=pairs.model)


def split_pairs(pairs: PreferencePairs, heldout: float, seed: int) -> tuple[PreferencePairs, PreferencePairs]:
    """(train, held-out): a seeded random split with round(heldout * n) pairs held out, at least one each side."""
    n = len(pairs)
    require(n >= 2, "splitting needs at least two pairs.")
    n_held = min(max(1, round(heldout * n)), n - 1)
    order = np.random.default_rng(seed).permutation(n)
    return pairs.subset(np.sort(order[n_held:])), pairs.subset(np.sort(order[:n_held]))


def prompt_table(token_lists) -> np.ndarray:
    """Token-id lists of different lengths as one (n, P) int64 table right-padded with -1."""
    width = max(len(t) for t in token_lists)
    table = np.full((len(token_lists), width), -1, dtype=np.int64)
    for i, t in enumerate(token_lists):
        table[i, : len(t)] = t
    return table


def save_pairs(pairs: PreferencePairs, path) -> None:
    """Write the pairs as one compressed .npz (plain arrays: no pickles), under `path` exactly."""
    arrays = {name: getattr(pairs, name) for name in _ARRAYS}
    arrays["prompt"], arrays["text_a"], arrays["text_b"] = (
        np.asarray(arrays[k], dtype=str) for k in ("prompt", "text_a", "text_b"))
    with open(path, "wb") as out:
        np.savez_compressed(out, format=np.array(FILE_FORMAT), tau_label=np.array(pairs.tau_label),
                            seed=np.array(pairs.seed), model=np.array(pairs.model), **arrays)


def load_pairs(path) -> PreferencePairs:
    """Read a pairs file written by `save_pairs`; a missing, truncated, corrupt or foreign file raises
    ValueError with one sentence naming the file."""
    name = str(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise ValueError(f"there is no pairs file at {name}.") from None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, AttributeError, TypeError):
        raise ValueError(f"{name} is not a readable pairs file: it is truncated, corrupt or not a .npz file.") from None
    require(str(stored.get("format", "")) == FILE_FORMAT, f"{name} is not a Feedback Lab pairs file.")
    missing = [key for key in (*_ARRAYS, "tau_label", "seed", "model") if key not in stored]
    require(not missing, f"{name} is incomplete: it lacks {', '.join(missing)}.")
    try:
        return PreferencePairs(
            **{key: stored[key] for key in ("prompt", "text_a", "text_b")},
            **{key: stored[key].astype(np.int64) for key in ("prompt_ids", "ids_a", "ids_b")},
            **{key: stored[key].astype(float) for key in ("g_a", "g_b")},
            label=stored["label"],
            tau_label=float(stored["tau_label"]), seed=int(stored["seed"]), model=str(stored["model"]))
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name} is inconsistent: {error}") from None


# --- generation -------------------------------------------------------------------------------------------

SAMPLE_ROWS = 1024
"""Continuations sampled per forward batch: large enough to keep the model busy, small enough for any memory."""


@dataclass(frozen=True, eq=False)
class PairProgress:
    """How far `iter_make_pairs` has got; the last report carries the data set."""

    done: int
    """Continuations sampled so far (two per pair)."""
    total: int
    """Continuations to sample in all."""
    pairs: PreferencePairs | None = None
    """The finished, labelled pairs, on the last report only."""


def iter_make_pairs(settings: PairSettings = PairSettings(), policy=None, tokenizer=None, prompts=None):
    """Seed 001's lab data: pairs of T-token continuations from the language model, scored by g, labelled by eq. 12.

    Pair i takes a prompt x (every prompt used equally often, in a seeded order), samples
    y_a and y_b from pi(. | x) at temperature 1 with end-of-text banned (the live run's
    `sample_replies`), scores both with g and draws the label with
    P(y_a > y_b) = sigma((g(y_a) - g(y_b)) / tau_label). `policy` and `tokenizer` may be
    given (a model already in memory); otherwise `settings.model` is loaded. Yields a
    PairProgress after each sampled batch.
    """
    s = settings
    device = resolve_device(s.device)
    if policy is None:
        policy, tokenizer = load_causal_lm(s.model, device)
    policy = policy.to(device).eval()
    prompts = load_prompts() if prompts is None else tuple(prompts)
    order_seed, sample_seed = np.random.SeedSequence(s.seed).generate_state(2)
    chosen = np.random.default_rng(order_seed).permutation(np.resize(np.arange(len(prompts)), s.pairs))  # (n,)
    encoded = tokenizer(list(prompts))["input_ids"]
    length = np.array([len(e) for e in encoded])[chosen]  # (n,) prompt tokens of each pair
    generator = torch.Generator(device).manual_seed(int(sample_seed))
    replies = np.empty((s.pairs, 2, s.T), dtype=np.int64)  # (n, 2, T): y_a and y_b of each pair
    done = 0
    # sample_replies takes prompts of one length (no padding), so pairs are grouped by prompt length.
    for L in np.unique(length):
        rows = np.flatnonzero(length == L)
        x = torch.tensor([encoded[i] for i in chosen[rows]], dtype=torch.long).repeat_interleave(2, 0)  # (2m, L)
        y = []
        for chunk in x.split(SAMPLE_ROWS):
            y.append(sample_replies(policy, chunk.to(device), s.T, tokenizer.eos_token_id, generator).cpu())
            done += len(chunk)
            yield PairProgress(done=done, total=2 * s.pairs)
        replies[rows] = torch.cat(y).view(len(rows), 2, s.T).numpy()
    ids_a, ids_b = replies[:, 0], replies[:, 1]
    text_a = np.array(tokenizer.batch_decode(ids_a.tolist()), dtype=str)
    text_b = np.array(tokenizer.batch_decode(ids_b.tolist()), dtype=str)
    g_a, g_b = gold_score(text_a), gold_score(text_b)
    pairs = PreferencePairs(
        prompt=np.array([prompts[i] for i in chosen], dtype=str), prompt_ids=prompt_table([encoded[i] for i in chosen]),
        ids_a=ids_a, ids_b=ids_b, text_a=text_a, text_b=text_b, g_a=g_a, g_b=g_b,
        label=label_pairs(g_a, g_b, s.tau_label, s.seed), tau_label=s.tau_label, seed=s.seed, model=s.model)
    yield PairProgress(done=2 * s.pairs, total=2 * s.pairs, pairs=pairs)


def make_pairs(settings: PairSettings = PairSettings(), policy=None, tokenizer=None, prompts=None) -> PreferencePairs:
    """`iter_make_pairs` run to the end: the labelled pairs."""
    for progress in iter_make_pairs(settings, policy, tokenizer, prompts):
        pass
    return progress.pairs
