"""Positions (E5), norm placement (E4) and dropout (the chapter's note), as options of one model."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import build
from attnlab.nn.spec import ModelSpec
from attnlab.nn.attention import alibi_bias, alibi_slopes, rope_rotate
from attnlab.nn.model import Block, SelfAttention, sinusoidal_positions
from helpers import assert_causal


def spec(**over) -> ModelSpec:
    base = dict(vocab_size=64, d_model=16, context=12, n_blocks=2, mixer="multihead", n_heads=4,
                position="learned", mlp=True, norm="pre")
    return ModelSpec(**{**base, **over})


# --- RoPE -------------------------------------------------------------------------------------------

def test_rope_scores_depend_only_on_offset():
    """Same q, k content placed s positions later: identical scores (t - i only)."""
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)
    pos = torch.arange(5)
    base = rope_rotate(q, pos) @ rope_rotate(k, pos).transpose(-2, -1)
    for s in (1, 7, 100):
        shifted = rope_rotate(q, pos + s) @ rope_rotate(k, pos + s).transpose(-2, -1)
        torch.testing.assert_close(shifted, base, atol=1e-4, rtol=1e-4)
    # and they do depend on the offset: without rotation they would not change with it
    assert not torch.allclose(base, q @ k.transpose(-2, -1), atol=1e-3)


def test_rope_in_core_is_shift_invariant():
    """Inside attention(): a query at t_k - t_q + i against a prefix of keys equals the square case."""
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 4)
    kept_full, kept_tail = {}, {}
    attention(q, k, v, rope=True, keep=kept_full)
    attention(q[:, :, -2:], k, v, rope=True, keep=kept_tail)  # last two queries at positions 4, 5
    torch.testing.assert_close(kept_tail["scores"], kept_full["scores"][:, :, -2:])


def test_rope_keeps_norms():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 10, 8)
    torch.testing.assert_close(rope_rotate(x, torch.arange(10)).norm(dim=-1), x.norm(dim=-1))


def test_rope_position_zero_is_identity_and_odd_width_refused():
    x = torch.randn(1, 4, 6)
    torch.testing.assert_close(rope_rotate(x, torch.zeros(4, dtype=torch.long)), x)
    with pytest.raises(AttnlabError, match="even"):
        rope_rotate(torch.randn(1, 4, 5), torch.arange(4))


# --- ALiBi ------------------------------------------------------------------------------------------

def test_alibi_slopes():
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256]))
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0 ** -k for k in range(1, 9)]))


def test_alibi_bias_diagonal_and_below():
    b = alibi_bias(4, 5, 5)  # (H, Tq, Tk)
    slopes = alibi_slopes(4)
    assert b.shape == (4, 5, 5)
    assert torch.all(b.diagonal(dim1=-2, dim2=-1) == 0)
    for i in range(5):
        for j in range(i):
            torch.testing.assert_close(b[:, i, j], -slopes * (i - j))


def test_alibi_non_power_of_two_is_named():
    with pytest.raises(AttnlabError, match="ALiBi has no slopes for n_heads=6"):
        spec(d_model=24, n_heads=6, position="alibi")
    with pytest.raises(AttnlabError, match="n_heads=6"):
        alibi_slopes(6)


@pytest.mark.parametrize("position", ["rope", "alibi"])
@pytest.mark.parametrize("mixer", ["average", "none"])
def test_relative_positions_need_learned_attention(position, mixer):
    with pytest.raises(AttnlabError, match=f"position '{position}' needs a learned attention mixer"):
        spec(mixer=mixer, position=position)


# --- sinusoidal -------------------------------------------------------------------------------------

def test_sinusoidal_table_matches_formula():
    T, d = 300, 16  # far past any context
    pe = sinusoidal_positions(T, d)
    assert pe.shape == (T, d)
    for t in (0, 1, 7, 299):
        for i in range(d // 2):
            angle = t / 10000 ** (2 * i / d)
            assert pe[t, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-4)
            assert pe[t, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-4)


def test_sinusoidal_has_no_parameters():
    assert sum(p.numel() for p in build(spec(position="sinusoidal")).parameters()) == \
        sum(p.numel() for p in build(spec(position="none")).parameters())


# --- permutation equivariance (C5.5) ----------------------------------------------------------------

def test_no_position_attention_is_permutation_equivariant_and_rope_breaks_it():
    torch.manual_seed(0)
    x = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    plain = SelfAttention(16, 4, out_proj=True)
    out = plain(x, causal=False)
    torch.testing.assert_close(plain(x[:, perm], causal=False), out[:, perm])
    rope = SelfAttention(16, 4, out_proj=True, rope=True)
    rope.load_state_dict(plain.state_dict())
    out = rope(x, causal=False)
    assert not torch.allclose(rope(x[:, perm], causal=False), out[:, perm], atol=1e-4)


# --- norm placement ---------------------------------------------------------------------------------

def test_post_norm_block_computes_ln_of_sum():
    torch.manual_seed(0)
    block = Block(spec(norm="post")).eval()
    x = torch.randn(2, 5, 16)
    h = block.norm1(x + block.mixer(x))
    expected = block.norm2(h + block.mlp(h))
    torch.testing.assert_close(block(x), expected)


def test_post_norm_has_no_final_layernorm():
    post, pre = build(spec(norm="post")), build(spec(norm="pre"))
    assert isinstance(post.norm, nn.Identity) and isinstance(pre.norm, nn.LayerNorm)
    n_ln = lambda m: sum(isinstance(x, nn.LayerNorm) for x in m.modules())  # noqa: E731
    assert n_ln(post) == 2 * 2 and n_ln(pre) == 2 * 2 + 1


# --- dropout ----------------------------------------------------------------------------------------

def test_dropout_inactive_in_eval_active_in_train():
    torch.manual_seed(0)
    model = build(spec(dropout=0.5))
    x = torch.randint(0, 64, (2, 12))
    model.eval()
    assert torch.equal(model(x)[0], model(x)[0])
    model.train()
    assert not torch.equal(model(x)[0], model(x)[0])


def test_dropout_sits_at_exactly_three_places():
    model = build(spec(dropout=0.25, n_blocks=3))
    drops = [name for name, m in model.named_modules() if isinstance(m, nn.Dropout)]
    assert drops == ["drop", "blocks.0.drop", "blocks.1.drop", "blocks.2.drop"]  # embedding sum; sublayers
    assert all(b.mixer.dropout == 0.25 for b in model.blocks)  # attention weights, inside the core
    assert all(m.p == 0.25 for m in model.modules() if isinstance(m, nn.Dropout))


def test_attention_dropout_on_weights_keeps_pre_dropout_weights():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 3)
    ref, w_ref = attention(q, k, v)
    kept = {}
    torch.manual_seed(1)
    out, w = attention(q, k, v, dropout_p=0.5, training=True, keep=kept)
    torch.manual_seed(1)
    dropped = F.dropout(w_ref, 0.5, training=True)
    torch.testing.assert_close(out, dropped @ v)
    torch.testing.assert_close(kept["weights"], w_ref)
    torch.testing.assert_close(w, w_ref)
    assert torch.equal(attention(q, k, v, dropout_p=0.5, training=False)[0], ref)


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, True])
def test_bad_dropout_is_named(p):
    with pytest.raises(AttnlabError, match="dropout must be a number in"):
        spec(dropout=p)


def test_unknown_norm_and_position_are_named():
    with pytest.raises(AttnlabError, match="unknown norm placement 'middle'"):
        spec(norm="middle")
    with pytest.raises(AttnlabError, match="unknown position encoding 'spiral'"):
        spec(position="spiral")


# --- causality, for every new option ----------------------------------------------------------------

@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("position", ["learned", "sinusoidal", "rope", "alibi", "none"])
def test_no_future_leakage(position, norm):
    torch.manual_seed(0)
    assert_causal(build(spec(position=position, norm=norm, dropout=0.1)).eval(), 64, 12, f"{position}/{norm}")


# --- longer than the training context ---------------------------------------------------------------

@pytest.mark.parametrize("position", ["sinusoidal", "rope", "alibi", "none"])
def test_longer_than_context_works(position):
    model = build(spec(position=position)).eval()
    logits, loss = model(torch.zeros(1, 50, dtype=torch.long), torch.zeros(1, 50, dtype=torch.long))
    assert logits.shape == (1, 50, 64) and torch.isfinite(loss)


def test_learned_longer_than_table_raises():
    model = build(spec(position="learned")).eval()
    with pytest.raises(AttnlabError, match="longer than the position table"):
        model(torch.zeros(1, 13, dtype=torch.long))
