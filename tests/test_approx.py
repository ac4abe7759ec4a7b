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


@pytest.mark.parametrize("window, n_global, block", [(1, 0, 16), (5, 0, 16), (9, 3, 8), (32, 2, 64), (100, 0, 7),
                                                     (2, 9, 4)])  # more global tokens than a block holds
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


@pytest.mark.parametrize("window, every, block", [(1, 2, 16), (5, 4, 16), (9, 16, 8), (16, 16, 64), (3, 7, 5)])
def test_the_window_with_symmetric_globals_is_its_masked_attention(window, every, block):
    q, k, v = qkv()
    dense = attention(q, k, v, causal=True, mask=window_mask(70, window, global_every=every), need_weights=False)[0]
    got = window_attention(q, k, v, window=window, global_every=every, block=block)
    assert torch.allclose(got, dense, atol=1e-12)


@pytest.mark.parametrize("window, every", [(1, 2), (3, 4), (4, 3), (8, 5)])
def test_symmetric_globals_see_their_prefix_are_seen_later_and_never_the_future(window, every):
    n = 23
    m = window_mask(n, window, global_every=every)
    assert not m.triu(1).any()  # no query ever sees a later key
    globals_ = [g for g in range(n) if (g + 1) % every == 0]
    for i in range(n):
        seen = {j for j in range(n) if m[i, j]}
        if i in globals_:
            assert seen == set(range(i + 1))  # a global token sees its whole prefix
        else:  # any other query: its window and the global tokens before it, nothing else
            assert seen == set(range(max(0, i - window + 1), i + 1)) | {g for g in globals_ if g < i}
    for g in globals_:
        assert m[g:, g].all()  # every query from g on sees g


def test_the_first_tokens_as_global_are_the_mask_of_before():
    """Global tokens at the start: what they see is their prefix already (only each other), so the symmetric mask
    is the keys-only mask it replaced."""
    i, j = torch.arange(40)[:, None], torch.arange(40)[None, :]
    for window, n_global in [(1, 3), (4, 0), (5, 8), (16, 4)]:
        assert torch.equal(window_mask(40, window, n_global), (j <= i) & ((j > i - window) | (j < n_global)))


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
    with pytest.raises(AttnlabError, match="global_every >= 1"):
        window_attention(q, k, v, window=4, global_every=0)
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
