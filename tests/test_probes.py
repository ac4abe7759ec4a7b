import math

import pytest
import torch

from attnlab.probes import AttentionProbe, max_entropy, summarise
from attnlab.nn.attention import attention
from attnlab.nn.model import build
from attnlab.nn.spec import ModelSpec


def head(d_k: int, scale: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    return build(ModelSpec(vocab_size=256, d_model=128, context=64, mixer="head", position="learned",
                           mlp=True, norm="none", d_k=d_k, scale=scale))


def probe_at_init(model) -> dict:
    tokens = torch.randint(0, 256, (8 * 64 + 1,), generator=torch.Generator().manual_seed(1))
    return AttentionProbe(tokens, 64, every=1)(0, model, float("nan"))


def test_undivided_wide_head_starts_with_std_21_and_saturated_rows():
    """Var(q.k) = d_k * (2/3)^2 for nn.Linear's default init on two N(0,1) embeddings: sqrt(1024*4/9) = 21.3."""
    raw, div = probe_at_init(head(1024, False)), probe_at_init(head(1024, True))
    assert raw["score_std_0"] == pytest.approx(math.sqrt(1024 * 4 / 9), rel=0.1)
    assert div["score_std_0"] == pytest.approx(raw["score_std_0"] / 32, rel=1e-4)
    assert raw["saturated_0"] > 0.5 > div["saturated_0"]
    assert raw["entropy_0"] < div["entropy_0"] < max_entropy(64)
    assert raw["loss"] is None  # no loss before the first step


def test_probe_restores_the_model():
    model = head(32, True).train()
    probe_at_init(model)
    assert model.training and all(not getattr(m, "keep_weights", False) for m in model.modules())


def test_uniform_rows_have_maximal_entropy_and_no_saturation():
    q = k = torch.zeros(1, 1, 5, 3)
    kept = {}
    attention(q, k, torch.randn(1, 1, 5, 2), keep=kept)
    s = summarise(kept)
    assert s["entropy"] == pytest.approx(max_entropy(5)) and s["saturated"] == pytest.approx(1 / 5)
