"""S8 on a trained layer: the kept queries, keys and values are the layer's own, the errors behave on a toy, the
producer measures every seed (and records a diverged one), the claims and the page read it, bad settings are
refused in one line, and the smoke DAG builds its target."""
from __future__ import annotations

import copy
import json
import math
import shutil

import pytest
import torch

from attnlab.nn.approx import errors_against_exact, window_attention, window_mask
from attnlab.check import check
from attnlab.runs import spec_from_config
from attnlab.data.prepare import load_tokens
from attnlab.errors import AttnlabError
from attnlab.experiments.approximation import producer as approximation
from attnlab.nn.attention import attention
from attnlab.nn.model import SelfAttention, attention_kept, build
from attnlab.nn.spec import ModelSpec
from attnlab.plan import needed
from attnlab.provenance import read_json, write_json
from attnlab.registry import get
from attnlab.experiments.approximation import page
from attnlab.train import train
from helpers import rendered_page, site_for, tiny_config, write_tokens

SETTINGS = {"windows": [2, 4, 8], "features": [4, 64], "n_global": 2, "batches": 3, "batch_size": 2}


@pytest.mark.parametrize("spec", [
    ModelSpec(vocab_size=50, d_model=32, context=12, n_heads=4, position="learned"),             # L9's kind
    ModelSpec(vocab_size=50, d_model=32, context=12, n_heads=4, n_kv_heads=2, position="rope", n_blocks=2),
    ModelSpec(vocab_size=50, d_model=32, context=12, mixer="head", d_k=8, position="sinusoidal", mlp=False),
], ids=["learned", "rope-gqa-two-blocks", "one-head-narrow-keys"])
def test_the_kept_queries_keys_and_values_give_each_layers_own_attention(spec):
    torch.manual_seed(0)
    model = build(spec).eval()
    seen = []
    layers = [m for m in model.modules() if isinstance(m, SelfAttention)]
    hooks = [m.register_forward_hook(lambda m, args, out: seen.append(out)) for m in layers]
    x = torch.randint(0, spec.vocab_size, (3, spec.context))
    with torch.no_grad():
        want_logits, _ = model(x)
    for h in hooks:
        h.remove()
    kept = attention_kept(model, x)
    assert len(kept) == len(layers) == spec.n_blocks
    for layer, k, out in zip(layers, kept, seen):
        assert k["q"].shape[:3] == k["k"].shape[:3] == k["v"].shape[:3] == (3, spec.heads, spec.context)
        mixed, _ = attention(k["q"], k["k"], k["v"], causal=True)  # no rope: the kept q and k are rotated already
        B, H, T, w = mixed.shape
        assert torch.allclose(layer.out(mixed.transpose(1, 2).reshape(B, T, H * w)), out, atol=1e-5)
    assert not model.training and all(m.kept is None and not m.keep_weights for m in layers)  # left as found
    assert torch.equal(model(x)[0], want_logits)


def test_errors_shrink_as_the_window_and_the_features_grow_on_a_toy_model():
    torch.manual_seed(0)
    spec = ModelSpec(vocab_size=50, d_model=32, context=16, n_heads=4, position="learned")
    rows = torch.randint(0, 50, (SETTINGS["batches"] * SETTINGS["batch_size"], 16))
    out = approximation.measure(build(spec).eval(), rows, {**SETTINGS, "features": [4, 256]}, seed=7)
    assert (out["context"], out["layers"], out["heads"], out["head_dim"]) == (16, 1, 4, 8)
    for inputs in ("trained", "gaussian"):
        window = [w["relative_error"] for w in out[inputs]["window"]]
        assert window == sorted(window, reverse=True) and window[-1] > 0  # 8 keys + 2 global of 16: not exact
        assert out[inputs]["favor"][-1]["relative_error"] < out[inputs]["favor"][0]["relative_error"]
        assert out[inputs]["window_shrink"]["ratio"] < 1 and out[inputs]["window_shrink"]["se"] > 0
        assert all(p["se"] is not None and p["min"] <= p["relative_error"] <= p["max"] for p in out[inputs]["favor"])
    assert abs(out["gaussian"]["attention"]["score_std"] - 1) < 0.15  # unit Gaussian inputs: scores of sd 1
    ratio = out["trained_over_gaussian"]["window"][-1]
    assert ratio["size"] == 8 and ratio["ratio"] > 0 and ratio["se"] >= 0


def test_a_layer_that_attends_to_its_own_token_loses_nothing_to_a_window_and_the_ratio_says_so():
    """A head whose every query sees only itself is as local as attention gets: any window is exact on it, and
    its error over the Gaussian inputs' error is 0 (the page's comparison reads that ratio)."""
    n, d = 16, 16
    q = k = 8.0 * torch.eye(n, d, dtype=torch.float64)[None, None]  # q_i . k_j / sqrt(d) = 16 on i = j, else 0
    v = torch.randn(1, 1, n, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    noise = [torch.randn(1, 1, n, d, generator=g, dtype=torch.float64) for _ in range(3)]
    sizes = {"windows": SETTINGS["windows"], "features": SETTINGS["features"], "n_global": 2, "block": 4, "seed": 0}
    local, flat = errors_against_exact(q, k, v, **sizes), errors_against_exact(*noise, **sizes)
    assert max(local["window"]) < 1e-5 < min(flat["window"])
    ratios = approximation.ratios([local], [flat], SETTINGS)
    assert [r["size"] for r in ratios["window"]] == [2, 4, 8] and all(r["ratio"] < 1e-4 for r in ratios["window"])


def test_the_window_takes_values_wider_than_the_keys():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, w, generator=g, dtype=torch.float64) for w in (4, 4, 8))
    want, _ = attention(q, k, v, causal=False, mask=window_mask(16, 4, 2))
    assert torch.allclose(window_attention(q, k, v, window=4, n_global=2, block=5), want)


# ------------------------------------------------------------------ the producer, claims and page on trained runs

def cfg_for(seeds: list[int]) -> dict:
    cfg = tiny_config(steps=12, batch_size=4, eval_every=6, eval_windows=2, ckpt_every=6, train_eval_tokens=64)
    cfg["model"]["context"] = 16
    cfg.update(seeds=seeds, seed=seeds[0], threads=1, approximation=dict(SETTINGS))
    return cfg


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    """L9 trained (briefly) at two seeds, and the approximation measured on both."""
    root, data = tmp_path_factory.mktemp("results"), write_tokens(tmp_path_factory.mktemp("tokens"))
    cfg = cfg_for([11, 12])
    tokens = {split: load_tokens(data, split) for split in ("train", "val")}
    for seed in cfg["seeds"]:
        train(spec_from_config(cfg, "L9"), {**cfg, "seed": seed}, tokens["train"], tokens["val"],
              root / get("ladder").run_dir("L9", seed), name="L9", progress=False)
    approximation.main(cfg, root / "approximation" / "result.json", data)
    return root, cfg, data


def test_every_seed_is_measured_and_the_first_is_the_top_level(two_seeds):
    root, cfg, data = two_seeds
    r = read_json(root / "approximation" / "result.json")
    assert list(r["by_seed"]) == ["11", "12"] and r["seeds"] == [11, 12] and r["settings"] == SETTINGS
    assert r["L9"] == r["by_seed"]["11"]["L9"] and r["by_seed"]["12"]["L9"]["seed"] == 12
    assert r["by_seed"]["11"]["L9"]["trained"] != r["by_seed"]["12"]["L9"]["trained"]  # another model, other draws
    assert [w["window"] for w in r["L9"]["trained"]["window"]] == SETTINGS["windows"]
    assert r["provenance"]["wall_seconds"] > 0


def test_s8_2_is_judged_on_the_seeds_spread_and_the_page_draws_every_seed(two_seeds):
    root, cfg, data = two_seeds
    site = site_for(root, cfg)
    (v,) = site.page_verdicts("approximation")
    assert v.claim.id == "S8.2" and v.verdict != "not run", v.note
    assert set(v.se) == set(v.reproduced) and list(v.seeds) == [11, 12]  # every part has an error; both seeds
    r = read_json(root / "approximation" / "result.json")
    at = [r["by_seed"][s]["L9"]["trained"]["favor_shrink"]["ratio"] for s in ("11", "12")]
    assert v.reproduced["favor_error_shrinks"] == pytest.approx(sum(at) / 2)
    spread = abs(at[0] - at[1]) / 2  # the sd of two values over sqrt(2)
    stated = sum(r["by_seed"][s]["L9"]["trained"]["favor_shrink"]["se"] for s in ("11", "12")) / 2
    assert v.se["favor_error_shrinks"] == pytest.approx((spread ** 2 + stated ** 2) ** 0.5)  # in quadrature
    text = rendered_page(site, "approximation", page.blocks)
    assert "chart-approximation-error" in text and "the mean over 2 seeds" in text and "(11, 12)" in text
    mean = sum(r["by_seed"][s]["L9"]["trained"]["window"][0]["relative_error"] for s in ("11", "12")) / 2
    assert f"On L9's layer the window's error goes from {mean:.3g} with 2 keys" in text  # generated from the values


def test_a_seed_at_which_l9_diverged_is_recorded_and_leaves_s8_2_not_run(two_seeds, tmp_path):
    root, cfg, data = two_seeds
    work = tmp_path / "results"
    shutil.copytree(root, work)
    folder = work / get("ladder").run_dir("L9", 12)
    (folder / "ckpt.pt").unlink()
    write_json(folder / "metrics.json", {**read_json(folder / "metrics.json"), "status": "diverged",
                                         "diverged_at_step": 3})
    approximation.main(cfg, work / "approximation" / "result.json", data)
    r = read_json(work / "approximation" / "result.json")
    assert r["by_seed"]["12"]["L9"] == {"status": "diverged", "run": "L9", "diverged_at_step": 3, "seed": 12}
    assert "trained" in r["by_seed"]["11"]["L9"]
    site = site_for(work, cfg)
    (v,) = site.page_verdicts("approximation")
    assert (v.verdict, v.note) == ("not run", "L9 diverged at step 3")
    text = rendered_page(site, "approximation", page.blocks)
    assert "Not measured, because the run diverged: L9 at seed 12 diverged at step 3." in text
    assert "the mean over the batches at the one seed" in text  # the table: the seed that trained


def test_without_the_result_s8_2_is_not_run_and_the_page_says_how_to_produce_it(tmp_path):
    site = site_for(tmp_path, cfg_for([1337]))
    (v,) = site.page_verdicts("approximation")
    assert v.verdict == "not run" and v.note == "missing: approximation/result.json"
    text = rendered_page(site, "approximation", page.blocks)
    assert "approximation/result.json" in text and "snakemake results/smoke/approximation/result.json" in text


def test_the_dag_waits_for_l9_at_every_seed_and_the_viewer_for_the_first_only():
    cfg = {"seed": 1, "seeds": [1, 2, 3]}
    assert needed(cfg, get("approximation")) == [f"ladder/L9/seed{s}" for s in (1, 2, 3)]
    assert needed(cfg, get("induction")) == [f"ladder/{r}/seed{s}" for r in ("L9", "B2")
                                              for s in (1, 2, 3)]  # S10.3 at every seed
    assert [n for n in needed(cfg, get("viewer")) if n.startswith("ladder/")] == ["ladder/L9/seed1", "ladder/B2/seed1"]


# ------------------------------------------------------------------ bad settings

def smoke_cfg(corpus_path) -> dict:
    from attnlab.config import load
    from helpers import REPO

    cfg = copy.deepcopy(load(REPO / "config" / "smoke.yaml"))
    cfg["data"]["path"] = str(corpus_path)
    return cfg


BAD = {  # an edit of the smoke profile -> what the one line says
    "windows that do not increase": (lambda c: c["approximation"].update(windows=[8, 4]),
                                     "config error at 'approximation.windows': windows must increase, got [8, 4]"),
    "features that do not increase": (lambda c: c["approximation"].update(features=[64, 64]),
                                      "config error at 'approximation.features': features must increase"),
    "a window that sees the whole context": (
        lambda c: c["approximation"].update(windows=[4, 28]),
        "config error at 'approximation.windows': a window of 28 with 4 global tokens sees every one of the 32 keys "
        "run 'L9' reads at once, so it is exact attention; take windows below 28"),
    "one window": (lambda c: c["approximation"].update(windows=[4]), "'approximation.windows'"),
    "a window of zero": (lambda c: c["approximation"].update(windows=[0, 4]), "'approximation.windows.0'"),
    "one batch": (lambda c: c["approximation"].update(batches=1), "'approximation.batches'"),
    "more batches than the validation split holds": (
        lambda c: c["approximation"].update(batches=400, batch_size=8),
        "config error at 'approximation.batches': 400 batches of 8 windows of 32 tokens (the context of run 'L9') "
        "need 102,400 validation tokens"),
    "L9 with ALiBi": (lambda c: c["ladder"]["L9"].update(position="alibi"),
                      "config error at 'ladder.L9': ALiBi adds to its scores, and S8 (approximation) approximates"),
    "L9 unscaled": (lambda c: c["ladder"]["L9"].update(scale=False), "config error at 'ladder.L9': its scores are not"),
    "L9 without attention": (lambda c: c["ladder"]["L9"].update(mixer="average"),
                             "config error at 'ladder.L9': S8 (approximation) measures its learned attention"),
    "a misspelt setting": (lambda c: c["approximation"].update(batchs=2), "approximation"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_settings_are_refused_in_one_line(case, corpus_path):
    cfg = smoke_cfg(corpus_path)
    edit, words = BAD[case]
    edit(cfg)
    with pytest.raises(AttnlabError) as err:
        check(cfg, results=corpus_path.parent / "no-such-results")
    assert words in str(err.value) and "\n" not in str(err.value)


def test_the_profiles_settings_pass(corpus_path):
    assert check(smoke_cfg(corpus_path), results=corpus_path.parent / "no-such-results")["approximation"] == {
        "windows": [4, 8, 16], "features": [8, 64], "n_global": 4, "batches": 2, "batch_size": 4}


# ------------------------------------------------------------------ the smoke DAG

def test_the_smoke_target_builds_from_the_data_and_l9(tmp_path, corpus_path):
    from dag import checkout, planned, snakemake

    work = checkout(tmp_path, corpus_path)
    target = "results/smoke/approximation/result.json"
    assert planned(snakemake(work, "-n", target, "--configfile", "config/smoke.yaml")) == {
        "prepare_data": 1, "train": 1, "analyse": 1}  # the data, L9 at the profile's one seed, the measurement
    snakemake(work, target, "--cores", "2", "--configfile", "config/smoke.yaml")
    r = json.loads((work / target).read_text())
    e = r["by_seed"]["1337"]["L9"]
    assert (e["context"], e["batches"], e["windows_per_batch"]) == (32, 2, 4)
    assert all(0 < p["relative_error"] < 1 and p["se"] > 0 for inputs in ("trained", "gaussian")
               for method in ("window", "favor") for p in e[inputs][method])
    claims = site_for(work / "results" / "smoke", smoke_cfg(corpus_path))
    (v,) = claims.page_verdicts("approximation")
    assert v.verdict in ("reproduced", "not reproduced", "inconclusive"), v.note
    assert set(v.se) == set(v.reproduced) and all(math.isfinite(x) and x > 0 for x in v.se.values())


@pytest.mark.parametrize("ratio, se, df, said", [(0.5, 0.1, math.inf, "less there"), (1.5, 0.1, math.inf, "more there"),
                                                 (0.9, 0.1, math.inf, "as much within the noise"),
                                                 (1.1, 0.1, math.inf, "as much within"),
                                                 (0.7, 0.1, math.inf, "less there"), (0.7, 0.1, 2, "as much within"),
                                                 (0.5, None, math.inf, "one batch, no error")])
def test_the_pages_direction_of_a_ratio_is_said_only_outside_its_noise(ratio, se, df, said):
    from attnlab.experiments.approximation.page import direction

    assert direction(ratio, se, df).startswith(said)
