import math

import pytest
import torch
import torch.nn.functional as F

from attnlab.config import load
from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import build
from attnlab.config import spec_from_config
from attnlab.nn.spec import ModelSpec
from attnlab.nn.attention import causal_mask
from attnlab.nn.model import Average, param_breakdown
from helpers import assert_causal

SMOKE = load("config/smoke.yaml")
ROWS = list(SMOKE["ladder"])


def small(row: str, **over) -> ModelSpec:
    return ModelSpec(**{**spec_from_config(SMOKE, row).to_dict(), "vocab_size": 64, "d_model": 16,
                        "context": 12, **over})


@pytest.mark.parametrize("row", ROWS)
def test_no_future_leakage(row):
    """Changing token t+1 leaves every output at positions <= t unchanged, for every mixer."""
    torch.manual_seed(0)
    # a context-free model (L1) cannot react to the change at all
    assert_causal(build(small(row)).eval(), 64, 12, row, reacts=row != "L1")


@pytest.mark.parametrize("row", ROWS)
def test_breakdown_sums_to_total(row):
    model = build(small(row))
    assert sum(param_breakdown(model).values()) == sum(p.numel() for p in model.parameters())


def test_chapter_parameter_costs():
    cfg = load("config/chapter.yaml")
    n = {row: sum(p.numel() for p in build(spec_from_config(cfg, row)).parameters()) for row in cfg["ladder"]}
    assert n["L7"] - n["L6"] == 16_512  # W_o: 128*128 + 128
    assert n["L9"] - n["L8"] == 768  # three LayerNorms of 2*128


def test_average_is_prefix_mean():
    x = torch.randn(3, 7, 5)
    expected = torch.stack([x[:, : t + 1].mean(1) for t in range(7)], dim=1)
    torch.testing.assert_close(Average()(x), expected)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("t_q,t_k", [(6, 6), (4, 9)])
def test_core_matches_pytorch(causal, t_q, t_k):
    q, k, v = torch.randn(2, 3, t_q, 8), torch.randn(2, 3, t_k, 8), torch.randn(2, 3, t_k, 5)
    ours, w = attention(q, k, v, causal=causal)
    # our causal mask aligns the last query with the last key (PyTorch's is_causal aligns top-left)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(t_q, t_k) if causal else None)
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, t_q))


def test_fully_masked_row_is_zero_not_nan():
    q = k = v = torch.randn(1, 1, 3, 4)
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, False]])
    out, w = attention(q, k, v, causal=False, mask=mask)
    assert not torch.isnan(out).any()
    assert torch.equal(out[0, 0, 1], torch.zeros(4))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_minus_inf_mask_survives_low_precision(dtype):
    q = k = v = torch.randn(1, 2, 5, 4).to(dtype)
    _, w = attention(q, k, v)
    assert torch.all(w.triu(1) == 0)
    assert torch.isneginf(torch.tensor(float("-inf")).to(dtype))


def test_wrong_mask_shape_is_named():
    q = torch.randn(1, 1, 3, 4)
    with pytest.raises(AttnlabError, match=r"mask has shape \(3, 4\)"):
        attention(q, q, q, mask=torch.ones(3, 4, dtype=torch.bool))


@pytest.mark.parametrize("over,match", [
    ({"mixer": "convolution"}, "unknown mixer 'convolution'"),
    ({"position": "spiral"}, "unknown position encoding 'spiral'"),
    ({"norm": "middle"}, "unknown norm placement 'middle'"),
    ({"mixer": "multihead", "n_heads": 3}, "n_heads=3 does not divide d_model=16"),
    ({"position": "learned", "max_positions": 8}, "context 12 is longer than the position table"),
    ({"d_model": 0}, "d_model must be a positive integer, got 0"),
    ({"d_k": 0}, "d_k must be a positive integer, got 0"),
    ({"n_heads": -2}, "n_heads must be a positive integer, got -2"),
])
def test_bad_spec_is_named(over, match):
    with pytest.raises(AttnlabError, match=match):
        small("L9", **over)


def test_longer_input_than_position_table():
    model = build(small("L9"))
    with pytest.raises(AttnlabError, match="longer than the position table"):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_initial_loss_is_near_uniform():
    torch.manual_seed(0)
    model = build(small("L9"))
    x = torch.randint(0, 64, (4, 12))
    _, loss = model(x, x)
    assert abs(loss.item() - math.log(64)) < 1.5
