"""S5 and S6: decoding with a KV cache gives exactly the tokens, and to float tolerance the logits, of full
recomputation, for every position encoding and for grouped (GQA) and shared (MQA) key/value heads; a grouped
model is the multi-head model whose key/value heads are repeated; the cache stays causal."""
import pytest
import torch

from attnlab.errors import AttnlabError
from attnlab.nn.model import SelfAttention, build, generate
from attnlab.nn.spec import ModelSpec
from helpers import assert_causal

SPECS = {
    "learned MHA": dict(position="learned"),
    "sinusoidal": dict(position="sinusoidal"),
    "rope GQA": dict(position="rope", n_kv_heads=2),
    "alibi MQA": dict(position="alibi", n_kv_heads=1),
    "post-norm, two blocks": dict(norm="post", n_blocks=2, position="learned"),
}


def model(**kw):
    torch.manual_seed(0)
    spec = ModelSpec(**{"vocab_size": 50, "d_model": 32, "n_heads": 4, "context": 48, "n_blocks": 2, **kw})
    return build(spec).eval()


@pytest.mark.parametrize("name", SPECS)
def test_cached_decoding_equals_recomputation(name):
    lm = model(**SPECS[name])
    prompt = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(1))
    cached, cached_logits = generate(lm, prompt, 20, use_cache=True)
    full, full_logits = generate(lm, prompt, 20, use_cache=False)
    assert torch.equal(cached, full)  # greedy: exactly the same tokens
    assert torch.allclose(cached_logits, full_logits, atol=1e-5)


def test_a_cache_fed_in_pieces_gives_the_full_forward():
    lm = model(position="rope", n_kv_heads=2)
    idx = torch.randint(0, 50, (2, 30), generator=torch.Generator().manual_seed(2))
    full, _ = lm(idx)
    cache = {}
    pieces = [lm(idx[:, a:b], cache=cache)[0] for a, b in ((0, 11), (11, 12), (12, 30))]
    assert torch.allclose(torch.cat(pieces, dim=1), full, atol=1e-5) and cache["length"] == 30
    assert cache["blocks"][0]["k"].shape == (2, 2, 30, 8)  # the cache keeps only the 2 key/value heads


def test_gqa_is_mha_with_its_key_value_heads_repeated():
    torch.manual_seed(0)
    gqa = SelfAttention(32, 4, out_proj=True, n_kv_heads=2).eval()
    mha = SelfAttention(32, 4, out_proj=True).eval()
    with torch.no_grad():
        for name in ("q", "out"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("k", "v"):  # heads (a, b) -> (a, a, b, b): each group of two query heads reads one
            w, b = getattr(gqa, name).weight.view(2, 8, 32), getattr(gqa, name).bias.view(2, 8)
            getattr(mha, name).weight.copy_(w.repeat_interleave(2, dim=0).reshape(32, 32))
            getattr(mha, name).bias.copy_(b.repeat_interleave(2, dim=0).reshape(32))
    x = torch.randn(2, 10, 32)
    assert torch.allclose(gqa(x), mha(x), atol=1e-6)


@pytest.mark.parametrize("kv", [4, 2, 1])
def test_grouped_models_stay_causal(kv):
    assert_causal(model(n_kv_heads=kv), 50, 16, f"n_kv_heads={kv}")


def test_cache_bytes_per_token_follow_the_formula():
    spec = ModelSpec(d_model=512, n_heads=8, n_blocks=6, n_kv_heads=2)
    assert spec.cache_bytes_per_token() == 2 * 6 * 2 * 64 * 4
    assert ModelSpec(d_model=512, n_heads=8, n_blocks=6).cache_bytes_per_token(2) == 2 * 6 * 8 * 64 * 2


def test_bad_groupings_and_caches_are_refused():
    with pytest.raises(AttnlabError, match="n_kv_heads=3 does not divide the 4 query heads"):
        ModelSpec(d_model=32, n_heads=4, n_kv_heads=3)
    with pytest.raises(AttnlabError, match="a KV cache needs attention in every block"):
        model(mixer="average", position="learned")(torch.zeros(1, 3, dtype=torch.long), cache={})


def test_pooling_key_value_heads_keeps_a_model_whose_groups_already_agree():
    """Up-training's conversion: where the heads of each group are equal, their mean is each of them, so the
    grouped model computes exactly what the multi-head one did."""
    from attnlab.nn.model import pool_kv_heads

    mha = model(position="learned")
    with torch.no_grad():
        for block in mha.blocks:
            for name in ("k", "v"):
                layer = getattr(block.mixer, name)
                w = layer.weight.view(4, 8, 32)
                w[1], w[3] = w[0], w[2]  # heads (0, 1) and (2, 3): the two groups of GQA-2
                layer.bias.view(4, 8)[1] = layer.bias.view(4, 8)[0]
                layer.bias.view(4, 8)[3] = layer.bias.view(4, 8)[2]
    gqa = model(position="learned", n_kv_heads=2)
    gqa.load_state_dict(pool_kv_heads(mha.state_dict(), mha.spec, gqa.spec))
    idx = torch.randint(0, 50, (2, 20), generator=torch.Generator().manual_seed(3))
    assert torch.allclose(gqa(idx)[0], mha(idx)[0], atol=1e-5)


def test_pooling_refuses_another_model():
    from attnlab.nn.model import pool_kv_heads

    mha = model(position="learned")
    with pytest.raises(AttnlabError, match="only the key/value head count may differ"):
        pool_kv_heads(mha.state_dict(), mha.spec, model(position="learned", n_kv_heads=2, d_model=64).spec)
