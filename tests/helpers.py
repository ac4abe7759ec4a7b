"""Small shared builders for tests: a tiny profile and token files that need no tokenizer."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import yaml

from attnlab.config import load

REPO = Path(__file__).resolve().parents[1]


def tiny_config(**train) -> dict:
    cfg = copy.deepcopy(load(REPO / "config" / "smoke.yaml"))
    cfg["model"].update(d_model=16, context=8)
    cfg["data"]["vocab_size"] = 300  # the smallest BPE worth training; tokens stay below 64
    cfg["train"].update({"steps": 30, "batch_size": 4, "eval_every": 10, "eval_windows": 2, "ckpt_every": 5,
                         "train_eval_tokens": 512, **train})
    return cfg


def write_config(cfg: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_tokens(data_dir: Path, vocab: int = 64, n_train: int = 4000, n_val: int = 600, seed: int = 0) -> Path:
    """Random-but-learnable token files (a repeating pattern with noise) in the layout prepare() writes."""
    rng = np.random.default_rng(seed)
    pattern = rng.integers(0, vocab, 17)
    stream = np.resize(pattern, n_train + n_val)
    noise = rng.random(len(stream)) < 0.2
    stream[noise] = rng.integers(0, vocab, noise.sum())
    data_dir.mkdir(parents=True, exist_ok=True)
    stream[:n_train].astype(np.uint16).tofile(data_dir / "train.bin")
    stream[n_train:].astype(np.uint16).tofile(data_dir / "val.bin")
    (data_dir / "stats.json").write_text(json.dumps({"n_train": n_train, "n_val": n_val}))
    return data_dir


def site_for(root: Path, cfg: dict):
    """A report Site over the results under `root`, with the project's whole claims registry."""
    from attnlab.report.claims import evaluate_all, gather, load_registry
    from attnlab.report.site import Site

    registry = load_registry(REPO / "claims")
    res = gather(root)
    return Site(res, registry, evaluate_all(registry, res), cfg)


def assert_causal(model, vocab: int, T: int, label: str, reacts: bool = True) -> None:
    """Changing token t+1 leaves every output at positions <= t unchanged (and, if `reacts`, changes later ones)."""
    import torch

    x = torch.randint(0, vocab, (2, T))
    base, _ = model(x)
    for t in range(T - 1):
        y = x.clone()
        y[:, t + 1] = (y[:, t + 1] + 1 + torch.arange(2)) % vocab
        out, _ = model(y)
        assert torch.equal(out[:, : t + 1], base[:, : t + 1]), f"{label}: position <= {t} saw token {t + 1}"
        if reacts:
            assert not torch.equal(out[:, t + 1 :], base[:, t + 1 :]), f"{label}: ignores token {t + 1}"


def rendered_page(site, name: str, blocks) -> str:
    """docs/<name>.md rendered with `blocks(site)`; fails if any marker is left unfilled."""
    from attnlab.report.site import MARKER, render

    template = (REPO / "docs" / f"{name}.md").read_text()
    filled = blocks(site)
    assert set(MARKER.findall(template)) <= set(filled), set(MARKER.findall(template)) - set(filled)
    text = render(template, filled, f"{name}.md")
    assert "<!-- attnlab:" not in text
    return text
