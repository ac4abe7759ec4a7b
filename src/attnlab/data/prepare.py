"""Corpus -> BPE tokenizer -> train.bin / val.bin (uint16) + tokenizer.json + stats.json."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

from attnlab import layout, provenance
from attnlab.data.bpe import RegexTokenizer
from attnlab.data.corpus import load_corpus
from attnlab.errors import AttnlabError

SPLITS = ("train", "val")


def _log(msg: str) -> None:
    print(f"[prepare] {msg}", file=sys.stderr)


def prepare(cfg: dict, out_dir: Path) -> dict:
    """Tokenize the corpus into out_dir and return the stats written to stats.json."""
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    data = cfg["data"]
    vocab_size = data["vocab_size"]
    if vocab_size > 65536:  # token ids are stored as uint16
        raise AttnlabError(f"data.vocab_size {vocab_size} does not fit uint16 token files (max 65536)")

    text = load_corpus(data, cache_dir=out_dir)  # all validation happens here, before any training
    _log(f"corpus: {len(text):,} chars, sha256 ok")

    t0 = time.perf_counter()
    tok = RegexTokenizer(data["pattern"])
    tok.train(text, vocab_size)
    tokenizer_seconds = time.perf_counter() - t0
    _log(f"tokenizer: {len(tok.merges)} merges ({data['pattern']} pattern) in {tokenizer_seconds:.2f}s")

    t0 = time.perf_counter()
    ids = np.array(tok.encode(text), dtype=np.uint16)
    encode_seconds = time.perf_counter() - t0
    n_tokens = len(ids)
    n_val = int(n_tokens * data["val_fraction"])
    n_train = n_tokens - n_val
    _log(f"encode: {n_tokens:,} tokens ({len(text) / n_tokens:.2f} chars/token) in {encode_seconds:.2f}s")

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / layout.STATS_FILE).unlink(missing_ok=True)  # stale stats must not describe new token files
    provenance.replace_into(out_dir / "train.bin", ids[:n_train].tofile)
    provenance.replace_into(out_dir / "val.bin", ids[n_train:].tofile)
    provenance.replace_into(out_dir / "tokenizer.json", tok.save)
    stats = {
        "n_chars": len(text),
        "n_tokens": n_tokens,
        "n_train": n_train,
        "n_val": n_val,
        "chars_per_token": round(len(text) / n_tokens, 4),
        "tokenizer_seconds": round(tokenizer_seconds, 3),
        "encode_seconds": round(encode_seconds, 3),
        "vocab_size": len(tok.vocab),
        "n_merges": len(tok.merges),
        "pattern": data["pattern"],
        "sha256": data["sha256"],
        "first_merges": [tok.vocab[i].decode("utf-8", errors="replace") for i in list(tok.merges.values())[:12]],
    }
    stats["provenance"] = provenance.record(cfg, device="cpu", wall_seconds=time.perf_counter() - t_start)
    provenance.write_json(out_dir / layout.STATS_FILE, stats)  # written last: its presence means done
    _log(f"wrote {n_train:,} train / {n_val:,} val tokens to {out_dir}")
    return stats


def load_tokens(out_dir: Path, split: str) -> torch.Tensor:
    """The token ids of one split as an int64 tensor."""
    if split not in SPLITS:
        raise AttnlabError(f"unknown split {split!r}; expected one of {SPLITS}")
    path = Path(out_dir) / f"{split}.bin"
    if not path.is_file():
        raise AttnlabError(f"token file not found: {path} (run data preparation first)")
    return torch.from_numpy(np.fromfile(path, dtype=np.uint16).astype(np.int64))
