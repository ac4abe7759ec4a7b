import random

import pytest
import regex

from attnlab.data.bpe import PATTERNS, RegexTokenizer, Tokenizer
from attnlab.data.prepare import load_tokens, prepare
from conftest import SHA256


# ---- a deliberately naive reference: minbpe's training/encoding loop, recounting every step


def _stats(ids, counts):
    for p in zip(ids, ids[1:]):
        counts[p] = counts.get(p, 0) + 1


def _merge(ids, pair, idx):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _chunks(text, pattern):
    return regex.findall(PATTERNS[pattern], text) if PATTERNS[pattern] else [text]


def naive_train(text, vocab_size, pattern):
    ids = [list(c.encode()) for c in _chunks(text, pattern)]
    merges = {}
    for idx in range(256, vocab_size):
        counts = {}
        for chunk in ids:
            _stats(chunk, counts)
        if not counts:
            break
        pair = max(counts, key=counts.get)  # ties: first inserted = first occurrence
        merges[pair] = idx
        ids = [_merge(chunk, pair, idx) for chunk in ids]
    return merges


def naive_encode(text, merges, pattern):
    out = []
    for chunk in _chunks(text, pattern):
        ids = list(chunk.encode())
        while len(ids) >= 2:
            counts = {}
            _stats(ids, counts)
            pair = min(counts, key=lambda p: merges.get(p, float("inf")))
            if pair not in merges:
                break
            ids = _merge(ids, pair, merges[pair])
        out.extend(ids)
    return out


# ---- fixtures


@pytest.fixture(scope="module")
def text(corpus_path):
    return corpus_path.read_text(encoding="utf-8")


@pytest.fixture(scope="module", params=["gpt2", "gpt4", "none"])
def small_tok(request, text):
    tok = RegexTokenizer(request.param)
    tok.train(text[:20_000], 400)
    return tok


# ---- small, exact checks


def test_tie_rule_first_occurrence_wins():
    # chunks 'ab', ' ba', ' ba', ' ab': (a,b), ( ,b) and (b,a) all occur twice.
    # The winner is the pair seen first, (a,b) -- not the smallest pair ( ,b), not the
    # largest (b,a), and not a pair of the most frequent word ' ba'.
    tok = RegexTokenizer("gpt2")
    tok.train("ab ba ba ab", 259)
    a, b, sp = ord("a"), ord("b"), ord(" ")
    # then ( ,b) and (b,a) tie inside ' ba'; ( ,b) comes first in the word
    assert list(tok.merges.items()) == [((a, b), 256), ((sp, b), 257), ((257, a), 258)]
    assert tok.merges == naive_train("ab ba ba ab", 259, "gpt2")


def test_overlapping_pairs_merge_left_to_right():
    tok = Tokenizer()
    tok.train("aaaaa", 258)
    assert list(tok.merges) == [(97, 97), (256, 256)]
    assert tok.encode("aaaaa") == [257, 97]
    assert tok.encode("aaa") == [256, 97]


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4", "none"])
def test_matches_naive_minbpe_loop(text, pattern):
    sample = text[10_000:14_000]
    tok = RegexTokenizer(pattern)
    tok.train(sample, 320)
    ref = naive_train(sample, 320, pattern)
    assert list(tok.merges.items()) == list(ref.items())
    other = text[50_000:52_000]
    assert tok.encode(other) == naive_encode(other, ref, pattern)


@pytest.mark.parametrize("seed,length", [(0, 0), (1, 1), (2, 17), (3, 500), (4, 4096)])
def test_round_trip_random_bytes(small_tok, seed, length):
    data = random.Random(seed).randbytes(length)
    assert small_tok.decode_bytes(small_tok.encode_bytes(data)) == data


@pytest.mark.parametrize(
    "data",
    [
        bytes(range(256)),
        bytes(range(255, -1, -1)) * 2,
        b"First Citizen:\xff\xfe\nBefore we \xc3 proceed",  # stray and truncated sequences
        b"\xed\xa0\x80 encoded surrogate, \xf4\x90\x80\x80 beyond U+10FFFF, \xc0\xaf overlong",
        "caf\u00e9 \u4f60\u597d \U0001f642".encode() + b"\x80\x80 's 've",
    ],
)
def test_round_trip_odd_bytes(small_tok, data):
    ids = small_tok.encode_bytes(data)
    assert all(0 <= i < len(small_tok.vocab) for i in ids)
    assert small_tok.decode_bytes(ids) == data


def test_round_trip_unicode(small_tok):
    s = "Héllo wörld! 你好 🙂 naïve ’tis   \t\n\r\n  O Romeo, Romeo 123456789 it's we'LL"
    assert small_tok.decode(small_tok.encode(s)) == s


def test_save_load_identical(small_tok, text, tmp_path):
    path = tmp_path / "tok.json"
    small_tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.pattern == small_tok.pattern
    assert loaded.merges == small_tok.merges and loaded.vocab == small_tok.vocab
    sample = text[100_000:130_000]
    assert loaded.encode(sample) == small_tok.encode(sample)


# ---- the measured numbers on the full corpus (C0.2)


@pytest.fixture(scope="module")
def prepared(corpus_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("prepared")
    data = {"url": "http://invalid", "sha256": SHA256, "path": str(corpus_path),
            "vocab_size": 1024, "pattern": "gpt2", "val_fraction": 0.1}
    stats = prepare({"profile": "test", "seed": 0, "data": data}, out)
    return out, stats


def test_full_corpus_gpt2_numbers(prepared, text):
    out, stats = prepared
    assert stats["n_chars"] == 1_115_394
    assert stats["n_tokens"] == 459_760
    assert (stats["n_train"], stats["n_val"]) == (413_784, 45_976)
    assert stats["chars_per_token"] == 2.426
    assert stats["n_merges"] == 768 and stats["vocab_size"] == 1024
    assert stats["first_merges"] == [" t", "he", " a", "ou", " s", " m", "in", " w", "re", "ha", "nd", " the"]
    train, val = load_tokens(out, "train"), load_tokens(out, "val")
    assert (len(train), len(val)) == (413_784, 45_976)
    tok = Tokenizer.load(out / "tokenizer.json")
    assert tok.decode(train.tolist() + val.tolist()) == text


@pytest.mark.parametrize("pattern,n_tokens", [("gpt4", 428_114), ("none", 443_727)])
def test_full_corpus_other_patterns(text, pattern, n_tokens):
    # 'none' is one 1.1M-byte chunk: about 10 s of the suite's time
    tok = RegexTokenizer(pattern)
    tok.train(text, 1024)
    assert len(tok.encode(text)) == n_tokens
