"""A training step against the machine's limit (attnlab.bench.limit): FLOPs counted and checked against counts
worked by hand, the peak's record, and the breakdown of a step by operator
category, from made-up profiler events and from a real step of a tiny model."""
from __future__ import annotations

import statistics
from types import SimpleNamespace

import pytest
import torch

from attnlab.bench import limit
from attnlab.nn.model import build
from attnlab.nn.spec import ModelSpec

TINY = dict(vocab_size=97, d_model=32, context=16, n_heads=4, mixer="multihead", position="learned", mlp=True,
            norm="pre")


def training_step(model, x, y=None):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        out = model(x, y) if y is not None else model(x)
        loss = out[1] if isinstance(out, tuple) else out.square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def test_a_linear_layers_step_counts_its_forward_and_its_weight_gradient():
    # forward: 2·7·3·5 (addmm; the bias adds nothing), backward: the weight's gradient, 2·7·3·5 (mm); the input
    # needs no gradient, so there is no third matmul
    flops, by_op = limit.count_flops(training_step(torch.nn.Linear(3, 5), torch.randn(7, 3)))
    assert by_op == {"aten.addmm": 210, "aten.mm": 210} and flops == 420


def test_a_tiny_models_step_counts_every_matmul_and_the_cpus_attention():
    B, spec = 3, ModelSpec(**TINY)
    N, d, V, T = B * spec.context, spec.d_model, spec.vocab_size, spec.context
    linear = 2 * N * (4 * d * d + 2 * spec.mlp_ratio * d * d + d * V)  # q, k, v, out; MLP up and down; the head
    attention = 2 * (2 * B * T * T * d)  # scores and mix, each 2·B·H·T·T·(d/H), the causal half counted in full
    torch.manual_seed(0)
    x, y = torch.randint(V, (B, T)), torch.randint(V, (B, T))
    flops, by_op = limit.count_flops(training_step(build(spec), x, y))
    assert by_op["aten.addmm"] == linear and by_op["aten.mm"] == 2 * linear  # backward: input and weight
    assert by_op["aten._scaled_dot_product_flash_attention_for_cpu"] == attention
    assert by_op["aten._scaled_dot_product_flash_attention_for_cpu_backward"] == 2.5 * attention
    assert flops == 3 * linear + 3.5 * attention


def test_a_peak_is_its_flops_over_the_median_call_with_its_spread():
    p = limit.peak_record("fp32", 4, 128, [0.002, 0.001, 0.004, 0.0010000004])
    assert p["seconds"] == [0.002, 0.001, 0.004, 0.001]  # as recorded
    assert p["flops_per_s"] == pytest.approx(128 / statistics.median(p["seconds"]))
    assert p["flops_per_s_p20"] <= p["flops_per_s"] <= p["flops_per_s_p80"] and p["samples"] == 4
    call, flops, n = limit.matmul("fp32", "cpu")
    assert flops == 2 * n ** 3 and call().shape == (n, n)


@pytest.mark.parametrize("name, category", [
    ("aten::mm", "matmul"), ("aten::addmm", "matmul"), ("autograd::engine::evaluate_function: AddmmBackward0", "matmul"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "attention"), ("aten::softmax", "attention"),
    ("ScaledDotProductFlashAttentionForCpuBackward0", "attention"), ("aten::native_layer_norm", "normalisation"),
    ("NativeLayerNormBackward0", "normalisation"), ("aten::gelu_backward", "activation"),
    ("aten::_log_softmax", "loss"), ("NllLossBackward0", "loss"), ("aten::cross_entropy_loss", "loss"),
    ("Optimizer.step#AdamW.step", "optimiser"), ("Optimizer.zero_grad#AdamW.zero_grad", "optimiser"),
    ("aten::embedding_dense_backward", None), ("aten::copy_", None), ("aten::mm_like", None)])
def test_an_operators_name_puts_it_in_its_category(name, category):
    assert limit.category(name) == category


def event(name, own_us, parent=None):
    return SimpleNamespace(name=name, self_cpu_time_total=own_us, cpu_parent=parent)


def test_the_outermost_named_caller_decides_and_the_rest_takes_the_unnamed_time():
    opt, loss, ln = event("Optimizer.step#AdamW.step", 100), event("aten::cross_entropy_loss", 50), \
        event("aten::layer_norm", 10)
    events = [opt, event("aten::mul_", 300, opt), event("aten::mm", 200), loss, event("aten::mm", 150, loss),
              event("aten::_log_softmax", 100, loss), ln, event("aten::native_layer_norm", 90, ln),
              event("aten::embedding_dense_backward", 400)]
    # two steps of 1 ms each: 1,400 µs inside operators, 600 µs outside any
    t = limit.tally(events, 0.002, steps=2)
    ms = {cat: v["ms"] for cat, v in t["categories"].items()}
    assert ms == pytest.approx({"matmul": 0.1, "attention": 0, "normalisation": 0.05, "activation": 0,
                                "loss": 0.15, "optimiser": 0.2, "rest": 0.2 + 0.3})
    assert t["step_ms"] == pytest.approx(1.0) and t["operators_ms"] == pytest.approx(0.7)
    assert sum(v["share"] for v in t["categories"].values()) == pytest.approx(1)
    assert t["rest_operators"] == [["aten::embedding_dense_backward", pytest.approx(0.2)]]
    assert list(t["categories"]) == limit.CATEGORIES


def test_a_step_whose_operators_outlast_its_wall_time_has_no_negative_rest():
    t = limit.tally([event("aten::mm", 3000)], 0.001, steps=1)
    assert t["step_ms"] == 3 and t["categories"]["rest"]["ms"] == 0 and t["categories"]["matmul"]["share"] == 1


def test_a_tiny_models_step_breaks_down_into_every_category():
    spec = ModelSpec(**TINY)
    torch.manual_seed(0)
    x, y = torch.randint(97, (2, 16)), torch.randint(97, (2, 16))
    step = training_step(build(spec), x, y)
    step()
    t = limit.breakdown(step, "cpu", steps=2)
    shares = {cat: v["share"] for cat, v in t["categories"].items()}
    assert sum(shares.values()) == pytest.approx(1)
    assert all(shares[cat] > 0 for cat in limit.CATEGORIES), shares  # the model has each, and a step's rest
    assert t["operators_ms"] <= t["step_ms"]


def test_a_moment_the_machine_took_from_one_step_moves_no_category():
    quiet = limit.tally([event("aten::mm", 1000), event("Optimizer.step#AdamW.step", 500)], 0.002, steps=1)
    slowed = limit.tally([event("aten::mm", 6000), event("Optimizer.step#AdamW.step", 500)], 0.007, steps=1)
    t = limit.median_tally([quiet, slowed, quiet])
    assert t["categories"]["matmul"]["ms"] == 1 and t["categories"]["optimiser"]["ms"] == 0.5
    assert t["step_ms"] == 2 and t["categories"]["rest"]["ms"] == 0.5 and t["step_ms_each"] == [2, 7, 2]
    assert sum(c["share"] for c in t["categories"].values()) == pytest.approx(1) and t["steps"] == 3


def test_a_steps_matmuls_and_attention_replay_alone_with_their_own_calls_and_flops():
    spec = ModelSpec(**TINY)
    torch.manual_seed(0)
    x, y = torch.randint(97, (2, 16)), torch.randint(97, (2, 16))
    step = training_step(build(spec), x, y)
    flops, by_op = limit.count_flops(step)
    a = limit.alone(step, "cpu", peak=limit.matmul("fp32", "cpu"), repeats=2)
    cats = a["categories"]
    assert set(cats) == {"matmul", "attention"}
    assert cats["matmul"]["flops"] == by_op["aten.addmm"] + by_op["aten.mm"] and \
        cats["matmul"]["flops"] + cats["attention"]["flops"] == flops
    # five linear layers (q/k/v stacked, out, MLP up and down, the head): an addmm forward, and backward an mm for
    # the weight's gradient and one for the input's
    assert cats["matmul"]["calls"] == 15 and cats["attention"]["calls"] == 2  # SDPA forward and backward
    assert 1 <= cats["matmul"]["layouts"] <= cats["matmul"]["calls"]
    assert all(c["seconds"] > 0 for c in cats.values())
    assert a["peak_flops"] == 2 * 1024 ** 3 and a["peak_seconds"] > 0 and a["repeats"] == 2
    assert limit.alone(step, "cpu", repeats=1)["peak_seconds"] is None


def test_a_replayed_argument_keeps_its_layout_and_other_arguments_stay_as_they_are():
    gen = torch.Generator().manual_seed(0)
    t = torch.randn(4, 6).t()  # a transposed view: strides (1, 6)
    laid = limit._materialise(limit.Shape(tuple(t.shape), t.stride(), t.dtype, t.device), gen)
    assert laid.shape == t.shape and laid.stride() == t.stride() and laid.dtype == torch.float32
    ints = limit._materialise(limit.Shape((3,), (1,), torch.int64, torch.device("cpu")), gen)
    assert ints.tolist() == [0, 0, 0]
    assert limit._materialise(0.5, gen) == 0.5 and limit._materialise([1, 2], gen) == [1, 2]


def test_the_step_parts_tool_times_each_alternative_against_the_first_of_its_part(capsys):
    import runpy

    from helpers import REPO

    tool = runpy.run_path(str(REPO / "tools" / "step-parts.py"))
    ratios = tool["main"](["--batch", "2", "--context", "8", "--width", "16", "--heads", "2", "--vocab", "32",
                           "--rounds", "2", "--no-compile"])
    assert set(ratios) == {"attention", "loss", "gelu"}
    assert list(ratios["attention"]) == ["flash (SDPA)", "math (SDPA)", "explicit"]
    assert all(next(iter(r.values())) == 1.0 and all(x > 0 for x in r.values()) for r in ratios.values())
    assert "attention (forward and backward, 2 rounds, speed against the first): flash (SDPA) ×1.00" in \
        capsys.readouterr().out
