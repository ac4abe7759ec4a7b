"""Speed settings of the one training loop: bf16 autocast, torch.compile, AdamW's implementations; unset, today's
training exactly, recorded in provenance."""
import csv
import shutil
import subprocess

import pytest
import torch

from attnlab.data.prepare import load_tokens
from attnlab.errors import AttnlabError
from attnlab.runs import spec_from_config
from attnlab import train as loop
from helpers import tiny_config, write_config, write_tokens
from test_train import cli_train

CXX = any(shutil.which(c) for c in ("g++", "c++", "clang++"))


@pytest.fixture
def data(tmp_path):
    d = write_tokens(tmp_path / "data")
    return load_tokens(d, "train"), load_tokens(d, "val"), d


def run(cfg, data, out):
    return loop.train(spec_from_config(cfg, "L9"), cfg, data[0], data[1], out, name="L9", progress=False)


def losses(out) -> list[float]:
    with open(out / "curve.csv") as f:
        return [float(row["train_loss"]) for row in csv.DictReader(f)]


def falls(out) -> bool:
    seen = losses(out)
    return sum(seen[-3:]) / 3 < sum(seen[:3]) / 3 - 0.3


def test_unset_speed_settings_train_as_before(tmp_path, data):
    cfg = tiny_config(steps=10)
    assert not set(loop.SPEED) & set(cfg["train"])  # absent from the profile: its settings' hash is unchanged
    m = run(cfg, data, tmp_path)
    assert m["provenance"]["speed"] == {"precision": "fp32", "compile": False, "adamw": "default",
                                        "threads": cfg.get("threads"), "torch_threads": torch.get_num_threads()}
    assert m["eval"]["precision"] == "fp32" and "compile_seconds" not in m
    same = run(tiny_config(steps=10, precision="fp32", compile=False, adamw="default"), data, tmp_path / "b")
    assert same["val_loss"] == m["val_loss"]  # the defaults, spelled out, are the same training


def adamw_steps(make_opt, steps: int = 25) -> list[torch.Tensor]:
    """L9's weights after `steps` AdamW steps (clipped, decayed) on random batches, with the optimiser make_opt
    builds from the model."""
    torch.manual_seed(0)
    model = loop.make_model(spec_from_config(tiny_config(), "L9"))
    opt, gen = make_opt(model), torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = (torch.randint(model.spec.vocab_size, (4, 8), generator=gen) for _ in range(2))
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def test_the_default_adamw_is_torchs_own_bit_for_bit():
    """The default implementation (foreach) is a speed change only: the weights equal torch's own AdamW's (one
    tensor at a time on a CPU) bit for bit; fused, a setting, is the control that this comparison can fail."""
    tc = {"lr": 1e-2, "weight_decay": 0.01}
    torchs = adamw_steps(lambda m: torch.optim.AdamW(m.parameters(), lr=tc["lr"], weight_decay=0.01, foreach=False))
    ours = adamw_steps(lambda m: loop.optimizer(m, tc))
    assert loop.optimizer(torch.nn.Linear(2, 2), tc).defaults["foreach"] is True
    assert all(torch.equal(a, b) for a, b in zip(torchs, ours))
    fused = adamw_steps(lambda m: loop.optimizer(m, {**tc, "adamw": "fused"}))
    assert not all(torch.equal(a, b) for a, b in zip(torchs, fused))


@pytest.mark.parametrize("settings", [{"precision": "bf16"}, {"adamw": "fused"}, {"adamw": "foreach"},
                                      {"precision": "bf16", "adamw": "fused"}])
def test_speed_settings_train_and_are_recorded(tmp_path, data, settings):
    m = run(tiny_config(steps=40, **settings), data, tmp_path)
    assert m["status"] == "ok" and falls(tmp_path)
    assert {k: m["provenance"]["speed"][k] for k in settings} == settings
    assert m["eval"]["precision"] == settings.get("precision", "fp32")


def test_bf16_evaluates_in_bf16_and_keeps_fp32_weights(tmp_path, data):
    m = run(tiny_config(steps=10, precision="bf16"), data, tmp_path)
    state = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert all(t.dtype == torch.float32 for t in state["model"].values())
    assert all(s["exp_avg"].dtype == torch.float32 for s in state["opt"]["state"].values())
    model = loop.finished(tmp_path)
    fp32 = loop.evaluate(model, data[1], 8, 4, blocks=True)
    bf16 = loop.evaluate(model, data[1], 8, 4, blocks=True, precision="bf16")
    assert bf16.loss == pytest.approx(m["val_loss"]) and bf16.loss != fp32.loss
    assert bf16.loss == pytest.approx(fp32.loss, abs=0.05)


@pytest.mark.skipif(not CXX, reason="torch.compile's inductor needs a C++ compiler, and none is on PATH")
def test_compiled_step_trains_and_records_its_compile_time(tmp_path, data):
    m = run(tiny_config(steps=40, compile=True), data, tmp_path)
    assert m["status"] == "ok" and falls(tmp_path)
    assert m["provenance"]["speed"]["compile"] is True and m["compile_seconds"] > 0
    eager = run(tiny_config(steps=40), data, tmp_path / "eager")
    assert m["val_loss"] == pytest.approx(eager["val_loss"], abs=0.05)  # the same training, up to rounding
    assert "_orig_mod" not in "".join(torch.load(tmp_path / "ckpt.pt", weights_only=True)["model"])


def test_compile_without_a_compiler_is_one_line_before_any_work(tmp_path, data, monkeypatch):
    monkeypatch.setattr(loop.shutil, "which", lambda name: None)
    with pytest.raises(AttnlabError, match=r"^train.compile: true needs a C\+\+ compiler"):
        run(tiny_config(compile=True), data, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("setting,message", [
    ({"precision": "fp16"}, "config error at 'train.precision': 'fp16' is not one of ['fp32', 'bf16', 'auto']"),
    ({"adamw": "fast"}, "config error at 'train.adamw': 'fast' is not one of ['default', 'foreach', 'fused']"),
    ({"compile": "sometimes"}, "config error at 'train.compile': 'sometimes' is not of type 'boolean'"),
])
def test_bad_speed_setting_is_one_line_naming_it(tmp_path, data, setting, message):
    cfg = tiny_config(**setting)
    proc = subprocess.run(cli_train(write_config(cfg, tmp_path / "bad.yaml"), data[2], tmp_path / "out"),
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
