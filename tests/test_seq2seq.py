import json
import math
import statistics

import pytest
import torch
import torch.nn.functional as F

from attnlab.claims.design import LOOKS, k_at
from attnlab.errors import AttnlabError
from attnlab.experiments.seq2seq import producer as s2s
from attnlab.experiments.seq2seq.producer import accuracy, gradient_path, jacobian_norms, task_rows
from attnlab.nn.seq2seq import CELLS, SCORES, VARIANTS, WIRINGS, Seq2SeqSpec, greedy, rnn_output
from attnlab.train import finished, train

ATTENTION = [v for v in VARIANTS if v != "none"]
TINY_TRAIN = {**s2s.settings()["train"], "steps": 300, "batch_size": 32, "eval_every": 100, "ckpt_every": 100,
              "eval_windows": 32, "train_eval_tokens": 512}


@pytest.fixture(autouse=True)
def keep_threads():
    """Tiny recurrent models run fastest on one thread; the tests that train set it, and it is put back."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def hand_score(name: str, module, q: list, k: list) -> float:
    """One score written out in plain Python from the module's weights."""
    d = len(q)
    if name == "dot":
        return sum(q[i] * k[i] for i in range(d))
    if name == "general":
        W = module.W.weight.tolist()
        return sum(q[i] * sum(W[i][j] * k[j] for j in range(d)) for i in range(d))
    v = module.v.weight[0].tolist()
    if name == "bahdanau":
        W1, W2 = module.W1.weight.tolist(), module.W2.weight.tolist()
        return sum(v[m] * math.tanh(sum(W1[m][j] * q[j] + W2[m][j] * k[j] for j in range(d))) for m in range(d))
    W, qk = module.W.weight.tolist(), q + k  # concat
    return sum(v[m] * math.tanh(sum(W[m][j] * qk[j] for j in range(2 * d))) for m in range(d))


@pytest.mark.parametrize("name", ATTENTION)
def test_score_equals_hand_computation(name):
    torch.manual_seed(0)
    module = SCORES[name](3)
    q, k = torch.randn(2, 2, 3), torch.randn(2, 4, 3)  # (B, T, d), (B, S, d)
    scores = module(q, k)
    assert scores.shape == (2, 2, 4)
    for b in range(2):
        for t in range(2):
            for s in range(4):
                expected = hand_score(name, module, q[b, t].tolist(), k[b, s].tolist())
                assert scores[b, t, s].item() == pytest.approx(expected, abs=1e-5), (b, t, s)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_none_sees_only_the_last_encoder_state(cell, bidirectional):
    """With the encoder's last state held fixed, changing every other encoder output changes nothing for 'none'
    and changes the output of every attention variant."""
    rows = task_rows("reverse", 4, 5, 8, torch.Generator().manual_seed(0))
    for variant in [v for v in VARIANTS if bidirectional or WIRINGS[v] != "bahdanau"]:
        torch.manual_seed(0)
        model = Seq2SeqSpec(8, 5, cell, variant, 16, bidirectional).build().eval()
        memory, last, state = model.encode(rows[:, :5])
        other = memory + torch.randn_like(memory)  # every encoder state, with `last` and the state it starts kept
        dec_in = rows[:, 5:-1]
        a, _, _ = model.decode(memory, last, dec_in, state)
        b, _, _ = model.decode(other, last, dec_in, state)
        if variant == "none":
            assert torch.equal(a, b)
        else:
            assert not torch.allclose(a, b, atol=1e-4), variant


def test_loss_is_over_target_positions_only():
    torch.manual_seed(0)
    S = 4
    model = Seq2SeqSpec(8, S, "gru", "dot", 16).build()
    rows = task_rows("copy", 3, S, 8, torch.Generator().manual_seed(1))
    x, y = rows[:, :-1], rows[:, 1:]
    logits, loss = model(x, y)
    assert logits.shape == (3, 2 * S, 9)
    assert loss.item() == pytest.approx(F.cross_entropy(logits[:, S:].flatten(0, 1), y[:, S:].flatten()).item())
    scrambled = y.clone()
    scrambled[:, :S] = torch.randint(9, (3, S))  # the source and SEP are not predicted
    assert model(x, scrambled)[1].item() == loss.item()
    wrong = y.clone()
    wrong[:, S] = (wrong[:, S] + 1) % 8
    assert model(x, wrong)[1].item() != loss.item()


# ----------------------------------------------------------------------------- the two wirings

WIRED = [(v, feed) for v in ATTENTION for feed in ([True, False] if WIRINGS[v] == "luong" else [True])]


def spy(model):
    """Record every call of the decoder RNN, its input and output, in order."""
    calls = {"rnn_in": [], "rnn_out": []}

    def rnn(module, args, out):  # a hook that returns nothing leaves the output as it is
        x, y = args[0], out[0] if isinstance(module, torch.nn.RNNBase) else rnn_output(out)
        calls["rnn_in"].append(x if x.dim() == 3 else x[:, None])  # (B, T, .): every step at once or one
        calls["rnn_out"].append(y if y.dim() == 3 else y[:, None])

    model.decoder.register_forward_hook(rnn)
    return calls


def wired(variant, cell="gru", feed=True, S=5):
    torch.manual_seed(0)
    model = Seq2SeqSpec(8, S, cell, variant, 16, True, feed).build().eval()
    rows = task_rows("reverse", 3, S, 8, torch.Generator().manual_seed(0))
    memory, last, state = model.encode(rows[:, :S])
    return model, rows, memory, last, state


@pytest.mark.parametrize("cell", CELLS)
def test_bahdanau_scores_with_the_previous_state_and_feeds_the_context_into_the_rnn(cell):
    """Step t's weights are the additive scores of s_{t-1} (s_0 = tanh(W_s backward_1) at the first step), not
    of s_t, and the RNN's input at step t is [E y_{t-1}; c_t] with c_t those weights over the 2d annotations."""
    model, rows, memory, last, state = wired("bahdanau", cell)
    calls = spy(model)
    dec_in = rows[:, 5:-1]
    _, weights, _ = model.decode(memory, last, dec_in, state)
    backward_1 = model.encoder(model.emb(rows[:, :5]))[0][:, 0, 16:]  # the backward half at the first position
    s0 = torch.tanh(model.init(backward_1))
    assert memory.shape == (3, 5, 32) and torch.allclose(rnn_output(state[0]), s0, atol=1e-6)
    states = [s0] + [out[:, 0] for out in calls["rnn_out"]]  # s_0 ... s_T
    for t in range(dec_in.size(1)):
        by_hand = F.softmax(model.score(states[t][:, None], memory), -1)  # s_{t-1}
        assert torch.allclose(weights[:, t : t + 1], by_hand, atol=1e-6)
        assert not torch.allclose(weights[:, t : t + 1], F.softmax(model.score(states[t + 1][:, None], memory), -1),
                                  atol=1e-4)  # not s_t
        rnn_in = calls["rnn_in"][t][:, 0]
        assert torch.allclose(rnn_in[:, :16], model.emb(dec_in[:, t]), atol=1e-6)
        assert torch.allclose(rnn_in[:, 16:], (weights[:, t : t + 1] @ memory)[:, 0], atol=1e-6)


@pytest.mark.parametrize("variant,feed", WIRED)
def test_where_the_context_enters(variant, feed):
    """Changing the annotations changes the decoder's states s_t where the context is an input of the recurrence
    (Bahdanau's at every step; Luong's with input feeding from the second step, through h~_1), and leaves them
    alone in Luong's without it, where the context is combined after the recurrence."""
    model, rows, memory, last, state = wired(variant, feed=feed)
    calls = spy(model)
    model.decode(memory, last, rows[:, 5:-1], state)
    model.decode(memory + torch.randn_like(memory), last, rows[:, 5:-1], state)
    n = len(calls["rnn_out"]) // 2
    a, b = torch.cat(calls["rnn_out"][:n], 1), torch.cat(calls["rnn_out"][n:], 1)  # (B, T, d) each
    if WIRINGS[variant] == "bahdanau":
        assert not torch.allclose(a[:, 0], b[:, 0], atol=1e-4)  # c_1 is already an input of s_1
    elif feed:
        assert torch.equal(a[:, 0], b[:, 0]) and not torch.allclose(a[:, 1:], b[:, 1:], atol=1e-4)
    else:
        assert torch.equal(a, b)


@pytest.mark.parametrize("feed", [True, False])
@pytest.mark.parametrize("variant", [v for v in ATTENTION if WIRINGS[v] == "luong"])
def test_luong_scores_the_current_state_and_combines_after_the_rnn(variant, feed):
    """Luong: the weights at step t score the RNN's output at the same step, the output reads
    h~_t = tanh(W_c [c_t; h_t]), and with input feeding the RNN's input at step t is [E y_{t-1}; h~_{t-1}]
    (h~_0 = 0)."""
    model, rows, memory, last, state = wired(variant, feed=feed)
    calls = spy(model)
    dec_in = rows[:, 5:-1]
    logits, weights, _ = model.decode(memory, last, dec_in, state)
    h = torch.cat(calls["rnn_out"], 1)  # (B, T, d)
    assert torch.allclose(weights, F.softmax(model.score(h, memory), -1), atol=1e-6)
    tilde = torch.tanh(model.combine(torch.cat([weights @ memory, h], -1)))
    assert torch.allclose(logits, model.head(tilde), atol=1e-5)
    if feed:
        fed = torch.cat([x[:, :, 16:] for x in calls["rnn_in"]], 1)  # the fed half of every step's input
        assert torch.equal(fed[:, 0], torch.zeros_like(fed[:, 0]))
        assert torch.allclose(fed[:, 1:], tilde[:, :-1], atol=1e-6)
    else:
        assert calls["rnn_in"][0].shape == (3, dec_in.size(1), 16)  # the embeddings alone, every step at once


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("variant,feed", [("none", True)] + WIRED)
def test_decoding_is_causal_and_greedy_matches_teacher_forcing(variant, feed, cell):
    """Under teacher forcing the output at step t reads no target token after t; and greedy decoding, one step at
    a time with the state carried, gives what teacher forcing on its own predictions gives."""
    S = 5
    model, rows, _, _, _ = wired(variant, cell, feed, S)
    x = rows[:, :-1]
    logits, _ = model(x)
    for t in range(S):
        changed = x.clone()
        changed[:, S + t + 1 :] = (changed[:, S + t + 1 :] + 1) % 8  # every target token after step t
        assert torch.equal(model(changed)[0][:, : S + t + 1], logits[:, : S + t + 1]), t
    pred, _ = greedy(model, rows[:, :S])
    forced = torch.cat([rows[:, : S + 1], pred[:, :-1]], 1)
    assert torch.equal(model(forced)[0][:, S:].argmax(-1), pred)


@pytest.mark.parametrize("variant", ["bahdanau", "dot"])
def test_both_wirings_learn_to_copy(variant):
    """Behaviour, not quality: a tiny model in each wiring trained briefly on copy lowers its held-out loss well
    below chance's (ln 9) and its teacher-forced accuracy above chance."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    rows, held_out = task_rows("copy", 256, 4, 8, gen), task_rows("copy", 64, 4, 8, gen)
    model = Seq2SeqSpec(8, 4, "gru", variant, 16).build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(60):
        batch = rows[torch.randint(len(rows), (32,), generator=gen)]
        loss = model(batch[:, :-1], batch[:, 1:])[1]
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        assert model(held_out[:, :-1], held_out[:, 1:])[1].item() < 0.8 * math.log(9)
    assert accuracy(model, held_out)["teacher_forced_accuracy"] > 2 / 8


@pytest.mark.parametrize("task", s2s.TASKS)
def test_rows_are_source_sep_target(task):
    S, vocab = 7, 12
    rows = task_rows(task, 50, S, vocab, torch.Generator().manual_seed(0))
    assert rows.shape == (50, 2 * S + 1) and rows.dtype == torch.long
    src, sep = rows[:, :S], rows[:, S]
    assert (sep == vocab).all() and src.min() >= 0 and src.max() < vocab
    for row in rows.tolist():
        source, target = row[:S], row[S + 1 :]
        assert target == (source if task == "copy" else source[::-1])
    assert not torch.equal(src, src.flip(1))  # the reversal is not read off a palindrome


@pytest.mark.parametrize("call,value", [
    (lambda: task_rows("sort", 2, 4, 8), "'sort'"),
    (lambda: task_rows("copy", 2, 0, 8), "0"),
    (lambda: task_rows("reverse", 2, 4, 1), "1"),
    (lambda: Seq2SeqSpec(cell="rnn"), "'rnn'"),
    (lambda: Seq2SeqSpec(score="luong"), "'luong'"),
    (lambda: gradient_path("cnn", 4), "'cnn'"),
    (lambda: Seq2SeqSpec(8, 4).build()(torch.zeros(1, 6, dtype=torch.long)), "7"),
    (lambda: s2s.settings({"lengths": [8, -1]}), "-1"),
    (lambda: s2s.settings({"lengths": [0]}), "0"),
    (lambda: s2s.settings({"variants": ["none", "luong"]}), "'luong'"),
    (lambda: s2s.settings({"cell": "rnn"}), "'rnn'"),
    (lambda: s2s.settings({"tasks": ["copy", "sort"]}), "'sort'"),
    (lambda: s2s.settings({"gradient": {"kinds": ["cnn"]}}), "'cnn'"),
    (lambda: s2s.settings({"map": {"variant": "none"}}), "'none'"),
    (lambda: s2s.settings({"variants": ["bahdanau", "dot"]}), "'none'"),
    (lambda: s2s.settings({"bidirectional": False}), "'bahdanau'"),
    (lambda: s2s.settings({"input_feeding": "yes"}), "'yes'"),
    (lambda: Seq2SeqSpec(score="bahdanau", bidirectional=False), "bidirectional"),
    (lambda: Seq2SeqSpec(input_feeding=1), "1"),
])
def test_bad_input_is_one_line(call, value):
    with pytest.raises(AttnlabError) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and value in message
    if "sort" in value:
        assert "copy" in message and "reverse" in message  # names the known tasks


class Kill(Exception):
    pass


def kill_at(step_to_die: int):
    def probe(step, model, loss):
        if step == step_to_die:
            raise Kill
    return probe


def test_train_learns_reverse_and_resumes(tmp_path):
    """The one training loop trains a tiny Bahdanau model on reverse far above chance, and a run killed after a
    checkpoint resumes from it to the same result as an uninterrupted one."""
    gen = torch.Generator().manual_seed(0)
    rows, held_out = task_rows("reverse", 2000, 6, 8, gen), task_rows("reverse", 200, 6, 8, gen)
    spec = Seq2SeqSpec(8, 6, "gru", "bahdanau", 32)
    cfg = {"seed": 0, "device": "cpu", "threads": 1, "train": TINY_TRAIN}
    whole = train(spec, cfg, rows, held_out, tmp_path / "whole", name="whole", progress=False)
    acc = accuracy(finished(tmp_path / "whole", spec), held_out)
    assert acc["token_accuracy"] > 0.5 and acc["teacher_forced_accuracy"] > 0.5  # chance: 1/8
    assert whole["param_breakdown"] == {"total": whole["n_params"]} and whole["spec"] == spec.to_dict()

    with pytest.raises(Kill):
        train(spec, cfg, rows, held_out, tmp_path / "cut", name="cut", progress=False, probes=[kill_at(150)])
    assert not (tmp_path / "cut" / "metrics.json").exists()
    cut = train(spec, cfg, rows, held_out, tmp_path / "cut", name="cut", progress=False)
    assert cut["resumed_from_step"] == 100
    assert cut["val_loss"] == whole["val_loss"] and cut["train_loss"] == whole["train_loss"]
    assert (tmp_path / "cut" / "curve.csv").read_text() == (tmp_path / "whole" / "curve.csv").read_text()


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_recurrent_gradient_path_vanishes(kind):
    torch.set_num_threads(1)  # a 64-step recurrence of tiny matrices: threads only add waiting
    for seed in range(3):
        assert gradient_path(kind, 64, seed=seed) < 1e-6 * gradient_path(kind, 2, seed=seed)


def test_attention_gradient_path_does_not_vanish():
    """Input 1 reaches output T through one softmax weight of about 1/T: the gradient falls no faster than 1/T,
    and input 1 counts about as much as the average input."""
    for seed in range(3):
        assert 64 * gradient_path("attention", 64, seed=seed) > 0.2 * 2 * gradient_path("attention", 2, seed=seed)
        norms = jacobian_norms("attention", 64, seed=seed)
        assert norms[0] > 0.2 * norms.mean()


def test_run_returns_every_run_and_resumes(tmp_path):
    section = {"tasks": ["reverse"], "lengths": [3, 5], "variants": ["none", "bahdanau"], "vocab": 4,
               "d_model": 8, "train_rows": 64, "eval_rows": 16,
               "gradient": {"kinds": ["rnn", "attention"], "lengths": [2, 4], "d": 4, "seeds": 1},
               "train": {"steps": 4, "batch_size": 4, "eval_every": 2, "eval_windows": 4, "ckpt_every": 2}}
    cfg = {"seed": 5, "seeds": [5, 6], "device": "cpu", "threads": 1, "profile": "smoke", "seq2seq": section}
    out = s2s.run(cfg, tmp_path)
    json.dumps(out)  # JSON-able
    assert sorted(r["name"] for r in out["runs"]) == sorted(f"reverse-S{S}-{v}-seed{k}" for S in (3, 5)
                                                           for v in ("none", "bahdanau") for k in (5, 6))
    assert all((tmp_path / r["name"] / "metrics.json").is_file() for r in out["runs"])
    assert {(r["variant"], r["source_length"], r["seeds"]) for r in out["summary"]} == \
        {(v, S, 2) for v in ("none", "bahdanau") for S in (3, 5)}
    assert len(out["gradient_path"]) == 4 and out["chance"] == 0.25
    assert out["wirings"] == {"none": None, "bahdanau": "bahdanau"} and out["settings"]["input_feeding"] is True
    assert out["contrasts"]["wiring"] == []  # no Luong score beside Bahdanau's
    assert set(out["gradient"]) == {"rnn", "attention"} and out["gradient"]["rnn"]["T_long"] == 4
    amap = out["attention_map"]
    assert amap["name"] == "reverse-S5-bahdanau-seed5" and len(amap["weights"]) == 5
    assert all(sum(row) == pytest.approx(1, abs=1e-4) for row in amap["weights"])
    c = out["contrasts"]
    assert (c["shortest"], c["longest"]) == (3, 5) and c["tasks"]["reverse"]["none_drop"]["seeds"] == 2
    assert c["worst_gain"]["bahdanau"]["task"] == "reverse"
    from attnlab.experiments.seq2seq.derive import seed_list
    from attnlab.experiments.seq2seq.page import accuracy_tables

    assert seed_list(out) == [5, 6] and "(mean ± standard deviation over 2 seeds)" in accuracy_tables(out)
    assert seed_list({"settings": {"seeds": 3}, "runs": [{"seed": k} for k in (9, 7, 8)]}) == [7, 8, 9]  # before
    again = s2s.run(cfg, tmp_path)
    assert [r["token_accuracy"] for r in again["runs"]] == [r["token_accuracy"] for r in out["runs"]]


def test_diverged_runs_are_recorded_and_the_claims_that_need_them_are_not_run(tmp_path):
    """S1 at a learning rate every run diverges on: the result records each run as diverged (at its step), each
    paired difference as the first diverged run's record; the claims that read them are "not run" naming that
    run, the gradient path (no training) is still judged, and the page lists the diverged runs."""
    from helpers import rendered_page, site_for, tiny_config
    from attnlab.provenance import write_json
    from attnlab.experiments.seq2seq import page

    section = {"tasks": ["copy", "reverse"], "lengths": [3, 5], "vocab": 4, "d_model": 8, "train_rows": 64, "eval_rows": 16, "gradient": {"lengths": [2, 4], "d": 4, "seeds": 1},
               "train": {"steps": 4, "batch_size": 4, "eval_every": 2, "eval_windows": 4, "ckpt_every": 2, "lr": 1e30}}
    out = s2s.run({"seed": 5, "seeds": [5], "device": "cpu", "threads": 1, "profile": "smoke", "seq2seq": section},
                  tmp_path / "seq2seq")
    assert {(r["status"], r["token_accuracy"]) for r in out["runs"]} == {("diverged", None)}
    first = out["runs"][0]
    assert out["contrasts"]["tasks"]["copy"]["none_drop"] == {
        "status": "diverged", "run": f"seq2seq {first['name']}", "diverged_at_step": first["diverged_at_step"]}
    assert out["contrasts"]["worst_gain"]["dot"]["status"] == out["contrasts"]["largest_drop_share"]["status"] == "diverged"
    write_json(tmp_path / "seq2seq" / "result.json", out)
    site = site_for(tmp_path, tiny_config())
    by_id = {v.claim.id: v for v in site.verdicts}
    assert (by_id["S1.1"].verdict, by_id["S1.1"].note) == ("not run", f"seq2seq {first['name']} diverged at step "
                                                                      f"{first['diverged_at_step']}")
    assert by_id["S1.2"].verdict == "not run" and "diverged at step" in by_id["S1.2"].note
    assert by_id["S1.3"].verdict in ("reproduced", "not reproduced", "inconclusive")
    assert f"{first['name']} diverged at step {first['diverged_at_step']}" in rendered_page(site, "seq2seq", page.blocks)


def fake_runs(values: dict) -> list[dict]:
    """Runs of one task: (variant, length) -> token accuracy per seed, each with a sampling error of 0.01."""
    return [{"task": "copy", "variant": v, "source_length": S, "seed": k, "token_accuracy": acc,
             "token_accuracy_se": 0.01} for (v, S), accs in values.items() for k, acc in enumerate(accs)]


def test_paired_difference_takes_the_larger_error():
    runs = fake_runs({("none", 4): [0.9, 0.8, 0.7], ("none", 16): [0.3, 0.3, 0.3]})
    d = s2s.paired(runs, "copy", ("none", 4), ("none", 16))
    assert d["mean"] == pytest.approx(0.5) and d["per_seed"] == pytest.approx([0.6, 0.5, 0.4])
    assert d["se"] == pytest.approx(0.1 / math.sqrt(3)) and d["se_from"] == "seeds"  # sd of 0.6, 0.5, 0.4 is 0.1
    calm = fake_runs({("none", 4): [0.9, 0.9, 0.9], ("none", 16): [0.3, 0.3, 0.3]})
    d = s2s.paired(calm, "copy", ("none", 4), ("none", 16))  # no seed spread: the held-out error still counts
    assert d["se"] == pytest.approx(math.sqrt(3 * 2 * 0.01 ** 2) / 3) and d["se_from"] == "held-out rows"
    assert s2s.paired(runs, "copy", ("dot", 4), ("none", 16)) is None  # a missing run: no difference


def test_contrasts_pick_the_worst_task_and_the_largest_drop_share():
    runs = fake_runs({("none", 4): [0.9, 0.9], ("none", 16): [0.3, 0.3], ("dot", 4): [1.0, 1.0],
                      ("dot", 16): [0.9, 0.9]})
    runs += [{**r, "task": "reverse", "token_accuracy": r["token_accuracy"] - (0.2 if r["variant"] == "dot" and
                                                                               r["source_length"] == 16 else 0)}
             for r in runs]
    s = {"lengths": [4, 16], "variants": ["none", "dot"], "tasks": ["copy", "reverse"]}
    c = s2s.contrasts(runs, s)
    assert c["worst_gain"]["dot"]["task"] == "reverse" and c["worst_gain"]["dot"]["mean"] == pytest.approx(0.4)
    assert c["largest_drop_share"] == pytest.approx(0.3 / 0.6)  # reverse: dot falls 0.3, none 0.6


def test_gradient_summary():
    sweep = [{"kind": "attention", "T": T, "seed": 0, "grad": 1 / T, "relative": 1.0} for T in (2, 4, 8)]
    g = s2s.gradient_summary(sweep)["attention"]
    assert g["decades"] == pytest.approx(math.log10(4)) and g["times_T"] == pytest.approx(1)
    assert (g["T_short"], g["T_long"], g["relative_long"], g["seeds"]) == (2, 8, 1.0, 1)


def test_gradient_summary_averages_each_initialisations_own_fall():
    """Two initialisations falling 2 and 4 decades: 3 on average (the mean gradients' ratio would say 2.3, the
    one that falls least outweighing the other); the norms are geometric means, so they agree with it."""
    sweep = [{"kind": "rnn", "T": T, "seed": k, "grad": 1.0 if T == 2 else fall, "relative": fall}
             for k, fall in enumerate((1e-2, 1e-4)) for T in (2, 8)]
    g = s2s.gradient_summary(sweep)["rnn"]
    assert g["decades"] == pytest.approx(3) and math.log10(g["grad_short"] / g["grad_long"]) == pytest.approx(3)
    assert g["times_T"] == pytest.approx(4 * (1e-2 + 1e-4) / 2) and g["relative_long"] == pytest.approx(0.00505)


def judged(claim_id: str, result: dict):
    """One S1 claim of the registry judged on a seq2seq result alone."""
    from pathlib import Path

    from attnlab.claims.evaluate import evaluate
    from attnlab.claims.registry import load_registry
    from attnlab.results import Results

    return evaluate(load_registry().by_id(claim_id), Results(root=Path("."), files={"seq2seq": result}))


def test_s1_3_is_each_initialisations_own_value_averaged_with_its_spread_as_error():
    sweep = s2s.gradient_sweep(lengths=(2, 4, 8), d=4, seeds=3)
    g = s2s.gradient_summary(sweep)
    v = judged("S1.3", {"gradient_path": sweep, "gradient": g})
    from attnlab.experiments.seq2seq.derive import times_T

    want = {"rnn_decades": g["rnn"]["decades"], "lstm_decades": g["lstm"]["decades"],
            "attention_times_T": times_T(g["attention"]), "attention_relative": g["attention"]["relative_long"]}
    assert v.reproduced == pytest.approx(want)  # as the page states them: norm × T from its geometric-mean norms
    ratios = [b["grad"] * 8 / (a["grad"] * 2) for a, b in zip(
        *([r for r in sweep if r["kind"] == "attention" and r["T"] == T] for T in (2, 8)))]
    logs = [math.log10(x) for x in ratios]
    assert v.reproduced["attention_times_T"] == pytest.approx(10 ** statistics.mean(logs))
    assert v.se["attention_times_T"] == pytest.approx(
        v.reproduced["attention_times_T"] * math.log(10) * statistics.stdev(logs) / math.sqrt(3))
    rel = [r["relative"] for r in sweep if r["kind"] == "attention" and r["T"] == 8]
    assert v.se["attention_relative"] == pytest.approx(statistics.stdev(rel) / math.sqrt(3))
    # three initialisations: Student's t at 2, at the first look (S1 reads the profile's seeds: more could be added)
    assert {p.k for p in v.parts.values()} == {k_at(2, LOOKS[0])}
    one = s2s.gradient_sweep(lengths=(2, 4), d=4, seeds=1)
    assert judged("S1.3", {"gradient_path": one, "gradient": s2s.gradient_summary(one)}).settle == "no error estimate"


def spread_sweep() -> list[dict]:
    """Three seeds whose norms spread over decades at T = 256 (1e-80, 1e-84, 1e-88): the arithmetic mean (3.3e-81)
    and the geometric one (1e-84) lie more than three decades apart."""
    return [{"kind": kind, "T": T, "seed": k, "grad": 1.0 if T == 2 else fall, "relative": 1.0}
            for kind in ("rnn", "attention") for k, fall in enumerate((1e-80, 1e-84, 1e-88)) for T in (2, 256)]


def test_the_gradient_charts_lines_are_the_norms_the_reading_states():
    from attnlab.experiments.seq2seq import page

    sweep = spread_sweep()
    r = {"gradient_path": sweep, "gradient": s2s.gradient_summary(sweep)}
    spec = page.gradient_chart(r)
    lines = next(rows for rows in spec["datasets"].values() if "seed" not in rows[0])
    at = {(row["layer"], row["T"]): row["grad"] for row in lines}
    assert at["RNN (tanh)", 256] == pytest.approx(r["gradient"]["rnn"]["grad_long"], rel=1e-9, abs=0)
    assert r["gradient"]["rnn"]["grad_long"] == pytest.approx(1e-84, rel=1e-9, abs=0)  # not 3.3e-81
    assert at["RNN (tanh)", 2] == pytest.approx(1.0)
    assert f"{r['gradient']['rnn']['grad_long']:.2e}" in page.gradient_reading(r)
    assert "geometric mean over seeds" in json.dumps(spec)  # the chart says what its line is


def test_the_gradient_readings_ratio_follows_from_the_two_norms_it_names():
    """84 decades from 2 to 256: norm × T changes ×1e-84 × 128, not the mean of the seeds' ratios (4.3e-79)."""
    from attnlab.experiments.seq2seq import page

    sweep = spread_sweep()
    said = page.gradient_reading({"gradient_path": sweep, "gradient": s2s.gradient_summary(sweep)})
    assert f"84.0 decades (norm × T changes ×{10 ** -84 * 256 / 2:.2g};" in said  # ×1.3e-82


def test_s1_3s_inconclusive_reason_counts_the_seeds_that_would_settle_it():
    """S1.3's error is the spread over the sweep's own seeds (a mean over three, claims.csv's n_seeds): the reason
    counts how many seeds would settle it, not that an evaluation's sampling error, which seeds do not shrink,
    holds it on the bound (the budget)."""
    from attnlab.report.site import part_reading, why_not

    fall = {"rnn": 1e-30, "lstm": 1e-30, "attention": 1 / 128}  # the norm at T = 256 over the norm at T = 2
    sweep = [{"kind": kind, "T": T, "seed": k, "grad": 1.0 if T == 2 else f, "relative": rel}
             for kind, f in fall.items() for k, rel in enumerate((2.2, 0.66, 0.85)) for T in (2, 256)]
    v = judged("S1.3", {"gradient_path": sweep, "gradient": s2s.gradient_summary(sweep)})
    p = v.parts["attention_relative"]
    assert p.outcome == "inconclusive" and p.settle.isdigit() and int(p.settle) > 3 and p.n_seeds == 3
    said = part_reading(p, v.claim.checks["attention_relative"], 3)
    assert f"{p.settle} seeds would settle it" in said and "sampling error" not in said and "budget" not in said
    assert f"would settle with {v.settle} seeds" in why_not(v) and "sampling error" not in why_not(v)
    assert {r["n_seeds"] for r in v.rows()} == {3}


def test_an_evaluations_sampling_error_still_says_more_seeds_do_not_shrink_it():
    """A stated number (a binomial or bootstrap error) is the evaluation's sampling: the old reason stands."""
    from attnlab.claims.design import Noise
    from attnlab.claims.registry import parse_claim
    from attnlab.claims.verdicts import judge_part
    from attnlab.report.site import part_reading

    c = parse_claim({"id": "T", "claim": "c", "chapter_value": 0, "value": "1", "se": "0.6",
                        "check": {"above": 1.0}, "tolerance_note": "t"})
    p = judge_part(c, "", 2.0, Noise(1, None, 0.6, math.inf))
    assert p.settle == "budget"
    assert "The evaluation's sampling error alone spans that distance" in part_reading(p, c.checks[""], 3)


def test_s1_2s_drop_share_carries_the_delta_methods_error_at_the_largest_share():
    accs = {"none": (0.9, 0.5), "bahdanau": (0.95, 0.9), "dot": (0.95, 0.85), "general": (0.9, 0.9),
            "concat": (0.9, 0.88)}  # (at 4, at 16): dot falls the most, 0.1 of none's 0.4
    runs = fake_runs({(v, S): [a + 0.01 * k for k in range(3)] for v, pair in accs.items()
                      for S, a in zip((4, 16), pair)})
    runs += [{**r, "task": "reverse"} for r in runs]
    c = s2s.contrasts(runs, {"lengths": [4, 16], "variants": list(accs), "tasks": ["copy", "reverse"]})
    v = judged("S1.2", {"contrasts": c})
    drop, none = c["tasks"]["copy"]["drop"]["dot"], c["tasks"]["copy"]["none_drop"]
    assert v.reproduced["largest_drop_share"] == pytest.approx(0.25) == c["largest_drop_share"]
    assert v.se["largest_drop_share"] == pytest.approx(math.sqrt(drop["se"] ** 2 + 0.25 ** 2 * none["se"] ** 2) / 0.4)
    assert v.parts["largest_drop_share"].outcome == "reproduced"  # 0.25 ± 1.96 × 0.021 stays under a third


def perfect_reverse_map(S: int = 4) -> dict:
    src = list(range(S))
    weights = [[1.0 if j == S - 1 - t else 0.0 for j in range(S)] for t in range(S)]
    return {"name": "reverse-S4-bahdanau-seed0", "task": "reverse", "variant": "bahdanau", "source_length": S,
            "source": src, "target": src[::-1], "predicted": src[::-1], "weights": weights}


def test_map_reading_is_read_off_the_weights():
    from attnlab.experiments.seq2seq.page import map_reading

    text = map_reading(perfect_reverse_map())
    assert "gets 4 of 4 tokens right" in text and "on average 1.00" in text and "on that position at 4 of 4" in text
    shifted = perfect_reverse_map()
    shifted["weights"] = [row[1:] + row[:1] for row in shifted["weights"]]  # every peak one position left
    assert "-1 positions from it" in map_reading(shifted) and "on average 0.00" in map_reading(shifted)


def test_the_map_is_valid_viewer_data_with_only_decoder_steps_attending():
    from attnlab.experiments.seq2seq.page import viewer_data
    from attnlab.maps import check_data

    data = viewer_data(perfect_reverse_map())
    check_data(data)
    ex = data["examples"][0]
    assert ex["tokens"] == ["a", "b", "c", "d", "→", "d", "c", "b", "a"]
    (rows,), = next(iter(ex["models"].values()))
    assert [row is not None for row in rows] == [False] * 5 + [True] * 4
    assert rows[5][:4] == [0.0, 0.0, 0.0, 1.0]  # the first output step reads the last source token


@pytest.mark.parametrize("predicted", [[3, 2, 1, 0], [3, 3, 1, 2]])  # right, and wrong at steps 1 and 3
def test_the_viewer_and_the_chart_label_a_decoder_row_by_the_token_it_predicts(predicted):
    """The viewer put a row on its input token, the chart on its output: both now name the predicted token, which
    differs from the target wherever greedy decoding errs."""
    import re

    from attnlab.experiments.seq2seq.page import map_chart, symbol, viewer_data

    m = perfect_reverse_map() | {"predicted": predicted}
    ex = viewer_data(m)["examples"][0]
    (rows,), = next(iter(ex["models"].values()))
    on_rows = [tok for tok, row in zip(ex["tokens"], rows) if row is not None]
    listed = re.search(r"\[(.*)\]", map_chart(m)["encoding"]["y"]["axis"]["labelExpr"]).group(1)  # the labels' array
    labels = re.findall(r"'([^']*)'", listed)
    assert on_rows == labels == [symbol(x) for x in predicted]
    assert (on_rows == [symbol(x) for x in m["target"]]) == (predicted == m["target"])


def test_the_reading_says_where_greedy_decoding_lost_its_place():
    from attnlab.experiments.seq2seq.page import lost_place

    m = perfect_reverse_map(8)
    assert lost_place(m) == ""  # all right
    m["predicted"] = m["target"][:3] + m["target"][4:] + [0]  # skips target[3]: the rest comes one step early
    assert lost_place(m).startswith(": its first mistake is at step 3, where it skipped 1 token, and 3 of the 4")  # the last has no later target
    m["predicted"] = m["target"][:3] + [m["target"][2]] + m["target"][3:7]  # repeats target[2]: one step late
    assert "where it repeated 1 token, and 4 of the 4 tokens after it are right 1 position late" in lost_place(m)
    long = perfect_reverse_map(10)
    long["predicted"] = long["target"][:3] + long["target"][5:] + [0, 0]  # skips two
    assert "where it skipped 2 tokens, and 4 of the 6 tokens after it are right 2 positions early" in lost_place(long)
    m["predicted"] = m["target"][:3] + [7, 7, 7, 7, 7]  # wrong from step 3 on, not shifted
    assert lost_place(m) == ""
