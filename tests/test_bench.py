import json
import math
import statistics

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnlab.bench import reference
from attnlab.experiments.throughput import producer as throughput
from attnlab.config import load
from attnlab.nn.model import build
from attnlab.runs import spec_from_config
from attnlab.nn.spec import ModelSpec
from helpers import assert_causal

L9 = dict(vocab_size=97, d_model=32, context=16, n_heads=4, mixer="multihead", position="learned", mlp=True,
          norm="pre")


def pair(spec):
    torch.manual_seed(0)
    lm = build(spec)
    ref = reference.copy_weights(reference.from_spec(spec), lm)
    return lm.eval(), ref.eval()


@pytest.mark.parametrize("T", [16, 7])
def test_reference_matches_attnlab_with_copied_weights(T):
    lm, ref = pair(ModelSpec(**L9))
    idx = torch.randint(97, (3, T))
    tgt = torch.randint(97, (3, T))
    with torch.no_grad():
        la, loss_a = lm(idx, tgt)
        lb, loss_b = ref(idx, tgt)
    assert la.shape == lb.shape == (3, T, 97)
    assert (la - lb).abs().max().item() <= 1e-5
    assert abs(loss_a.item() - loss_b.item()) <= 1e-5


def test_reference_gradients_match():
    lm, ref = pair(ModelSpec(**L9))
    idx, tgt = torch.randint(97, (2, 16)), torch.randint(97, (2, 16))
    lm(idx, tgt)[1].backward()
    ref(idx, tgt)[1].backward()
    ref_grads = {name: p.grad for name, p in ref.named_parameters()}
    for name, p in lm.named_parameters():
        assert torch.allclose(p.grad, reference.ref_part(ref_grads, name), atol=1e-5), name


def test_reference_is_causal():
    _, ref = pair(ModelSpec(**L9))
    assert_causal(ref, 97, 16, "reference")


def test_reference_fuses_q_k_v_in_that_order():
    lm, ref = pair(ModelSpec(**L9))
    qkv, mixer = ref.block.attn.qkv, lm.blocks[0].mixer
    assert torch.equal(qkv.weight, torch.cat([mixer.q.weight, mixer.k.weight, mixer.v.weight]))
    assert torch.equal(qkv.bias, torch.cat([mixer.q.bias, mixer.k.bias, mixer.v.bias]))


def test_reference_uses_sdpa_is_causal_without_a_mask(monkeypatch):
    _, ref = pair(ModelSpec(**L9))
    calls, sdpa = [], F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(kw) or sdpa(*a, **kw))
    ref(torch.randint(97, (2, 16)))
    assert calls == [{"is_causal": True}]


def test_copy_refuses_a_model_of_another_shape():
    lm = build(ModelSpec(**{**L9, "d_model": 64}))
    with pytest.raises(KeyError, match="no match in the reference"):
        reference.copy_weights(reference.from_spec(ModelSpec(**L9)), lm)


def test_equal_parameter_counts(repo):
    for profile in ("smoke", "quick"):
        spec = spec_from_config(load(repo / "config" / f"{profile}.yaml"), "L9")
        lm, ref = build(spec), reference.from_spec(spec)
        assert sum(p.numel() for p in ref.parameters()) == sum(p.numel() for p in lm.parameters())


def test_reference_does_not_use_attnlab_model_code(repo):
    src = (repo / "src" / "attnlab" / "bench" / "reference.py").read_text()
    assert "attnlab" not in "".join(line for line in src.splitlines() if line.startswith(("import", "from")))


def test_reference_refuses_other_rows():
    with pytest.raises(ValueError, match="one-block"):
        reference.from_spec(ModelSpec(**{**L9, "n_blocks": 2}))


# the reference and attnlab in fp32, one uncompiled faster setting: the full list compiles (minutes on a CPU)
FEW = [("reference", {}), ("attnlab", {}), ("attnlab", {"precision": "bf16", "adamw": "fused"}),
       ("attnlab", {"compile": True})]  # skipped: the smoke profile sets throughput.compile false


def test_every_speed_setting_has_its_own_name_and_the_yardstick_is_fp32():
    names = [throughput.setting_name(model, s) for model, s in throughput.SETTINGS]
    assert len(set(names)) == len(names)
    assert "attnlab bf16, compiled, fused AdamW" in names and "reference fp32" in names
    assert all(model == "reference" for model, _ in throughput.REFERENCES)
    assert all({**throughput.FP32, **s}["precision"] == "fp32" for _, s in throughput.REFERENCES)


def test_main_writes_throughput_json(repo, tmp_path, capsys):
    cfg = load(repo / "config" / "smoke.yaml")
    cfg["throughput"] = {**cfg.get("throughput", {}), "steps": 2, "warmup": 1}
    cfg["device"] = "cpu"
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    # byte ids only, so the merge-free tokenizer below can decode them
    rng.integers(0, 256, 5000).astype(np.uint16).tofile(data / "train.bin")
    rng.integers(0, 256, 500).astype(np.uint16).tofile(data / "val.bin")
    (data / "stats.json").write_text(json.dumps({"tokenizer_seconds": 1.5, "encode_seconds": 0.25}))
    from attnlab.data.bpe import RegexTokenizer

    RegexTokenizer("gpt2").save(data / "tokenizer.json")

    out = tmp_path / "bench" / "throughput.json"
    result = throughput.main(cfg, out, data, settings=FEW)
    written = json.loads(out.read_text())
    for key in ("model", "n_params", "batch_size", "context", "steps", "attnlab_tokens_per_s",
                "reference_tokens_per_s", "ratio", "ratio_paired_median", "max_abs_logit_diff",
                "tokenizer_train_seconds", "tokenizer_encode_seconds", "encode_100kb_seconds", "threads", "provenance"):
        assert key in written, key
    assert written == json.loads(json.dumps(result, default=float))
    assert written["attnlab_tokens_per_s"] > 0 and written["reference_tokens_per_s"] > 0 and written["ratio"] > 0
    assert written["max_abs_logit_diff"] <= 1e-5
    assert written["batch_size"] == cfg["throughput"]["batch_size"] and written["steps"] == 2
    assert written["context"] == written["model"]["context"] == spec_from_config(cfg, "L9").context
    assert written["n_params"] == sum(p.numel() for p in build(spec_from_config(cfg, "L9")).parameters())
    assert written["tokenizer_train_seconds"] == 1.5 and written["tokenizer_encode_seconds"] == 0.25
    assert written["encode_100kb_seconds"] >= 0
    assert written["provenance"]["profile"] == "smoke"
    assert "tokens/s" in capsys.readouterr().out
    rows = {r["name"]: r for r in written["settings"]}
    assert list(rows) == ["reference fp32", "attnlab fp32", "attnlab bf16, fused AdamW"]
    assert any("throughput.compile is false" in note for note in written["notes"])
    assert written["yardstick"] == "reference fp32"
    assert rows["attnlab bf16, fused AdamW"]["precision"] == "bf16" and rows["attnlab fp32"]["adamw"] == "default"
    assert all(len(r["step_seconds"]) == 2 and r["first_step_seconds"] > 0 and math.isfinite(r["last_loss"])
               for r in rows.values())
    assert rows["attnlab fp32"]["step_seconds"] == written["attnlab_step_seconds"]
    assert_against_the_peak(written, rows)


def assert_against_the_peak(written: dict, rows: dict) -> None:
    """The peak timed in the same rounds, every setting's counted FLOPs (one arithmetic: the same count) and its
    share of its precision's peak as the file's own numbers give it, and two steps broken down by category."""
    peak = written["peak"]["fp32"]
    assert len(peak["seconds"]) == written["steps"] and peak["flops"] == 2 * peak["n"] ** 3
    assert peak["flops_per_s"] == pytest.approx(peak["flops"] / statistics.median(peak["seconds"]))
    assert isinstance(written["native_bf16"], bool) and written["native_bf16_why"]
    assert set(written["peak"]) == ({"fp32", "bf16"} if written["native_bf16"] else {"fp32"})
    assert len({r["flops"] for r in rows.values()}) == 1 and rows["attnlab fp32"]["flops"] > 0
    for r in rows.values():
        assert r["peak"] == (r["precision"] if r["precision"] in written["peak"] else "fp32")
        rate = r["flops"] / statistics.median(r["step_seconds"])
        assert r["flops_per_s"] == pytest.approx(rate)
        assert r["share_of_peak"] == pytest.approx(rate / written["peak"][r["peak"]]["flops_per_s"])
    assert [b["setting"] for b in written["breakdown"]] == ["attnlab fp32", "reference fp32"]
    for b in written["breakdown"]:
        assert sum(c["share"] for c in b["categories"].values()) == pytest.approx(1)
        assert list(b["categories"]) == ["matmul", "attention", "normalisation", "activation", "loss", "optimiser",
                                         "rest"]
    assert "timing" in written and set(written["timing"]) == set(rows)  # the peak is not a setting


def test_a_settings_share_is_against_its_own_precisions_peak_where_there_is_one():
    row = {"precision": "bf16", "step_seconds": [0.5, 0.25, 1.0]}  # median 0.5 s
    fp32, bf16 = {"flops_per_s": 10.0}, {"flops_per_s": 40.0}
    assert throughput.against_peak(row, 2, {"fp32": fp32}) == \
        {"flops": 2, "flops_per_s": 4.0, "peak": "fp32", "share_of_peak": 0.4}
    assert throughput.against_peak(row, 2, {"fp32": fp32, "bf16": bf16})["share_of_peak"] == 0.1


def test_main_without_tokenizer_notes_the_skip(repo, tmp_path):
    cfg = load(repo / "config" / "smoke.yaml")
    cfg["throughput"] = {"steps": 1, "warmup": 0, "batch_size": 2}
    cfg["device"] = "cpu"
    np.random.default_rng(1).integers(0, 1024, 2000).astype(np.uint16).tofile(tmp_path / "train.bin")
    result = throughput.main(cfg, tmp_path / "out.json", tmp_path, settings=FEW)
    assert result["encode_100kb_seconds"] is None and result["tokenizer_train_seconds"] is None
    assert any("tokenizer.json" in note for note in result["notes"])
