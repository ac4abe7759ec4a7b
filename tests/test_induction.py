import csv
import math
import random
import statistics
import sys

import pytest
import torch

from attnlab.claims.design import LOOKS, k_at
from attnlab.config import chosen, validate
from attnlab.errors import AttnlabError
from attnlab.experiments.induction.producer import (InductionProbe, across_seeds, chance_level, control, copying, icl_score,
                                           lag, measure, over_chance_se, phase_across_seeds, phase_change,
                                           prefix_matching, previous_token, repeated_spans, rise_window, same_phase)
from attnlab.nn.model import SelfAttention, build
from attnlab.nn.spec import ModelSpec
from attnlab.provenance import write_json
from attnlab.train import train
from helpers import REPO, tiny_config


def spans(n=8, length=48, span=8, vocab=64, seed=0):
    return repeated_spans(n, length, span, vocab, torch.Generator().manual_seed(seed))


def hand_weights(tokens, rule):
    """(B, 1, T, T) rows built one at a time: all weight on the key rule(row, i) picks."""
    B, T = tokens.shape
    w = torch.zeros(B, 1, T, T)
    for b in range(B):
        for i in range(T):
            w[b, 0, i, rule(tokens[b].tolist(), i)] = 1.0
    return w


def after_last_occurrence(row, i):
    earlier = [j for j in range(i) if row[j] == row[i]]
    return earlier[-1] + 1 if earlier else i


def uniform(B, T):
    return torch.ones(T, T).tril().div(torch.arange(1, T + 1)[:, None]).expand(B, 1, T, T)


def test_hand_built_induction_head_scores_one_and_uniform_attention_scores_chance():
    tokens = spans()
    induction = hand_weights(tokens, after_last_occurrence)
    assert prefix_matching(induction, tokens).item() == pytest.approx(1.0)
    flat = prefix_matching(uniform(*tokens.shape), tokens).item()
    assert flat == pytest.approx(chance_level(tokens)) and flat < 0.15
    # uniform rows give each earlier occurrence's successor 1 / (i + 1): worked out by hand
    assert prefix_matching(uniform(1, 6), torch.tensor([[1, 2, 3, 1, 2, 3]])).item() == pytest.approx(
        (1 / 4 + 1 / 5 + 1 / 6) / 3)
    assert torch.isnan(prefix_matching(uniform(1, 4), torch.tensor([[1, 2, 3, 4]])))  # nothing repeats


def test_previous_token_head_scores_one_on_previous_token_and_little_on_prefix_matching():
    tokens = spans()
    prev = hand_weights(tokens, lambda row, i: max(i - 1, 0))
    both = torch.cat([prev, uniform(*tokens.shape)], dim=1)  # (B, 2, T, T): a head of each kind
    scores = previous_token(both)
    assert scores[0].item() == pytest.approx(1.0) and scores[1].item() < 0.15
    assert prefix_matching(prev, tokens).item() < 0.3


def test_repeated_spans_repeat_their_span_and_follow_the_seed():
    length, span = 40, 6
    tokens = spans(n=50, length=length, span=span, vocab=16, seed=3)
    assert tokens.shape == (50, length) and tokens.dtype == torch.long
    assert 0 <= tokens.min() and tokens.max() < 16
    for row in tokens:
        head = row[:span]
        copies = [p for p in range(span, length - span + 1) if torch.equal(row[p : p + span], head)]
        assert copies, f"the span {head.tolist()} never recurs in {row.tolist()}"
    assert torch.equal(tokens, spans(n=50, length=length, span=span, vocab=16, seed=3))
    assert not torch.equal(tokens, spans(n=50, length=length, span=span, vocab=16, seed=4))
    offsets = {int(p) for row in tokens
               for p in range(span, length - span + 1) if torch.equal(row[p : p + span], row[:span])}
    assert len(offsets) > 3  # the copies sit at varying distances: no fixed-offset head can predict them


@pytest.mark.parametrize("length, span, vocab, named", [
    (32, 0, 16, "0"),     # span < 1
    (8, 9, 16, "9"),      # span longer than the sequence
    (15, 8, 16, "15"),    # too short for the span to repeat
    (32, 4, 1, "1"),      # one token cannot make random sequences
])
def test_repeated_spans_rejects_bad_input_in_one_line(length, span, vocab, named):
    with pytest.raises(AttnlabError) as err:
        repeated_spans(4, length, span, vocab, torch.Generator().manual_seed(0))
    assert len(str(err.value).splitlines()) == 1 and named in str(err.value)


def test_icl_score_is_negative_when_late_tokens_are_predicted_better():
    falling = torch.linspace(4.0, 1.0, 64)
    assert icl_score(falling) == pytest.approx(-3.0 * 0.8, abs=0.1)  # from 10 % to 90 % of the way down
    assert icl_score(falling.flip(0)) > 0
    assert icl_score(torch.full((64,), 2.5)) == pytest.approx(0.0)
    batch = torch.stack([falling, falling + 1.0, falling - 1.0])  # (B, T): the mean over the batch
    assert icl_score(batch) == pytest.approx(icl_score(falling))


def test_phase_change_finds_the_jump_and_none_on_a_flat_series():
    steps = list(range(0, 500, 50))
    jump = [0.05] * 4 + [0.8] * 6  # jumps between steps 150 and 200
    found = phase_change(steps, jump)
    assert found["step"] == 200 and found["before"] == pytest.approx(0.05) and found["after"] == pytest.approx(0.8)
    icl = [0.0] * 5 + [-1.5] * 5  # falls one probe interval later
    assert phase_change(steps, icl)["step"] == 250
    assert same_phase(found, phase_change(steps, icl), steps)
    assert not same_phase(found, phase_change(steps, [0.0] * 8 + [-1.5] * 2), steps)  # 4 intervals apart
    flat = phase_change(steps, [0.05 + 0.01 * (-1) ** i for i in range(10)])
    assert flat["step"] is None and flat["before"] is None and abs(flat["change"]) < 0.1
    assert not same_phase(found, flat, steps)


def test_a_sudden_rise_has_a_short_window_and_a_steady_climb_a_long_one():
    steps = list(range(0, 425, 25))
    sudden = [0.1] * 7 + [0.4, 0.7] + [0.75] * 8  # most of the rise between two probes
    window = rise_window(steps, sudden)
    assert window["from"] == 175 and window["to"] == 200 and window["width"] == pytest.approx(25 / 400)
    steady = [0.1 + 0.04 * i for i in range(17)]  # the same net rise, spread evenly over training
    assert rise_window(steps, steady)["width"] == pytest.approx((375 - 50) / 400)
    assert rise_window(steps, [0.1] * 17)["width"] == 1.0  # no rise at all: as slow as training itself


def runs_at(rise_at: int, drop_at: int | None, icl_one: float = -0.1) -> dict:
    """control()'s runs for one seed: a two-layer model whose score jumps and whose ICL score drops at the
    given steps (None: never), and a one-layer model with ICL score `icl_one`."""
    steps = list(range(0, 425, 25))
    score = [0.1 if st < rise_at else 0.75 for st in steps]
    icl = [0.0 if drop_at is None or st < drop_at else -2.0 for st in steps]
    rise, drop = phase_change(steps, score), phase_change(steps, icl)
    two = {"steps": steps, "final": {"icl": icl[-1]}, "lag_intervals": lag(rise, drop, steps),
           "rise_window": rise_window(steps, score)}
    return {"attn-only-2": two, "attn-only-1": {"final": {"icl": icl_one}}}


def test_phase_across_seeds_gives_each_measure_a_mean_and_its_error_over_seeds():
    phase = phase_across_seeds({1: runs_at(150, 150), 2: runs_at(200, 250), 3: runs_at(250, None)})
    assert phase["seeds"] == 3 and phase["by_seed"]["2"]["lag_intervals"] == 2.0
    assert phase["by_seed"]["3"]["lag_intervals"] == 16.0  # a drop that never came: the whole run
    assert phase["lag_intervals"]["mean"] == pytest.approx(6.0) and phase["lag_intervals"]["se"] > 4
    assert phase["rise_width"] == {"mean": 0.0, "se": 0.0}  # every jump between two probes
    assert phase["icl_two_minus_one"]["mean"] == pytest.approx((-1.9 - 1.9 + 0.1) / 3)


def test_a_seed_whose_model_diverged_drops_out_of_the_phase_and_one_seed_has_no_error():
    diverged = {"attn-only-2": {"status": "diverged", "layers": 2}, "attn-only-1": {"final": {"icl": 0.0}}}
    phase = phase_across_seeds({1: runs_at(150, 150), 2: diverged})
    assert phase["seeds"] == 1 and phase["by_seed"]["2"] is None
    assert phase["rise_width"]["se"] is None and phase["lag_intervals"]["mean"] == 0.0
    assert phase_across_seeds({2: diverged})["rise_width"] == {"mean": None, "se": None}


def tiny_lm(n_blocks=2, seed=0):
    torch.manual_seed(seed)
    return build(ModelSpec(vocab_size=16, d_model=16, context=12, n_blocks=n_blocks, mixer="multihead", n_heads=2,
                           mlp=False, norm="pre", position="learned"))


@pytest.mark.parametrize("training", [True, False])
def test_probe_leaves_the_model_as_found_and_returns_the_documented_keys(training):
    model = tiny_lm().train(training)
    probe = InductionProbe(spans(n=4, length=13, span=4, vocab=16), every=5)
    row = probe(0, model, float("nan"))
    heads = [f"{kind}_L{l}H{h}" for kind in ("prefix", "prev") for l in range(2) for h in range(2)]
    assert set(row) == set(heads) | {"induction", "icl", "loss", "chance"}
    assert row["induction"] == max(row[f"prefix_L{l}H{h}"] for l in range(2) for h in range(2))
    assert math.isfinite(row["loss"]) and math.isfinite(row["icl"])
    assert model.training == training
    assert all(not m.keep_weights and m.kept is None for m in model.modules() if isinstance(m, SelfAttention))
    assert probe(3, model, 1.0) is None and probe(10, model, 1.0) is not None


def test_measure_returns_per_layer_per_head_scores():
    scores = measure(tiny_lm(), spans(n=4, length=13, span=4, vocab=16))
    assert [len(layer) for layer in scores["prefix"]] == [2, 2] == [len(layer) for layer in scores["previous"]]
    assert len(scores["losses"]) == 12 and scores["loss"] == pytest.approx(sum(scores["losses"]) / 12, rel=1e-5)


def test_copying_score_is_one_for_a_copying_head_and_zero_for_its_negative():
    V, d = 4, 8
    model = build(ModelSpec(vocab_size=V, d_model=d, context=8, n_blocks=1, mixer="multihead", n_heads=2,
                            mlp=False, norm="none", position="learned"))
    embed = torch.cat([torch.eye(V), torch.eye(V)], dim=1)  # token t on dims t and V + t: both heads read it
    attn = model.blocks[0].mixer
    with torch.no_grad():
        model.tok.weight.copy_(embed)
        model.head.weight.copy_(embed)
        attn.v.weight.copy_(torch.eye(d))
        attn.out.weight.copy_(torch.diag(torch.tensor([1.0] * V + [-1.0] * V)))  # head 1 writes minus its token
    assert copying(model).tolist() == [[1.0, 0.0]]


def test_two_layers_form_an_induction_head_and_one_layer_does_not(tmp_path):
    """Olsson et al.'s central contrast: an induction head needs a previous-token head in an earlier layer."""
    V, T, span, steps, every = 64, 48, 8, 300, 25
    gen = torch.Generator().manual_seed(0)
    data, val, probe_rows = (repeated_spans(n, T + 1, span, V, gen) for n in (1000, 32, 32))
    cfg = tiny_config(steps=steps, batch_size=32, lr=3e-3, eval_every=steps, eval_windows=4, ckpt_every=10 ** 6,
                      train_eval_tokens=8 * T, warmup_steps=0)
    found = {}
    for layers in (1, 2):
        spec = ModelSpec(vocab_size=V, d_model=64, context=T, n_blocks=layers, mixer="multihead", n_heads=4,
                         mlp=False, norm="pre", position="learned")
        out = tmp_path / str(layers)
        train(spec, cfg, data, val, out, name=f"A{layers}", experiment="induction",
              probes=[InductionProbe(probe_rows, every)], progress=False)
        with open(out / "probes.csv") as f:
            found[layers] = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    chance = found[2][-1]["chance"]
    one, two = found[1][-1]["induction"], found[2][-1]["induction"]
    print(f"chance {chance:.3f}, best prefix score: 1 layer {one:.3f}, 2 layers {two:.3f}", file=sys.stderr)
    assert two > 0.5 and two > 5 * chance
    assert one < 0.25 and one < two / 3
    assert found[2][-1]["icl"] < -0.8 < found[1][-1]["icl"]
    steps_seen = [r["step"] for r in found[2]]
    rise = phase_change(steps_seen, [r["induction"] for r in found[2]])
    drop = phase_change(steps_seen, [r["icl"] for r in found[2]])
    assert 0 < rise["step"] < steps and same_phase(rise, drop, steps_seen)
    assert phase_change(steps_seen, [r["induction"] for r in found[1]])["step"] is None
    model = build(spec)  # the 2-layer model as trained: its best induction head also copies
    model.load_state_dict(torch.load(tmp_path / "2" / "ckpt.pt", weights_only=True)["model"])
    best = max(range(4), key=lambda h: found[2][-1][f"prefix_L1H{h}"])
    assert copying(model)[1, best] > 0.5  # chance: 1 / 64


def test_the_page_reads_the_phase_over_seeds_and_says_nothing_for_older_run_files():
    from attnlab.experiments.induction.page import phase_reading

    phase = phase_across_seeds({1: runs_at(150, 175), 2: runs_at(200, 200)})
    text = phase_reading(phase)
    assert "Over 2 seeds" in text and "0.0% ± 0.0% of training" in text and "0.5 ± 0.5 probe intervals" in text
    assert phase_reading(None) == "" and phase_reading(phase_across_seeds({})) == ""


def test_the_error_of_the_best_head_over_chance_is_a_bootstrap_over_the_rows():
    """The same draws of rows as attnlab.stats.bootstrap_se, each scored from scratch by prefix_matching and
    chance_level: the best head chosen again in every draw."""
    tokens = spans(n=10, length=24, span=4, vocab=8, seed=3)
    gen = torch.Generator().manual_seed(0)
    weights = [torch.rand(10, 2, 24, 24, generator=gen).tril().softmax(-1).tril() for _ in range(2)]
    weights = [w / w.sum(-1, keepdim=True) for w in weights]
    rng, draws = random.Random(0), []
    for _ in range(400):
        idx = [rng.randrange(10) for _ in range(10)]
        best = max(max(prefix_matching(w[idx], tokens[idx]).tolist()) for w in weights)
        draws.append(best / chance_level(tokens[idx]))
    assert over_chance_se(weights, tokens) == pytest.approx(statistics.stdev(draws), rel=1e-5)
    distinct = torch.arange(24).repeat(10, 1)  # no token repeats: no row has a score to draw
    distinct[0, 5] = distinct[0, 2]  # one row that has: still no spread to tell
    assert over_chance_se(weights, distinct) is None
    distinct[1, 7] = distinct[1, 1]  # two: rows without a repeated token are left out of every draw
    assert over_chance_se(weights, distinct) == pytest.approx(over_chance_se([w[:2] for w in weights], distinct[:2]))


def test_measure_gives_the_error_over_the_rows_when_asked():
    rows = spans(n=4, length=13, span=4, vocab=16)
    assert "se_over_chance" not in measure(tiny_lm(), rows)  # every probe of training: not needed there
    assert measure(tiny_lm(), rows, se=True)["se_over_chance"] > 0


def s10(root, *ids):
    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.registry import load_registry
    from attnlab.results import gather

    registry, res = load_registry(), gather(root)
    return [evaluate(registry.by_id(cid), res) for cid in ids]


def text_at(induction: float, se: float) -> dict:
    """on_text()'s scores, the best head `induction` times chance, with the windows' error of that ratio."""
    return {name: {"induction": 0.05 * induction, "chance": 0.05, "se_over_chance": se} for name in ("B2", "L9")}


def test_s10_1_and_s10_3_are_read_at_every_seed_and_judged_on_the_larger_error(tmp_path):
    """The measurements as the producer keeps them (across_seeds; the control models here the smoke profile's,
    trained at two seeds): each claim is the mean over the seeds. S10.1 is judged on the seeds' spread (t at 1
    degree of freedom); S10.3 on that spread and the windows' error the files state (which the seeds do not
    shrink) in quadrature. S10.2 (the phase over seeds, held once) is read once."""
    cfg = validate(chosen({"profile": "smoke"}, []))
    controls = {seed: control(cfg, tmp_path / "runs" / str(seed), seed) for seed in (1337, 1338)}
    texts = {1337: text_at(4.0, 0.3), 1338: text_at(4.2, 0.5)}
    write_json(tmp_path / "r" / "induction" / "result.json", across_seeds(controls, texts))
    one, two, three = s10(tmp_path / "r", "S10.1", "S10.2", "S10.3")
    ratios = [c["attn-only-2"]["final"]["induction"] / c["attn-only-2"]["final"]["chance"] for c in controls.values()]
    assert sorted(one.seeds) == [1337, 1338] and one.parts["one_layer_share"].df == 1
    assert one.reproduced["two_layers_over_chance"] == pytest.approx(sum(ratios) / 2)
    assert one.se["two_layers_over_chance"] == pytest.approx(abs(ratios[0] - ratios[1]) / 2)
    assert sorted(three.seeds) == [1337, 1338] and three.reproduced["two_blocks_over_chance"] == pytest.approx(4.1)
    part = three.parts["two_blocks_over_chance"]  # seeds 4.0 and 4.2: 0.1; the windows: (0.3 + 0.5) / 2 = 0.4
    seeds, windows = 0.1 ** 2, 0.4 ** 2  # in quadrature; k weighs the seeds' t at 1 df and the normal's
    k = math.sqrt((k_at(1, LOOKS[0]) ** 2 * seeds + k_at(math.inf, LOOKS[0]) ** 2 * windows) / (seeds + windows))
    assert (part.se, part.k, part.dominant) == (pytest.approx(math.sqrt(seeds + windows)), pytest.approx(k), "sampling")
    assert two.seeds == {}


def test_the_version_of_record_leaves_s10_1_and_s10_3_not_run():
    """Its result file holds the control models at one seed and no per-seed record: nothing to judge on, and the
    verdict names the field it lacks."""
    for v in s10(REPO / "results" / "2026-11-30-quick-cpu-3c6d867", "S10.1", "S10.3"):
        assert v.verdict == "not run" and v.lacking == ("by_seed",)
        assert "is null: the run files lack by_seed, which the claim reads" in v.note


@pytest.mark.parametrize("icl, se, said", [(0.45, 0.19, "the loss rises with position"),
                                           (0.30, 0.19, "within two standard errors of 0"),
                                           (-0.30, 0.19, "within two standard errors of 0"),
                                           (-0.45, 0.19, "the loss falls with position"),
                                           (0.45, None, "no error was recorded")])
def test_the_text_reading_says_a_direction_of_loss_with_position_only_outside_the_noise(icl, se, said):
    from attnlab.experiments.induction.page import text_reading

    t = {"blocks": 1, "induction": 0.2, "chance": 0.1, "icl": icl, "icl_se": se, "windows": 32}
    text = text_reading({"L9": t})
    assert said in text and f"{icl:+.3f} nats" in text
    assert ("opposite of in-context learning" in text) == (said == "the loss rises with position")


def test_icl_se_is_the_spread_of_each_rows_late_minus_early_loss():
    import math

    import torch

    from attnlab.experiments.induction.producer import icl_score, icl_se

    losses = torch.zeros(4, 80)
    losses[:, 70:] = torch.tensor([1.0, 2.0, 3.0, 4.0])[:, None]  # late minus early: 1, 2, 3, 4 by row
    assert icl_score(losses) == pytest.approx(2.5)
    assert icl_se(losses) == pytest.approx(torch.tensor([1.0, 2.0, 3.0, 4.0]).std().item() / math.sqrt(4))
    assert icl_se(losses[:1]) is None


@pytest.mark.parametrize("icl, se, words", [(-0.30, 0.05, "falls with position"),
                                            (0.44, 0.21, "rises with position, the opposite"),
                                            (0.05, 0.21, "within two standard errors of 0"), (0.3, None, "no error")])
def test_the_in_context_learning_sentence_follows_the_score_and_names_its_error(icl, se, words):
    from attnlab.experiments.induction.page import icl_words

    said = icl_words(icl, se)
    assert words in said and (", one standard error" in said) == (se is not None)
    assert ("the opposite" in said) == (words.startswith("rises"))
