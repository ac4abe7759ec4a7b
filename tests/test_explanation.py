"""S9: attention as explanation (Jain & Wallace; Wiegreffe & Pinter), on a small model trained here.

The model: one block, two heads, d_model 32, trained with the project's one loop on a copy task. Each row is
`a n n .. n SEP a n ..`: the token after SEP repeats the row's first token, so at the scored position pos (the
SEP, at 3, 4 or 5) the model must look back at position 0. The other tokens are noise it cannot predict.
"""
import copy
import itertools
import json
import math
import statistics

import pytest
import torch

from attnlab.experiments.explanation import producer as E
from attnlab.provenance import write_json
from attnlab.claims.design import LOOKS, k_at
from attnlab.stats import t95
from attnlab.nn.model import build
from attnlab.nn.spec import ModelSpec
from attnlab.train import train
from helpers import REPO

V, SEP, T = 20, 16, 8  # content tokens 0..15, the separator 16, context 8


def copy_rows(n: int, seed: int):
    """Rows (n, T + 1) of the copy task and the SEP position of each (n,)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 16, (n, T + 1), generator=gen)
    pos = torch.randint(3, 6, (n,), generator=gen)
    x[torch.arange(n), pos] = SEP
    x[torch.arange(n), pos + 1] = x[:, 0]
    return x, pos


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    spec = ModelSpec(vocab_size=V, d_model=32, context=T, n_blocks=1, n_heads=2)
    cfg = {"seed": 0, "device": "cpu",
           "train": {"lr": 1e-2, "weight_decay": 0.0, "batch_size": 32, "steps": 300, "warmup_steps": 0,
                     "grad_clip": 1.0, "eval_every": 300, "eval_windows": 2, "ckpt_every": 10_000,
                     "train_eval_tokens": 64}}
    out = tmp_path_factory.mktemp("s9")
    train(spec, cfg, copy_rows(4000, 0)[0], copy_rows(64, 1)[0], out, name="s9-copy", progress=False)
    m = build(spec)
    m.load_state_dict(torch.load(out / "ckpt.pt", weights_only=True)["model"])
    return m.eval()


@pytest.fixture(scope="module")
def batch():
    x, pos = copy_rows(12, 2)
    return x[:, :-1], pos, x[:, 0]  # inputs (B, T), scored positions, the token to copy


# --- distances and ranks -------------------------------------------------------------------------------

def brute_tau_b(a, b):
    """Kendall's tau-b from its textbook counts: concordant and discordant pairs, ties counted by group."""
    n = len(a)
    c = d = 0
    for i, j in itertools.combinations(range(n), 2):
        s = (a[i] - a[j]) * (b[i] - b[j])
        c, d = c + (s > 0), d + (s < 0)
    n0 = n * (n - 1) / 2
    ties = lambda v: sum(t * (t - 1) / 2 for t in (list(v).count(x) for x in set(v)))
    denom = math.sqrt((n0 - ties(a)) * (n0 - ties(b)))
    return (c - d) / denom if denom else float("nan")


def test_kendall_tau_b_extremes_ties_and_brute_force():
    a = torch.tensor([0.3, 0.1, 0.7, 0.5, 0.2])
    assert E.kendall_tau(a, a) == pytest.approx(1.0)
    assert E.kendall_tau(a, -a) == pytest.approx(-1.0)
    assert math.isnan(E.kendall_tau(a, torch.ones(5)))  # a constant ranking has no tau
    gen = torch.Generator().manual_seed(0)
    for n in (2, 3, 5, 8, 12):
        for _ in range(20):
            x, y = torch.randint(0, 4, (n,), generator=gen), torch.randint(0, 4, (n,), generator=gen)  # many ties
            want = brute_tau_b(x.tolist(), y.tolist())
            got = E.kendall_tau(x, y)
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


def test_jsd_is_zero_for_equal_ln2_for_disjoint_and_symmetric():
    p = torch.tensor([0.5, 0.5, 0.0, 0.0])
    q = torch.tensor([0.0, 0.0, 0.2, 0.8])
    assert E.jsd(p, p).item() == pytest.approx(0.0, abs=1e-9)
    assert E.jsd(p, q).item() == pytest.approx(math.log(2), rel=1e-6)
    r = torch.softmax(torch.randn(6, 10, generator=torch.Generator().manual_seed(1)), -1)
    s = r.roll(1, 0)
    assert torch.allclose(E.jsd(r, s), E.jsd(s, r))
    assert (E.jsd(r, s) > 0).all() and (E.jsd(r, s) <= math.log(2)).all()
    assert E.tv(p, q).item() == pytest.approx(1.0) and E.tv(p, p).item() == 0.0


# --- the trained model, its attention kept and replaced ---------------------------------------------------

def test_the_model_learned_to_copy_by_attention(model, batch):
    x, pos, target = batch
    assert (E.output_at(model, x, pos).argmax(-1) == target).all()
    row = E.attention_row(model, x, pos)  # (B, H, T)
    assert row.shape == (12, 2, T)
    assert torch.allclose(row.sum(-1), torch.ones(12, 2))
    assert (row * after(pos)[:, None]).abs().sum() == 0  # causal: nothing after pos


def after(pos):
    """(B, T) True at the positions after each example's pos."""
    return torch.arange(T)[None] > pos[:, None]


def test_replacing_attention_by_its_own_weights_changes_nothing(model, batch):
    x, pos, _ = batch
    row = E.attention_row(model, x, pos)
    assert torch.equal(E.output_at(model, x, pos, rows=row), E.output_at(model, x, pos))


def test_permuting_a_one_hot_row_moves_the_output(model, batch):
    """Each head's learned row made one-hot at its largest weight still copies; the same one-hot rows with
    keys 0 and 1 swapped (a permutation) send the copying head to a noise token, and the output follows it."""
    x, pos, target = batch
    hard = torch.nn.functional.one_hot(E.attention_row(model, x, pos).argmax(-1), T).float()  # (B, H, T)
    swapped = hard[..., [1, 0, *range(2, T)]]
    on_hard, on_swapped = E.output_at(model, x, pos, rows=hard), E.output_at(model, x, pos, rows=swapped)
    assert (on_hard.argmax(-1) == target).float().mean() > 0.9
    assert (on_swapped.argmax(-1) == target).float().mean() < 0.3
    assert E.tv(on_hard, on_swapped).median() > 0.5


def test_random_permutations_of_a_peaked_row_change_the_output(model, batch):
    x, pos, _ = batch
    perm = E.permutation_test(model, x, pos, n_perm=6, seed=0)
    assert perm["tv"].shape == (12, 6) and perm["median_tv"].shape == (12,)
    assert perm["median_tv"].median() > 0.3 and perm["argmax_changed"].float().mean() > 0.5


def test_a_layer_whose_values_are_all_equal_gives_permutations_nothing_to_change(model, batch):
    """The value projection zeroed: every key carries the same (zero) value, so where the weight goes cannot
    matter, and a shuffled row leaves the output as it was - the case S9.1's permutation half must fail on."""
    x, pos, _ = batch
    flat = copy.deepcopy(model)
    with torch.no_grad():
        E.attention_layers(flat)[-1].v.weight.zero_()
    perm = E.permutation_test(flat, x, pos, n_perm=4, seed=0)
    assert perm["tv"].abs().max() < 1e-6 and not perm["argmax_changed"].any()
    res = E.explain(flat, x, pos, neutral=0, n_perm=4, k=2, steps=5, n_show=0)
    assert res["permutation"]["mean_median_tv"] < 1e-6 and res["permutation"]["se_mean_median_tv"] < 1e-6


def test_the_jsd_within_the_bound_counts_unmoved_sentences_as_zero_and_has_an_error_over_sentences():
    under = E.under_bound(torch.tensor([0.3, math.nan, 0.2, math.nan, 0.25]))
    assert under == pytest.approx([0.3, 0.0, 0.2, 0.0, 0.25])
    assert E.se_of_median([0.2] * 10) == 0.0  # every sentence alike: no error
    spread = E.se_of_median([0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5])
    assert 0.02 < spread < 0.3
    assert E.se_of_median([0.2]) is None and E.se_of_mean([0.1, None]) is None


# --- importance -----------------------------------------------------------------------------------------

def test_gradient_importance_is_zero_where_the_output_cannot_see(model, batch):
    x, pos, _ = batch
    later = after(pos)
    for detach in (True, False):
        g = E.gradient_importance(model, x, pos, detach_attention=detach)
        assert g.shape == (12, T)
        assert (g[later] == 0).all() and (g[~later] > 0).all()
    for neutral in (0, None):  # replaced by token 0, or removed
        assert (E.loo_importance(model, x, pos, neutral=neutral)[later] == 0).all()


def test_leave_one_out_finds_the_copied_token_and_the_separator(model, batch):
    """Replacing position 0's token (the answer) or the SEP changes the output; a noise token does not."""
    x, pos, _ = batch
    loo = E.loo_importance(model, x, pos, neutral=0)  # no row of this batch starts with token 0
    assert loo[:, 0].min() > 0.5 and loo[torch.arange(12), pos].min() > 0.5
    assert loo[:, 1].max() < 0.05


# --- adversarial attention --------------------------------------------------------------------------------

def test_adversarial_rows_keep_the_output_within_the_bound_they_report(model, batch):
    x, pos, _ = batch
    eps = 0.01
    adv = E.adversarial(model, x, pos, k=2, eps=eps, steps=60, seed=0)
    assert adv["weights"].shape == (12, 2, 2, T) and adv["jsd"].shape == (12, 2)
    assert adv["feasible"].any(1).float().mean() > 0.8
    assert (adv["max_jsd"].nan_to_num(0) > 0.005).float().mean() > 0.5  # far from the learned row, same output
    base = E.output_at(model, x, pos)
    learned = E.attention_row(model, x, pos)
    for i in range(2):
        rows = adv["weights"][:, i]  # (B, H, T)
        assert torch.allclose(rows.sum(-1), torch.ones(12, 2), atol=1e-5)
        assert (rows * after(pos)[:, None]).abs().sum() == 0
        ok = adv["feasible"][:, i]
        measured = E.tv(E.output_at(model, x, pos, rows=rows), base)  # the model run again with these rows
        assert (measured[ok] <= eps + 1e-5).all()
        assert torch.allclose(measured[ok], adv["tv"][ok, i], atol=1e-5)
        assert torch.allclose(E.jsd(rows.mean(1), learned.mean(1))[ok], adv["jsd"][ok, i], atol=1e-5)
    assert (adv["max_jsd"][adv["feasible"].any(1)] <= math.log(2)).all()


def test_adversarial_search_reports_failure_when_nothing_can_move(model, batch):
    x, pos, _ = batch
    adv = E.adversarial(model, x[:4], pos[:4], k=2, eps=0.0, steps=15)
    assert not adv["feasible"].any() and adv["max_jsd"].isnan().all() and adv["tv_at_max"].isnan().all()
    assert (adv["tv"] > 0).all()  # the closest the search came, honestly above the bound


# --- Wiegreffe & Pinter, and the summary ---------------------------------------------------------------

def test_uniform_attention_loses_the_copy_task(model, batch):
    """W&P's baseline: here attention is needed, so frozen uniform weights do much worse than learned ones."""
    x, pos, target = batch
    uni = E.uniform_baseline(model, x, pos, target)
    assert uni["correct_learned"].all() and uni["correct_row"].float().mean() < 0.5
    assert uni["tv_row"].median() > 0.3 and (uni["jsd_learned_uniform"] > 0.05).all()


@pytest.fixture(scope="module")
def record(model, batch):
    x, pos, target = batch
    return E.explain(model, x, pos, target, neutral=0, n_perm=4, k=2, steps=20, n_show=2, other=model)


def test_explain_is_one_json_record(record, batch):
    _, pos, _ = batch
    res = record
    json.dumps(res, allow_nan=False)
    assert res["n_examples"] == 12 and res["layer"] == 0 and res["n_heads"] == 2 and res["pos"] == pos.tolist()
    for section, key in (("correlation", "tau_attention_gradient"), ("correlation", "tau_gradient_loo"),
                         ("permutation", "median_tv"), ("adversarial", "max_jsd"), ("uniform", "tv_row")):
        assert len(res[section][key]) == 12
    assert -1 <= res["correlation"]["mean_tau_attention_gradient"] <= 1
    assert len(res["correlation"]["mean_tau_attention_loo_per_head"]) == 2
    assert res["accuracy"]["learned"] == 1.0 and res["accuracy"]["row"] < 0.5
    correct = res["accuracy"]["correct"]  # each sentence's outcome, so that the accuracy lost is paired
    assert correct["learned"] == [True] * 12
    assert sum(correct["row"]) / 12 == pytest.approx(res["accuracy"]["row"], rel=1e-5)
    assert res["seeds"]["mean_jsd"] == 0.0  # a model against itself: the yardstick's zero
    a, p = res["adversarial"], res["permutation"]
    assert len(a["jsd_under_bound"]) == 12 and a["se_median_jsd_under_bound"] >= 0
    assert p["mean_median_tv"] > 2 * p["se_mean_median_tv"] > 0  # the copy head's row does matter
    shown = res["examples"][0]
    assert len(shown["learned"]) == 2 and len(shown["learned"][0]) == pos[0] + 1
    assert len(shown["adversarial"]) == 2 and len(shown["adversarial"][0][0]) == pos[0] + 1


def s9(root):
    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.registry import load_registry
    from attnlab.results import gather

    registry, res = load_registry(), gather(root)
    return {cid: evaluate(registry.by_id(cid), res) for cid in ("S9.2", "S9.3")}


def se_over(values):
    return statistics.stdev(values) / math.sqrt(len(values))


def agresti_min(learned, row):
    """The accuracy lost's error from each sentence's outcome under both rows: the share right under the learned
    row only and under the uniform one only, half a sentence added to each of the four cells."""
    n = len(learned) + 2
    b = (sum(l_ and not r for l_, r in zip(learned, row)) + 0.5) / n
    c = (sum(r and not l_ for l_, r in zip(learned, row)) + 0.5) / n
    return math.sqrt((b + c - (b - c) ** 2) / n)


def test_s9_2_and_s9_3_are_judged_on_their_errors_over_the_sentences(record, tmp_path):
    """Each part's error is the one of its statistic over the held-out sentences: the τs' mean, the paired gap
    of two τs and of two accuracies (each sentence right or wrong under both rows), a bootstrap of a ratio of
    medians."""
    write_json(tmp_path / "explanation" / "result.json", record)
    v = s9(tmp_path)
    c, correct = record["correlation"], record["accuracy"]["correct"]
    assert v["S9.2"].se["tau_attention_gradient"] == pytest.approx(se_over(c["tau_attention_gradient"]))
    assert v["S9.2"].se["gap_to_reference"] == pytest.approx(
        se_over([g - a for g, a in zip(c["tau_gradient_loo"], c["tau_attention_loo"])]))
    # a mean over 12 sentences: Student's t at 11 df, in one look (S9's result is made at no seed: none can be added)
    assert v["S9.2"].parts["tau_attention_gradient"].k == k_at(11, sum(LOOKS)) and round(k_at(11, 0.05), 3) == t95(11)
    assert v["S9.3"].se["accuracy_lost_to_uniform"] == pytest.approx(agresti_min(correct["learned"], correct["row"]))
    assert v["S9.3"].se["adversary_over_seed"] > 0
    assert v["S9.3"].parts["accuracy_lost_to_uniform"].outcome == "reproduced"  # the copy task needs attention


def test_the_version_of_record_has_an_interval_for_s9_2_and_s9_3():
    """Its result file holds the per-sentence τs and divergences, not which sentences the uniform row got right:
    the accuracy lost takes the largest error the two accuracies allow (0.7656 and 0.0938 on 64 sentences)."""
    v = s9(REPO / "results" / "2026-11-30-quick-cpu-3c6d867")
    assert v["S9.2"].verdict == "not reproduced" and v["S9.3"].verdict == "reproduced"
    lost = v["S9.3"].parts["accuracy_lost_to_uniform"]
    learned, row = [True] * 49 + [False] * 15, [False] * 49 + [True] * 6 + [False] * 9  # none right under both
    assert lost.se == pytest.approx(agresti_min(learned, row)) and lost.interval[0] > 0.1
    assert all(p.se for verdict in v.values() for p in verdict.parts.values())


@pytest.mark.parametrize("adversary, seeds, lost, side", [
    (0.10, 0.19, 0.67, "Wiegreffe and Pinter's way"),
    (0.30, 0.05, 0.67, "Jain and Wallace's way"),
    (0.30, 0.05, 0.00, "Jain and Wallace's way"),
    (0.01, 0.19, 0.00, "mixed"),
])
def test_the_page_says_which_way_the_evidence_points_from_the_numbers(adversary, seeds, lost, side):
    from attnlab.experiments.explanation.page import reading

    r = {"n_examples": 10, "adversarial": {"n_feasible": 10, "eps": 0.01, "median_max_jsd": adversary},
         "seeds": {"median_jsd": seeds}, "accuracy": {"learned": 0.9, "row": 0.9 - lost},
         "correlation": {"mean_tau_attention_gradient": 0.5, "mean_tau_attention_loo": 0.5,
                         "mean_tau_gradient_loo": 0.6}}
    assert side in reading(r)


@pytest.mark.parametrize("far, se, said", [(0.101, None, "above (no error recorded) the 0.1 nats"),
                                           (0.101, 0.01, "within two standard errors of the 0.1 nats"),
                                           (0.150, 0.01, "above the 0.1 nats"), (0.050, 0.01, "below the 0.1 nats")])
def test_the_adversaries_divergence_is_read_against_jain_and_wallaces_large_within_its_noise(far, se, said):
    from attnlab.experiments.explanation.page import reading

    r = {"n_examples": 10, "adversarial": {"n_feasible": 10, "eps": 0.01, "median_max_jsd": far,
                                           "median_jsd_under_bound": far, "se_median_jsd_under_bound": se},
         "seeds": {"median_jsd": 0.19}, "accuracy": {"learned": 0.9, "row": 0.2},
         "correlation": {"mean_tau_attention_gradient": 0.5, "mean_tau_attention_loo": 0.5,
                         "mean_tau_gradient_loo": 0.6}}
    assert f"the median is {far:.3f} nats, {said} Jain and Wallace call a large divergence" in reading(r)


@pytest.mark.parametrize("adversary, conclusion", [(0.5, "mixed"), (0.1, "Wiegreffe and Pinter's way"),
                                                   (2.0, "Jain and Wallace's way")])
def test_the_seed_yardstick_decides_a_side_only_outside_the_bootstrap_noise(adversary, conclusion):
    from attnlab.experiments.explanation.page import reading

    seeds = [0.3, 0.7, 0.4, 0.6, 0.5, 0.45, 0.55, 0.35, 0.65, 0.5]  # median 0.5: a ratio of 1 at adversary 0.5
    r = {"n_examples": 10, "adversarial": {"n_feasible": 10, "eps": 0.01, "median_max_jsd": adversary,
                                           "max_jsd": [adversary + (s - 0.5) for s in seeds]},
         "seeds": {"median_jsd": 0.5, "jsd": seeds}, "accuracy": {"learned": 0.9, "row": 0.2},
         "correlation": {"mean_tau_attention_gradient": 0.5, "mean_tau_attention_loo": 0.5,
                         "mean_tau_gradient_loo": 0.6}}
    text = reading(r)
    assert conclusion in text
    assert ("within two standard errors" in text) == (conclusion == "mixed")
