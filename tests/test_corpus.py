import hashlib
import json

import pytest

from attnlab.data.bpe import Tokenizer
from attnlab.data.corpus import load_corpus, sha256_file
from attnlab.data.prepare import load_tokens, prepare
from attnlab.errors import AttnlabError
from conftest import SHA256

STATS_KEYS = {"n_chars", "n_tokens", "n_train", "n_val", "chars_per_token", "tokenizer_seconds",
              "encode_seconds", "vocab_size", "n_merges", "pattern", "sha256", "first_merges", "provenance"}


def make_cfg(path, sha256, vocab_size=300, url="http://invalid"):
    data = {"url": url, "sha256": sha256, "path": None if path is None else str(path),
            "vocab_size": vocab_size, "pattern": "gpt2", "val_fraction": 0.1}
    return {"profile": "smoke", "seed": 0, "data": data}


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def small_corpus(corpus_path, tmp_path):
    text = corpus_path.read_text(encoding="utf-8")[:8_000]
    path = tmp_path / "small.txt"
    path.write_text(text, encoding="utf-8")
    return path, text


def bad_corpora(tmp_path):
    """(name, path, sha256, words the error must contain) for every kind of bad corpus."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("First Citizen: caf\u00e9".encode("latin-1"))
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("Before we proceed any further, hear me speak.\n")
    folder = tmp_path / "folder"
    folder.mkdir(exist_ok=True)
    return [
        ("missing", tmp_path / "nope.txt", SHA256, ["not found"]),
        ("folder", folder, SHA256, ["is a folder; give the corpus file itself"]),
        ("empty", empty, SHA256, ["empty"]),
        ("not-utf8", latin, SHA256, ["not valid UTF-8", "offset 18", "0xe9"]),
        ("checksum", wrong, SHA256, ["checksum mismatch", SHA256, sha256_file(wrong)]),
    ]


KINDS = ["missing", "folder", "empty", "not-utf8", "checksum"]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_corpus_one_clear_line(tmp_path, kind):
    _, path, digest, words = next(c for c in bad_corpora(tmp_path) if c[0] == kind)
    with pytest.raises(AttnlabError) as err:
        load_corpus(make_cfg(path, digest)["data"], tmp_path / "cache")
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and msg.startswith("config error at 'data.path': ")
    for word in words:
        assert word in msg
    assert not (tmp_path / "cache").exists()


def test_good_corpus_and_sha256_file(small_corpus, tmp_path):
    path, text = small_corpus
    assert sha256_file(path) == sha(text.encode())
    assert load_corpus(make_cfg(path, sha(text.encode()))["data"], tmp_path) == text


def test_download_once_into_cache(small_corpus, tmp_path):
    src, text = small_corpus
    cache = tmp_path / "cache"
    data = make_cfg(None, sha(text.encode()), url=src.as_uri())["data"]
    assert load_corpus(data, cache) == text
    assert (cache / "input.txt").read_text() == text
    src.unlink()  # a second load must not need the source again
    assert load_corpus(data, cache) == text
    assert sorted(p.name for p in cache.iterdir()) == ["input.txt"]


def test_download_failures(small_corpus, tmp_path):
    src, text = small_corpus
    cache = tmp_path / "cache"
    gone = (tmp_path / "gone.txt").as_uri()
    with pytest.raises(AttnlabError, match="could not download corpus from .*gone.txt"):
        load_corpus(make_cfg(None, SHA256, url=gone)["data"], cache)
    with pytest.raises(AttnlabError, match="could not download corpus from not-a-url"):
        load_corpus(make_cfg(None, SHA256, url="not-a-url")["data"], cache)
    with pytest.raises(AttnlabError, match=f"expected {SHA256}"):
        load_corpus(make_cfg(None, SHA256, url=src.as_uri())["data"], cache)
    assert list(cache.iterdir()) == []  # no partial or unverified file left behind


def test_a_bad_downloaded_copy_names_the_url_it_came_from(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "input.txt").write_text("not the corpus\n")
    with pytest.raises(AttnlabError, match=r"^config error at 'data.url': corpus checksum mismatch for .*input.txt"):
        load_corpus(make_cfg(None, SHA256)["data"], cache)


@pytest.mark.parametrize("kind", KINDS)
def test_prepare_bad_corpus_writes_nothing(tmp_path, kind):
    _, path, digest, words = next(c for c in bad_corpora(tmp_path / "in") if c[0] == kind)
    out = tmp_path / "out"
    out.mkdir()
    (out / "stats.json").write_text('{"n_tokens": 123}\n')
    (out / "train.bin").write_bytes(b"\x01\x00")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(AttnlabError, match=words[0]):
        prepare(make_cfg(path, digest), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_prepare_rejects_vocab_beyond_uint16(small_corpus, tmp_path):
    path, text = small_corpus
    with pytest.raises(AttnlabError, match="uint16"):
        prepare(make_cfg(path, sha(text.encode()), vocab_size=70_000), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_prepare_small_corpus(small_corpus, tmp_path):
    path, text = small_corpus
    out = tmp_path / "out"
    stats = prepare(make_cfg(path, sha(text.encode())), out)
    assert sorted(p.name for p in out.iterdir()) == ["stats.json", "tokenizer.json", "train.bin", "val.bin"]
    on_disk = json.loads((out / "stats.json").read_text())
    assert set(on_disk) == STATS_KEYS and on_disk["n_tokens"] == stats["n_tokens"]
    assert stats["n_chars"] == len(text)
    assert stats["n_train"] + stats["n_val"] == stats["n_tokens"]
    assert stats["n_val"] == int(stats["n_tokens"] * 0.1)
    assert stats["vocab_size"] == 300 and stats["n_merges"] == 44 and len(stats["first_merges"]) == 12
    assert stats["provenance"]["profile"] == "smoke" and stats["provenance"]["seed"] == 0
    train, val = load_tokens(out, "train"), load_tokens(out, "val")
    assert (len(train), len(val)) == (stats["n_train"], stats["n_val"])
    assert str(train.dtype) == "torch.int64" and int(train.max()) < 300
    tok = Tokenizer.load(out / "tokenizer.json")
    assert tok.decode(train.tolist() + val.tolist()) == text


def test_load_tokens_errors(tmp_path):
    with pytest.raises(AttnlabError, match="unknown split"):
        load_tokens(tmp_path, "test")
    with pytest.raises(AttnlabError, match="not found"):
        load_tokens(tmp_path, "train")
