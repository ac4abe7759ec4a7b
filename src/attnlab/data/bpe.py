"""Byte-level BPE tokenizer (minbpe semantics, incremental training).

Training gives exactly the merges of minbpe's RegexTokenizer: at each step the most
frequent adjacent pair over all chunks wins, and ties go to the pair that occurs
first in the token sequence. Instead of recounting everything per merge, unique
chunks ("words") are laid out once in order of first appearance, each slot weighted
by its word's frequency, and only the slots next to a merged pair are updated.
"""
from __future__ import annotations

import heapq
import json
from collections import Counter
from pathlib import Path

import regex

PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "none": None,
}


def _to_bytes(s: str) -> bytes:
    # surrogateescape: strings made by encode_bytes carry raw bytes as lone surrogates
    return s.encode("utf-8", errors="surrogateescape")


class Tokenizer:
    """Byte-level BPE with no pre-split: the whole text is one chunk."""

    pattern = "none"

    def __init__(self):
        self.merges: dict[tuple[int, int], int] = {}  # pair -> new id, in merge order
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}
        self._cache: dict[str, list[int]] = {}

    def split(self, text: str) -> list[str]:
        return [text] if text else []

    # ---- training ----------------------------------------------------------------

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        if vocab_size < 256:
            raise ValueError(f"vocab_size must be at least 256, got {vocab_size}")
        words = Counter(self.split(text))  # insertion order = first appearance
        # flat slot arrays over all unique words; -1 marks a word boundary
        tok, nxt, prv, weight = [], [], [], []
        for word, freq in words.items():
            b = _to_bytes(word)
            start = len(tok)
            tok.extend(b)
            weight.extend([freq] * len(b))
            nxt.extend(range(start + 1, start + len(b) + 1))
            prv.extend(range(start - 1, start + len(b) - 1))
            nxt[-1], prv[start] = -1, -1
        counts: dict[tuple[int, int], int] = {}
        where: dict[tuple[int, int], set[int]] = {}  # pair -> left slots where it occurs
        for i, j in enumerate(nxt):
            if j != -1:
                p = (tok[i], tok[j])
                counts[p] = counts.get(p, 0) + weight[i]
                where.setdefault(p, set()).add(i)

        def add(i, j, w):
            p = (tok[i], tok[j])
            counts[p] = counts.get(p, 0) + w
            where.setdefault(p, set()).add(i)

        def remove(i, j, w):
            p = (tok[i], tok[j])
            counts[p] -= w
            where[p].discard(i)
            if counts[p] == 0:
                del counts[p], where[p]

        self.merges, self.vocab, self._cache = {}, {i: bytes([i]) for i in range(256)}, {}
        for idx in range(256, vocab_size):
            if not counts:
                break  # every chunk is a single token; nothing left to merge
            best = max(counts.values())
            tied = [p for p, c in counts.items() if c == best]
            # first occurrence in the token sequence = lowest slot, since words are in order
            pair = min(tied, key=lambda p: min(where[p])) if len(tied) > 1 else tied[0]
            a, b = pair
            for i in sorted(where[pair]):
                j = nxt[i]
                if tok[i] != a or j == -1 or tok[j] != b:
                    continue  # consumed by an overlapping merge just before (e.g. 'aaa')
                w, left, right = weight[i], prv[i], nxt[j]
                if left != -1:
                    remove(left, i, w)
                if right != -1:
                    remove(j, right, w)
                remove(i, j, w)
                tok[i], tok[j] = idx, -1
                nxt[i] = right
                if right != -1:
                    prv[right] = i
                if left != -1:
                    add(left, i, w)
                if right != -1:
                    add(i, right, w)
            self.merges[pair] = idx
            self.vocab[idx] = self.vocab[a] + self.vocab[b]
            if verbose:
                print(f"merge {idx - 255}: {pair} -> {idx} {self.vocab[idx]!r} ({best})")

    # ---- encoding ----------------------------------------------------------------

    def _encode_chunk(self, b: bytes) -> list[int]:
        """Apply merges lowest rank first, each left to right: same result as minbpe."""
        ids = list(b)
        if len(ids) < 2 or not self.merges:
            return ids
        nxt = list(range(1, len(ids) + 1))
        nxt[-1] = -1
        prv = list(range(-1, len(ids) - 1))
        heap = [(self.merges[p], i) for i, p in enumerate(zip(ids, ids[1:])) if p in self.merges]
        heapq.heapify(heap)
        # a merge only ever creates pairs of higher rank, so popping by (rank, position)
        # reproduces minbpe's "lowest rank pair, all occurrences, left to right"
        while heap:
            rank, i = heapq.heappop(heap)
            j = nxt[i]
            if ids[i] == -1 or j == -1 or self.merges.get((ids[i], ids[j])) != rank:
                continue  # stale entry
            ids[i], ids[j] = rank, -1
            nxt[i] = nxt[j]
            if nxt[i] != -1:
                prv[nxt[i]] = i
                r = self.merges.get((rank, ids[nxt[i]]))
                if r is not None:
                    heapq.heappush(heap, (r, i))
            if prv[i] != -1:
                r = self.merges.get((ids[prv[i]], rank))
                if r is not None:
                    heapq.heappush(heap, (r, prv[i]))
        return [t for t in ids if t != -1]

    def encode(self, text: str) -> list[int]:
        out = []
        for chunk in self.split(text):
            ids = self._cache.get(chunk)
            if ids is None:
                ids = self._encode_chunk(_to_bytes(chunk))
                if len(chunk) < 256:  # keep the cache to word-sized chunks
                    self._cache[chunk] = ids
            out.extend(ids)
        return out

    def encode_bytes(self, data: bytes) -> list[int]:
        """Encode any byte string; invalid UTF-8 rides through as surrogate escapes."""
        return self.encode(data.decode("utf-8", errors="surrogateescape"))

    def decode_bytes(self, ids: list[int]) -> bytes:
        return b"".join(self.vocab[i] for i in ids)

    def decode(self, ids: list[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # ---- persistence -------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        payload = {
            "format": "attnlab-bpe-1",
            "pattern": self.pattern,
            "regex": PATTERNS[self.pattern],
            "merges": [list(p) for p in self.merges],  # merge k creates id 256 + k
        }
        Path(path).write_text(json.dumps(payload) + "\n")

    @staticmethod
    def load(path: str | Path) -> "Tokenizer":
        data = json.loads(Path(path).read_text())
        tok = RegexTokenizer(data["pattern"])
        for idx, (a, b) in enumerate(data["merges"], start=256):
            tok.merges[(a, b)] = idx
            tok.vocab[idx] = tok.vocab[a] + tok.vocab[b]
        return tok


class RegexTokenizer(Tokenizer):
    """BPE over the chunks of a pre-split pattern: 'gpt2', 'gpt4' or 'none'."""

    def __init__(self, pattern: str = "gpt2"):
        super().__init__()
        if pattern not in PATTERNS:
            raise ValueError(f"unknown pattern {pattern!r}; choose one of {sorted(PATTERNS)}")
        self.pattern = pattern
        self._regex = regex.compile(PATTERNS[pattern]) if PATTERNS[pattern] else None

    def split(self, text: str) -> list[str]:
        return self._regex.findall(text) if self._regex else super().split(text)
