"""Train the embedded movie-review model: `feedback-lab make-embedded-model [--out DIR]`.

The live run of seed 000 section 6.11 needs a language model that continues the start of a
movie review. GPT-2 cannot be downloaded on the machines this project runs on, so the project
ships its own: a small GPT-2-architecture model (transformers' GPT2LMHeadModel) trained from
scratch on reviews written by `engines.lm.review_corpus`. This script makes it, reproducibly:

1. writes the training reviews (seeded) and the bundled prompts (train and held-out openings);
2. trains a byte-level BPE tokenizer on the reviews with the `tokenizers` library;
3. trains the model on rows that each start at the beginning of a review (as the prompts do),
   reviews separated by <|endoftext|>, with AdamW and a cosine learning-rate schedule;
4. saves config.json, model.safetensors, generation_config.json and the tokenizer files in
   Hugging Face format, so `from_pretrained(DIR)` loads it like GPT-2.

The same seed, torch version and thread count give the same files.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

import assets
from engines.lm.review_corpus import PROMPTS_DIR, openings, reviews

SOURCE_CHECKOUT = (assets.path().parent / "pyproject.toml").is_file()
"""Whether the assets in use are a source checkout's (run from it, or its editable install): only then do the
defaults rewrite them. An installed wheel's copies in site-packages are never written to."""
DEFAULT_OUT = assets.path("models", "embedded") if SOURCE_CHECKOUT else None
DEFAULT_PROMPTS_OUT = PROMPTS_DIR if SOURCE_CHECKOUT else None
EOS = "<|endoftext|>"
HELDOUT_PROMPTS = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `feedback-lab make-embedded-model`; the defaults made the shipped model."""
    required = "none: required outside a source checkout"
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"model folder to write (default: {DEFAULT_OUT or required})")
    parser.add_argument("--prompts-out", type=Path, default=DEFAULT_PROMPTS_OUT,
                        help=f"folder for train.txt and heldout.txt (default: {DEFAULT_PROMPTS_OUT or required})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the reviews, the prompts and the weights (default: 0)")
    parser.add_argument("--reviews", type=int, default=60_000, help="training reviews to generate (default: 60000)")
    parser.add_argument("--prompts", type=int, default=400, help="bundled prompts, of which 64 are held out (default: 400)")
    parser.add_argument("--vocab-size", type=int, default=1024, help="BPE vocabulary size, <|endoftext|> included (default: 1024)")
    parser.add_argument("--layers", type=int, default=4, help="transformer blocks (default: 4)")
    parser.add_argument("--width", type=int, default=128, help="embedding width (default: 128)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default: 4)")
    parser.add_argument("--positions", type=int, default=128, help="longest context in tokens (default: 128)")
    parser.add_argument("--steps", type=int, default=700, help="optimiser steps (default: 700)")
    parser.add_argument("--batch", type=int, default=32, help="rows per step (default: 32)")
    parser.add_argument("--block", type=int, default=64, help="tokens per row (default: 64)")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak AdamW learning rate (default: 0.003)")


def train_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (GPT-2's scheme) trained on `texts`, as a transformers tokenizer."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS], show_progress=False)
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=EOS, eos_token=EOS, unk_token=EOS)


def training_rows(ids: list[list[int]], eos: int, block: int):
    """The token stream (reviews each followed by EOS) and the offset where each review starts."""
    stream = np.fromiter((t for review in ids for t in (*review, eos)), dtype=np.int64)
    starts = np.cumsum([0] + [len(review) + 1 for review in ids[:-1]])
    return torch.from_numpy(stream), starts[starts + block + 1 <= len(stream)]


def run(args: argparse.Namespace) -> int:
    """Generate the corpus and prompts, train tokenizer and model, write them to args.out."""
    if args.out is None or args.prompts_out is None:
        print("feedback-lab make-embedded-model: error: this Feedback Lab is an installed package, whose bundled model "
              "is not rewritten; give --out DIR and --prompts-out DIR.", file=sys.stderr)
        return 2
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()

    texts = reviews(args.reviews, seed=args.seed)
    prompts = openings(args.prompts, seed=args.seed + 1)
    args.prompts_out.mkdir(parents=True, exist_ok=True)
    (args.prompts_out / "train.txt").write_text("\n".join(prompts[HELDOUT_PROMPTS:]) + "\n", encoding="utf-8")
    (args.prompts_out / "heldout.txt").write_text("\n".join(prompts[:HELDOUT_PROMPTS]) + "\n", encoding="utf-8")

    tokenizer = train_tokenizer(texts, args.vocab_size)
    eos = tokenizer.convert_tokens_to_ids(EOS)
    stream, starts = training_rows(tokenizer(texts)["input_ids"], eos, args.block)
    print(f"{len(texts)} reviews, {len(stream):,} tokens, vocabulary {len(tokenizer)}", file=sys.stderr)

    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=args.positions, n_embd=args.width, n_layer=args.layers,
        n_head=args.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=eos, eos_token_id=eos,
    )
    model = GPT2LMHeadModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, args.steps // 20)

    def lr_at(step: int) -> float:  # linear warm-up, then cosine decay to a tenth of the peak
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    offsets = torch.arange(args.block + 1)
    model.train()
    for step in range(args.steps):
        rows = stream[torch.from_numpy(rng.choice(starts, args.batch))[:, None] + offsets]  # (batch, block+1)
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        loss = model(rows, labels=rows).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  {time.perf_counter() - started:6.0f} s", file=sys.stderr, flush=True)

    model.eval()
    model.generation_config = GenerationConfig(bos_token_id=eos, eos_token_id=eos, do_sample=True, top_k=0)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    size = sum(p.stat().st_size for p in args.out.iterdir() if p.is_file())
    print(f"saved {args.out} ({size / 1e6:.1f} MB) in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="feedback-lab make-embedded-model", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
