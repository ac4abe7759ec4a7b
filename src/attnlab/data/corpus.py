"""Fetch and check the training corpus: one clear error line for every bad input."""
from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from pathlib import Path

from attnlab.errors import AttnlabError


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: Path, expected_sha256: str | None = None) -> None:
    """Download `url` to `dest` atomically; a bad or partial download never lands at `dest`."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".part{os.getpid()}")
    print(f"downloading {url} -> {dest}", file=sys.stderr)
    try:
        with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as f:
            total = resp.headers.get("Content-Length")
            n = 0
            for block in iter(lambda: resp.read(1 << 16), b""):
                f.write(block)
                n += len(block)
        print(f"downloaded {n:,} bytes" + (f" of {int(total):,}" if total else ""), file=sys.stderr)
        if expected_sha256 is not None:
            got = sha256_file(tmp)
            if got != expected_sha256:
                raise AttnlabError(f"download from {url} has sha256 {got}, expected {expected_sha256}")
        os.replace(tmp, dest)
    except (OSError, ValueError) as err:  # URLError/HTTPError/timeouts are OSErrors; bad URLs ValueErrors
        raise AttnlabError(f"could not download corpus from {url} to {dest}: {err}; to use a copy on this machine "
                           f"instead, set data.path in the profile to it") from None
    finally:
        tmp.unlink(missing_ok=True)


def read_text(path: Path, expected_sha256: str | None, key: str = "data.path") -> str:
    """Read `path` as UTF-8 text, checking it is a non-empty file matching the checksum; `key` is the setting
    that names it (data.path, or data.url for the copy downloaded from it), so each error line says what to fix."""
    def bad(msg):
        return AttnlabError(f"config error at '{key}': {msg}")

    if path.is_dir():
        raise bad(f"{path} is a folder; give the corpus file itself")
    if not path.is_file():
        raise bad(f"corpus file not found: {path}")
    data = path.read_bytes()
    if not data:
        raise bad(f"corpus file is empty: {path}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        where = f"byte 0x{data[err.start]:02x} at offset {err.start}"
        raise bad(f"corpus file is not valid UTF-8: {path} ({where})") from None
    if expected_sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != expected_sha256:
            raise bad(f"corpus checksum mismatch for {path}: data.sha256 is {expected_sha256}, the file's is {got}")
    return text


def load_corpus(data_cfg: dict, cache_dir: Path) -> str:
    """The corpus text: from data_cfg['path'] if set, else downloaded once into cache_dir."""
    expected = data_cfg.get("sha256")
    if data_cfg.get("path"):
        return read_text(Path(data_cfg["path"]), expected)
    dest = Path(cache_dir) / "input.txt"
    if not dest.is_file():
        download(data_cfg["url"], dest, expected)
    return read_text(dest, expected, key="data.url")
