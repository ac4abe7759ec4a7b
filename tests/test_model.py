import math
import re
from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F

from attnlab.config import load, runs_of
from attnlab.errors import AttnlabError
from attnlab.nn.attention import attention
from attnlab.nn.model import build
from attnlab.runs import spec_from_config
from attnlab.nn.spec import ModelSpec
from attnlab.nn.attention import causal_mask
from attnlab.nn.approx import orthogonal_features, window_mask
from attnlab.nn.model import (Average, SelfAttention, attention_kept, attention_layers, generate, param_breakdown,
                              recording, replaced)
from attnlab.probes import AttentionProbe
from helpers import REPO, assert_causal

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
    n = {row: sum(p.numel() for p in build(spec_from_config(cfg, row)).parameters()) for row in runs_of(cfg, "ladder")}
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


# --- the fast path: F.scaled_dot_product_attention when nobody needs the weights ----------------------

LAYOUTS = {  # name: (causal, t_q, t_k, with a padding mask that leaves one query row seeing nothing)
    "causal": (True, 6, 6, False),
    "causal, more keys": (True, 4, 9, False),
    "causal, more queries": (True, 9, 4, False),  # the first queries see no key
    "unmasked": (False, 6, 6, False),
    "masked": (False, 6, 6, True),
    "causal + masked": (True, 6, 6, True),
}


def qkv_and_mask(t_q: int, t_k: int, masked: bool, dtype=torch.float32):
    g = torch.Generator().manual_seed(t_q * 100 + t_k)
    q, k, v = (torch.randn(2, 4, t, 8, generator=g).to(dtype) for t in (t_q, t_k, t_k))
    if not masked:
        return q, k, v, None
    mask = torch.rand(2, 1, t_q, t_k, generator=g) > 0.3  # (B, 1, Tq, Tk)
    mask[:, :, 0] = True  # the first row sees every key, so causal + masked keeps it non-empty
    mask[1, :, 2] = False  # and one row of the second sequence sees nothing
    return q, k, v, mask


def both_paths(q, k, v, **options):
    """(out, grads of q, k, v) from the explicit core and from the fast path, for the same inputs."""
    results = []
    for need_weights in (True, False):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        out, w = attention(*leaves, need_weights=need_weights, **options)
        assert (w is None) == (not need_weights)
        out.backward(torch.linspace(-1, 1, out.numel()).view_as(out))
        results.append((out.detach(), *(t.grad for t in leaves)))
    return results


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("position", ["none", "rope", "alibi", "bias"])
@pytest.mark.parametrize("scale", [True, False, 0.3])
def test_fast_path_equals_explicit_core(layout, position, scale):
    causal, t_q, t_k, masked = LAYOUTS[layout]
    q, k, v, mask = qkv_and_mask(t_q, t_k, masked)
    bias = torch.randn(4, t_q, t_k) if position == "bias" else None
    explicit, fast = both_paths(q, k, v, causal=causal, scale=scale, mask=mask, bias=bias,
                                rope=position == "rope", alibi=position == "alibi")
    for name, a, b in zip(("out", "dq", "dk", "dv"), explicit, fast):
        assert not torch.isnan(b).any(), name
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4, msg=f"{name} differs")
    if masked:
        assert torch.equal(fast[0][1, :, 2], torch.zeros(4, 8))  # the row that sees nothing


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fast_path_masks_in_low_precision(dtype):
    q, k, v, mask = qkv_and_mask(6, 6, masked=True, dtype=dtype)
    fast, _ = attention(q, k, v, mask=mask, need_weights=False)
    explicit, _ = attention(q.float(), k.float(), v.float(), mask=mask)
    assert not torch.isnan(fast).any() and torch.equal(fast[1, :, 2], torch.zeros(4, 8, dtype=dtype))
    torch.testing.assert_close(fast.float(), explicit, atol=2e-2, rtol=2e-2)


def test_fast_path_dropout_only_in_training():
    q, k, v, _ = qkv_and_mask(6, 6, masked=False)
    plain, _ = attention(q, k, v, need_weights=False)
    assert torch.equal(attention(q, k, v, dropout_p=0.5, training=False, need_weights=False)[0], plain)
    assert not torch.equal(attention(q, k, v, dropout_p=0.5, training=True, need_weights=False)[0], plain)


@pytest.fixture
def sdpa_calls(monkeypatch):
    """Every call of F.scaled_dot_product_attention from here on, as its keyword arguments."""
    calls, sdpa = [], F.scaled_dot_product_attention

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counted)
    return calls


def test_core_takes_the_fast_path_only_when_weights_are_not_needed(sdpa_calls):
    q, k, v, _ = qkv_and_mask(6, 6, masked=False)
    assert attention(q, k, v)[1] is not None and not sdpa_calls  # direct callers still get the weights
    assert attention(q, k, v, need_weights=False, keep={})[1] is not None and not sdpa_calls
    assert attention(q, k, v, need_weights=False)[1] is None and len(sdpa_calls) == 1
    # the plain causal case builds no mask: SDPA's own is_causal
    assert sdpa_calls[0]["is_causal"] and sdpa_calls[0].get("attn_mask") is None


@pytest.mark.parametrize("row", ["L9", "B2"])
def test_model_takes_the_fast_path_unless_a_probe_needs_weights(sdpa_calls, row):
    model = build(small(row))
    x = torch.randint(0, 64, (2, 12))
    fast, _ = model(x)
    n_blocks = model.spec.n_blocks
    assert len(sdpa_calls) == n_blocks
    assert all(c["is_causal"] and c.get("attn_mask") is None for c in sdpa_calls)
    probe = AttentionProbe(torch.randint(0, 64, (200,)), 12, every=1, n_windows=2)
    row_out = probe(0, model, 1.0)
    assert len(sdpa_calls) == n_blocks  # no further SDPA call: the probe's forward ran the explicit core
    assert all(f"entropy_{i}" in row_out for i in range(n_blocks))
    with recording(model) as kept:
        explicit, _ = model(x)
        assert all(k["weights"].shape == (2, model.spec.n_heads, 12, 12) for k in kept())
    assert len(sdpa_calls) == n_blocks
    torch.testing.assert_close(fast, explicit, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("position", ["learned", "rope", "alibi", "none"])
def test_model_gradients_equal_on_both_paths(position):
    torch.manual_seed(0)
    model = build(small("B2", position=position))
    x = torch.randint(0, 64, (2, 12))
    grads = []
    for keep in (False, True):
        with recording(model) if keep else nullcontext():
            model.zero_grad()
            model(x, x)[1].backward()
        grads.append({name: p.grad.clone() for name, p in model.named_parameters()})
    for name, g in grads[0].items():
        torch.testing.assert_close(g, grads[1][name], atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("d_k,qkv_bias", [(None, True), (8, False)])
def test_stacked_projection_equals_the_three_layers(d_k, qkv_bias):
    torch.manual_seed(0)
    attn = SelfAttention(16, 4, out_proj=True, d_k=d_k, qkv_bias=qkv_bias)
    x = torch.randn(2, 5, 16)
    stacked = attn.project(x, x)
    separate = attn.project(x, x.clone())  # a different tensor: the cross-attention route, layer by layer
    for a, b in zip(stacked, separate):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


# --- approximate attention (S8): a sliding window, with and without global tokens, and FAVOR+ --------------

APPROX = {  # name: the spec's overrides on L9 (context 12)
    "window": {"attention": "window", "window": 4},
    "window + global": {"attention": "window", "window": 3, "n_global": 2},
    "window + symmetric global": {"attention": "window", "window": 2, "global_every": 4},
    "window, rope": {"attention": "window", "window": 5, "position": "rope"},
    "window, alibi": {"attention": "window", "window": 5, "position": "alibi"},
    "favor": {"attention": "favor", "features": 16},
    "favor, rope": {"attention": "favor", "features": 16, "position": "rope"},
}


@pytest.mark.parametrize("name", APPROX)
def test_approximate_attention_never_sees_the_future(name):
    torch.manual_seed(0)
    assert_causal(build(small("L9", n_blocks=2, **APPROX[name])).eval(), 64, 12, name)


def test_a_window_covering_the_context_is_full_attention():
    torch.manual_seed(0)
    full = build(small("L9", n_blocks=2)).double().eval()
    window = build(small("L9", n_blocks=2, attention="window", window=12)).double().eval()
    window.load_state_dict(full.state_dict())
    x = torch.randint(0, 64, (3, 12))
    torch.testing.assert_close(window(x)[0], full(x)[0], atol=1e-12, rtol=0)


@pytest.mark.parametrize("window,n_global,every", [(4, 0, None), (3, 2, None), (1, 0, None), (2, 0, 4), (3, 0, 5)])
def test_the_window_layer_is_the_blockwise_window_attention(window, n_global, every):
    from attnlab.nn.approx import window_attention

    torch.manual_seed(0)
    layer = SelfAttention(16, 4, out_proj=True, attention="window", window=window, n_global=n_global,
                          global_every=every).double()
    x = torch.randn(2, 12, 16, dtype=torch.float64)
    q, k, v = layer.project(x, x)
    want = window_attention(q, k, v, window=window, n_global=n_global, global_every=every, block=5)
    torch.testing.assert_close(layer(x), layer.out(want.transpose(1, 2).reshape(2, 12, 16)), atol=1e-12, rtol=0)


def test_favor_loss_approaches_full_attention_with_more_features():
    """The same weights (attention made sharp) with FAVOR+ in place of softmax: the loss moves less the more
    random features estimate the kernel (mean over four draws)."""
    torch.manual_seed(0)
    full = build(small("L9", n_blocks=2)).double().eval()
    with torch.no_grad():
        for block in full.blocks:
            block.mixer.q.weight *= 2
            block.mixer.k.weight *= 2
    x = torch.randint(0, 64, (8, 12))
    exact = full(x, x)[1].item()

    def gap(m):
        model = build(small("L9", n_blocks=2, attention="favor", features=m)).double().eval()
        total = 0.0
        for draw in range(4):
            state = dict(full.state_dict())
            for i in range(2):
                state[f"blocks.{i}.mixer.omega"] = orthogonal_features(m, 4, seed=100 * draw + i).double()
            model.load_state_dict(state)
            total += abs(model(x, x)[1].item() - exact)
        return total / 4

    assert gap(512) < gap(4) / 2


@pytest.mark.parametrize("name", ["full", *APPROX])
def test_every_attention_trains(name):
    torch.manual_seed(0)
    model = build(small("L9", **APPROX.get(name, {})))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randint(0, 64, (8, 13))
    losses = []
    for _ in range(15):
        _, loss = model(x[:, :-1], x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] - 0.5, losses


@pytest.mark.parametrize("name", APPROX)
def test_a_checkpoint_restores_approximate_attention(name):
    import io

    torch.manual_seed(0)
    spec = small("L9", n_blocks=2, **APPROX[name])
    model = build(spec).eval()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(1)  # other weights, until the checkpoint's are loaded
    twin = build(ModelSpec(**spec.to_dict())).eval()
    twin.load_state_dict(torch.load(buffer, weights_only=True))
    x = torch.randint(0, 64, (2, 12))
    assert torch.equal(model(x)[0], twin(x)[0])
    if spec.attention == "favor":  # each layer draws its own features, kept with the weights
        state = model.state_dict()
        assert not torch.equal(state["blocks.0.mixer.omega"], state["blocks.1.mixer.omega"])
        assert state["blocks.0.mixer.omega"].shape == (16, 4)


def test_favor_features_are_fixed_between_training_and_eval():
    torch.manual_seed(0)
    model = build(small("L9", attention="favor", features=16))
    x = torch.randint(0, 64, (2, 12))
    train_logits = model.train()(x)[0]
    assert torch.equal(model.eval()(x)[0], train_logits)  # no dropout: only a redraw could differ


@pytest.mark.parametrize("globals_", [{"n_global": 1}, {"global_every": 3}])
def test_window_decodes_with_the_kv_cache_and_favor_refuses_it(globals_):
    torch.manual_seed(0)
    window = build(small("L9", attention="window", window=3, context=16, **globals_)).eval()
    prompt = torch.randint(0, 64, (2, 4))
    cached, cached_logits = generate(window, prompt, 10, use_cache=True)
    plain, plain_logits = generate(window, prompt, 10, use_cache=False)
    assert torch.equal(cached, plain)
    torch.testing.assert_close(cached_logits, plain_logits, atol=1e-5, rtol=1e-5)
    favor = build(small("L9", attention="favor", features=8)).eval()
    with pytest.raises(AttnlabError, match="FAVOR\\+ attention has no KV cache"):
        generate(favor, prompt, 3, use_cache=True)
    assert generate(favor, prompt, 3, use_cache=False)[0].shape == (2, 7)


def test_probes_read_the_window_and_favor_refuses_them():
    torch.manual_seed(0)
    x = torch.randint(0, 64, (2, 12))
    kept = attention_kept(build(small("L9", attention="window", window=3, n_global=1)), x)[0]
    assert torch.equal(kept["weights"][0, 0] > 0, window_mask(12, 3, 1))
    with pytest.raises(AttnlabError, match="forms no weights to keep"):
        attention_kept(build(small("L9", attention="favor", features=8)), x)


@pytest.mark.parametrize("over,match", [
    ({"attention": "linear"}, "unknown attention 'linear'"),
    ({"attention": "window"}, "attention 'window' needs `window`"),
    ({"attention": "favor"}, "attention 'favor' needs `features`"),
    ({"window": 4}, "`window` is a setting of attention 'window' \\(attention is 'full'\\)"),
    ({"n_global": 2, "attention": "favor", "features": 8}, "`n_global` is a setting of attention 'window'"),
    ({"features": 8, "attention": "window", "window": 4}, "`features` is a setting of attention 'favor'"),
    ({"attention": "window", "window": 0}, "window must be a positive integer, got 0"),
    ({"attention": "window", "window": 4, "n_global": -1}, "n_global must be a non-negative integer, got -1"),
    ({"global_every": 4}, "`global_every` is a setting of attention 'window' \\(attention is 'full'\\)"),
    ({"attention": "window", "window": 4, "global_every": 0}, "global_every must be a positive integer, got 0"),
    ({"attention": "window", "window": 4, "global_every": 1}, "global_every must be 2 or more \\(1 makes every"),
    ({"attention": "window", "window": 4, "global_every": 4, "n_global": 2},
     "either the first n_global \\(2\\) or every global_every-th \\(4\\): set one"),
    ({"attention": "window", "window": 4, "mixer": "average"}, "needs a learned attention mixer"),
    ({"attention": "favor", "features": 8, "mixer": "none"}, "needs a learned attention mixer"),
    ({"attention": "favor", "features": 8, "position": "alibi"}, "FAVOR\\+ cannot use ALiBi: it never forms"),
    ({"attention": "favor", "features": 8, "scale": False}, "it needs scale: true"),
])
def test_bad_approximation_is_named(over, match):
    with pytest.raises(AttnlabError, match=match):
        small("L9", **over)


def test_approximations_leave_old_spec_dicts_and_costs_alone():
    cfg = load("config/chapter.yaml")
    old_fields = {"vocab_size", "d_model", "context", "n_blocks", "mixer", "n_heads", "n_kv_heads", "residual",
                  "position", "max_positions", "mlp", "mlp_ratio", "norm", "d_k", "scale", "bias", "qkv_bias",
                  "tie_embeddings", "dropout"}
    for row in runs_of(cfg, "ladder"):  # run files and run ids hash these dicts: full attention's must not change
        spec = spec_from_config(cfg, row)
        assert set(spec.to_dict()) == old_fields
        assert ModelSpec(**spec.to_dict()) == spec
    l9 = spec_from_config(cfg, "L9")
    for name, over in APPROX.items():
        spec = ModelSpec(**{**l9.to_dict(), **over, "context": 128})
        assert ModelSpec(**spec.to_dict()) == spec and spec.to_dict()["attention"] == over["attention"]
        count = sum(p.numel() for p in build(spec).parameters())
        assert count == sum(p.numel() for p in build(ModelSpec(**{**spec.to_dict(), **{
            "attention": "full", "window": None, "n_global": 0, "global_every": None,
            "features": None}})).parameters()), name
    window = ModelSpec(**{**l9.to_dict(), "attention": "window", "window": 16})
    assert window.training_floor() == l9.training_floor()
    assert "global_every" not in window.to_dict()  # window specs from before it keep their dicts (and run ids)
    assert ModelSpec(**{**window.to_dict(), "global_every": 16}).to_dict()["global_every"] == 16
    favor = ModelSpec(**{**l9.to_dict(), "attention": "favor", "features": 32})
    assert favor.training_floor()[0] == l9.training_floor()[0] and favor.training_floor()[1] < l9.training_floor()[1]


def test_the_model_code_imports_nothing_above_it():
    """nn is the bottom of the house: a model module reads no profile setting, producer, benchmark, report or
    training loop (their values reach a model as arguments); only the package's leaves, errors and stats
    (plain Python, importing nothing of the package)."""
    from attnlab import imports

    leaves = {"attnlab", "attnlab.errors", "attnlab.stats"}
    assert all(imports.closure(leaf) <= leaves for leaf in leaves)
    nn_modules = [f"attnlab.nn.{p.stem}" for p in (imports.PACKAGE / "nn").glob("*.py") if p.stem != "__init__"]
    for module in nn_modules:
        above = {m for m in imports.closure(module) - leaves if not m.startswith("attnlab.nn")}
        assert not above, f"{module} imports {sorted(above)}"


def as_found(layers) -> list:
    return [(m.keep_weights, m.kept, m.replace) for m in layers]


def test_recording_keeps_every_layers_weights_and_leaves_the_model_as_found_even_on_an_error():
    model = build(small("B2"))
    layers, x = attention_layers(model), torch.randint(0, 64, (2, 12))
    with recording(model) as kept:
        model(x)
        assert [k["weights"].shape for k in kept()] == [(2, model.spec.n_heads, 12, 12)] * model.spec.n_blocks
    assert as_found(layers) == [(False, None, None)] * len(layers)
    with pytest.raises(RuntimeError, match="mid-block"):
        with recording(model):
            model(x)
            raise RuntimeError("mid-block")
    assert as_found(layers) == [(False, None, None)] * len(layers)


def test_recording_one_layer_inside_a_recording_of_the_model_leaves_the_outer_one_on():
    model = build(small("B2"))
    layers, x = attention_layers(model), torch.randint(0, 64, (2, 12))
    with recording(model) as outer:
        with recording(layers[0]) as inner:
            model(x)
            assert len(inner()) == 1 and inner()[0] is outer()[0]
        assert all(m.keep_weights for m in layers) and outer()[0] is not None  # the outer record stays
    assert as_found(layers) == [(False, None, None)] * len(layers)


def test_replaced_mixes_with_the_given_weights_and_puts_the_layers_own_back_even_on_an_error():
    torch.manual_seed(0)
    model = build(small("L9")).eval()
    attn, x = attention_layers(model)[0], torch.randint(0, 64, (1, 12))
    own, _ = model(x)
    H, T = model.spec.n_heads, 12
    uniform = torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]  # (T, T): each query over its prefix
    with replaced(attn, uniform.expand(1, H, T, T)), recording(attn) as kept:
        mixed, _ = model(x)
        assert kept()[0]["weights"].shape == (1, H, T, T)
    assert not torch.allclose(mixed, own)
    with pytest.raises(RuntimeError, match="mid-block"):
        with replaced(attn, uniform.expand(1, H, T, T)):
            raise RuntimeError("mid-block")
    assert as_found([attn]) == [(False, None, None)]
    assert torch.equal(model(x)[0], own)


def test_only_the_model_sets_a_layers_keep_or_replace():
    """recording() and replaced() are the protocol: no other module sets the attributes they own."""
    src = REPO / "src" / "attnlab"
    setters = re.compile(r"\.(keep_weights|replace|kept)\s*(,[^=\n]*)?=[^=]")
    found = [f"{path.relative_to(src)}:{n}" for path in src.rglob("*.py") if path.name != "model.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if setters.search(line)]
    assert not found, found
