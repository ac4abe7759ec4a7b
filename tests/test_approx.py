"""S8's approximations: the blockwise sliding window is exactly the masked attention it stands for, and FAVOR+'s
random features estimate the softmax kernel without bias."""
import math

import pytest
import torch

from attnlab.errors import AttnlabError
from attnlab.nn.approx import causal_linear_attention, favor_attention, favor_features, orthogonal_features, window_attention, window_mask
from attnlab.nn.attention import attention


def qkv(n=70, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 3, n, d, generator=g, dtype=torch.float64) for _ in range(3)]


@pytest.mark.parametrize("window, n_global, block", [(1, 0, 16), (5, 0, 16), (9, 3, 8), (32, 2, 64), (100, 0, 7)])
def test_the_window_is_the_masked_attention_it_stands_for(window, n_global, block):
    q, k, v = qkv()
    dense = attention(q, k, v, causal=True, mask=window_mask(70, window, n_global), need_weights=False)[0]
    assert torch.allclose(window_attention(q, k, v, window=window, n_global=n_global, block=block), dense, atol=1e-12)


def test_a_window_as_long_as_the_sequence_is_causal_attention():
    q, k, v = qkv()
    full = attention(q, k, v, causal=True, need_weights=False)[0]
    assert torch.allclose(window_attention(q, k, v, window=70), full, atol=1e-12)


def test_the_mask_sees_the_window_the_global_tokens_and_never_the_future():
    m = window_mask(6, 2, 1)
    assert m.tolist()[5] == [True, False, False, False, True, True]
    assert not m.triu(1).any()


def test_orthogonal_features_are_orthogonal_within_a_block():
    om = orthogonal_features(16, 16, seed=0)
    directions = om / om.norm(dim=1, keepdim=True)
    assert torch.allclose(directions @ directions.T, torch.eye(16), atol=1e-5)


def test_the_random_features_estimate_the_softmax_kernel():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(4, generator=g) * 0.5, torch.randn(4, generator=g) * 0.5
    om = orthogonal_features(200_000, 4, seed=1)
    est = (favor_features(x[None], om, torch.tensor(0.0)) @ favor_features(y[None], om, torch.tensor(0.0)).T).item()
    assert est == pytest.approx(math.exp(x @ y), rel=0.02)


def test_favor_is_causal_and_closer_with_more_features():
    q, k, v = (t * 0.5 for t in qkv(n=40, d=4))
    exact = attention(q, k, v, causal=True, need_weights=False)[0]

    def err(m):
        return sum(((favor_attention(q, k, v, features=m, seed=s) - exact).norm() / exact.norm()).item()
                   for s in range(4)) / 4

    assert err(1024) < err(8) / 3
    changed = v.clone()
    changed[..., -1, :] += 1  # the last value can only change the last output
    a, b = favor_attention(q, k, v, features=16), favor_attention(q, k, changed, features=16)
    assert torch.equal(a[..., :-1, :], b[..., :-1, :])


@pytest.mark.parametrize("block", [1, 7, 16, 64])
def test_causal_linear_attention_in_blocks_equals_the_masked_product(block):
    """Block by block with a running sum is the same arithmetic as the full lower-triangular (φq φkᵀ) product."""
    g = torch.Generator().manual_seed(3)
    qf, kf = (torch.rand(2, 3, 37, 8, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 3, 37, 5, generator=g, dtype=torch.float64)
    a = (qf @ kf.transpose(-2, -1)).tril()
    num, den = causal_linear_attention(qf, kf, v, block)
    torch.testing.assert_close(num, a @ v)
    torch.testing.assert_close(den, a.sum(-1, keepdim=True))


def test_bad_sizes_are_refused():
    q, k, v = qkv()
    with pytest.raises(AttnlabError, match="window >= 1"):
        window_attention(q, k, v, window=0)
    with pytest.raises(AttnlabError, match="at least 1 random feature"):
        favor_attention(q, k, v, features=0)


def test_a_running_shift_of_the_keys_cancels():
    """Keys' features stored at a running scale e^-shift_j give the same ratio as unscaled ones."""
    g = torch.Generator().manual_seed(4)
    qf, kf = (torch.rand(2, 3, 37, 8, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(2, 3, 37, 5, generator=g, dtype=torch.float64)
    shift = torch.rand(2, 3, 37, generator=g, dtype=torch.float64).mul(5).cummax(-1).values
    num, den = causal_linear_attention(qf, kf, v, 16)
    num_s, den_s = causal_linear_attention(qf, kf * torch.exp(-shift)[..., None], v, 16, shift)
    torch.testing.assert_close(num_s / den_s, num / den)


def test_a_later_key_never_reaches_an_earlier_query():
    """Not even through the stabiliser: a large last key leaves every earlier output bit for bit."""
    q, k, v = qkv(n=40, d=4)
    changed = k.clone()
    changed[..., -1, :] = 5.0
    a, b = favor_attention(q, k, v, features=16), favor_attention(q, changed, v, features=16)
    assert torch.equal(a[..., :-1, :], b[..., :-1, :])
    torch.testing.assert_close(favor_attention(q, changed, v, features=16, block=7), b)  # blocks change nothing
