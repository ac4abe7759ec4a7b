"""S7: tiled attention is exact attention. FlashAttention's own criterion: its largest error against a float64
reference is at most twice that of the plain float32 computation, forward and backward, causal or not."""
import pytest
import torch

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.tiled import tiled_attention


def inputs(B=2, H=3, Tq=77, Tk=77, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, t, d, generator=g, dtype=torch.float64) * 2 for t in (Tq, Tk, Tk)]


def forward_and_grads(fn, q, k, v, d_out):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = fn(q, k, v)
    out.backward(d_out)
    return [out.detach(), q.grad, k.grad, v.grad]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("shape", [(77, 77, 16), (40, 100, 8), (128, 128, 32)])
@pytest.mark.parametrize("block", [16, 64])
def test_tiled_attention_is_as_exact_as_plain_float32(causal, shape, block):
    Tq, Tk, d = shape
    q, k, v = inputs(Tq=Tq, Tk=Tk, d=d)
    d_out = torch.randn(q.shape[:-1] + (d,), generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def plain(q, k, v):
        return attention(q, k, v, causal=causal, need_weights=True)[0]

    exact = forward_and_grads(plain, q, k, v, d_out)  # float64
    naive = forward_and_grads(plain, q.float(), k.float(), v.float(), d_out.float())
    tiled = forward_and_grads(lambda *a: tiled_attention(*a, causal=causal, block=block),
                              q.float(), k.float(), v.float(), d_out.float())
    for name, e, n, t in zip(("out", "dq", "dk", "dv"), exact, naive, tiled):
        err_naive, err_tiled = (n.double() - e).abs().max().item(), (t.double() - e).abs().max().item()
        assert err_tiled <= 2 * err_naive + 1e-12, (name, err_tiled, err_naive)


def test_tiled_attention_matches_sdpa_in_float32():
    q, k, v = (t.float() for t in inputs(Tq=200, Tk=200))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(tiled_attention(q, k, v, block=48), want, atol=1e-5)


def test_a_block_below_one_is_refused():
    with pytest.raises(AttnlabError, match="block must be at least 1"):
        tiled_attention(*inputs(), block=0)
