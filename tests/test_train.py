import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from attnlab.data.prepare import load_tokens
from attnlab.runs import spec_from_config
from attnlab.train import evaluate, train, windows
from helpers import tiny_config, write_config, write_tokens

CLI = [sys.executable, "-m", "attnlab"]


@pytest.fixture
def data(tmp_path):
    d = write_tokens(tmp_path / "data")
    return load_tokens(d, "train"), load_tokens(d, "val"), d


def run(cfg, data, out, row="L9", **kw):
    return train(spec_from_config(cfg, row), cfg, data[0], data[1], out, name=row, progress=False, **kw)


def test_same_seed_same_metrics(tmp_path, data):
    cfg = tiny_config()
    a, b = run(cfg, data, tmp_path / "a"), run(cfg, data, tmp_path / "b")
    assert a["val_loss"] == b["val_loss"] and a["train_loss"] == b["train_loss"]
    assert (tmp_path / "a" / "curve.csv").read_text() == (tmp_path / "b" / "curve.csv").read_text()
    cfg["seed"] += 1
    assert run(cfg, data, tmp_path / "c")["val_loss"] != a["val_loss"]


def test_training_learns_and_reports(tmp_path, data):
    m = run(tiny_config(steps=60), data, tmp_path)
    assert m["status"] == "ok" and m["val_ppl"] < 300 / 2  # well below uniform over the vocabulary of 300
    assert math.isclose(m["val_ppl"], math.exp(m["val_loss"]))
    assert m["eval"]["val_tokens_scored"] == (len(data[1]) - 1) // 8 * 8
    assert m["provenance"]["seed"] == 1337 and m["provenance"]["torch"] == torch.__version__


def test_validation_windows_cover_the_split():
    x, y = windows(torch.arange(20), 4)
    assert x.shape == (4, 4) and torch.equal(y, x + 1)
    assert x[-1, -1] == 15  # the last complete window; the tail that cannot fill one is dropped


def test_eval_scores_every_position(data):
    cfg = tiny_config()
    from attnlab.nn.model import build

    model = build(spec_from_config(cfg, "L1"))
    scored = evaluate(model, data[1], 8)
    assert scored.tokens == (len(data[1]) - 1) // 8 * 8 and scored.blocks == []


def test_eval_blocks_split_the_same_tokens_into_stretches(data):
    """The blocks are the split's scored tokens cut into EVAL_BLOCKS contiguous stretches: together they are
    exactly the whole evaluation, and they differ from one another (they are not copies of the mean)."""
    from attnlab.nn.model import build
    from attnlab.train import EVAL_BLOCKS

    torch.manual_seed(0)
    model = build(spec_from_config(tiny_config(), "L6"))
    scored = evaluate(model, data[1], 8, batch_size=3, blocks=True)
    means, counts = zip(*scored.blocks)
    assert len(scored.blocks) == EVAL_BLOCKS and sum(counts) == scored.tokens
    assert abs(sum(m * n for m, n in scored.blocks) / scored.tokens - scored.loss) < 1e-5
    assert max(means) - min(means) > 1e-3


def test_diverged_run_is_recorded_not_raised(tmp_path, data):
    m = run(tiny_config(lr=1e30), data, tmp_path)
    assert m["status"] == "diverged" and m["val_ppl"] is None
    assert json.loads((tmp_path / "metrics.json").read_text())["diverged_at_step"] == m["diverged_at_step"]


def test_probes_are_callbacks_of_the_one_loop(tmp_path, data):
    seen = []
    run(tiny_config(steps=5), data, tmp_path, probes=[lambda step, model, loss: seen.append(step) or {"loss": loss}])
    assert seen == [0, 1, 2, 3, 4, 5]  # step 0: the untrained model
    assert (tmp_path / "probes.csv").read_text().splitlines()[0] == "step,loss"


def cli_train(cfg_path, data_dir, out, *extra):
    return [*CLI, "train", "--config", str(cfg_path), "--run", "L9", "--data", str(data_dir), "--out", str(out),
            "--quiet", *extra]


def test_resume_after_kill_matches_uninterrupted(tmp_path, data):
    cfg = tiny_config(steps=400, ckpt_every=40)
    cfg_path = write_config(cfg, tmp_path / "cfg.yaml")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    whole = tmp_path / "whole"
    subprocess.run(cli_train(cfg_path, data[2], whole), check=True, env=env, capture_output=True)

    cut = tmp_path / "cut"
    proc = subprocess.Popen(cli_train(cfg_path, data[2], cut), env=env, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (cut / "ckpt.pt").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (cut / "metrics.json").exists(), "the run finished before it could be killed"
    before = torch.load(cut / "ckpt.pt", weights_only=True)["wall_seconds"]  # the killed process's, to its checkpoint
    subprocess.run(cli_train(cfg_path, data[2], cut), check=True, env=env, capture_output=True)

    a, b = (json.loads((d / "metrics.json").read_text()) for d in (whole, cut))
    assert b["resumed_from_step"] and b["resumed_from_step"] % 40 == 0
    assert b["wall_seconds_before_resume"] == round(before, 3) > 0 and a["wall_seconds_before_resume"] is None
    assert b["provenance"]["wall_seconds"] > before  # the killed process's time is counted, not only the last one's
    assert a["val_loss"] == b["val_loss"] and a["train_loss"] == b["train_loss"]
    assert (whole / "curve.csv").read_text() == (cut / "curve.csv").read_text()


def test_checkpoint_of_other_settings_is_not_resumed(tmp_path, data):
    run(tiny_config(steps=10), data, tmp_path)
    m = run(tiny_config(steps=10, lr=2e-3), data, tmp_path)
    assert m["resumed_from_step"] is None


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(colour="blue"), "Additional properties are not allowed ('colour'"),
    (lambda c: c["train"].update(steps="many"), "config error at 'train.steps': 'many' is not of type 'integer'"),
    (lambda c: c["ladder"]["L9"].update(mixer="lstm"), "unknown mixer 'lstm'"),
    (lambda c: c["ladder"]["L9"].update(position="sinusoid"), "unknown position encoding 'sinusoid'"),
    (lambda c: c["ladder"]["L9"].update(max_positions=4), "context 8 is longer than the position table (4 rows)"),
    (lambda c: c["ladder"]["L9"].update(train={"eval_contexts": [16]}),
     "evaluates windows of 16 tokens but its learned position table has 8 rows"),
    (lambda c: c["ladder"]["L9"].update(position="alibi", n_heads=3, d_model=18), "ALiBi has no slopes for n_heads=3"),
    (lambda c: c["ladder"]["L9"].update(norm="sandwich"), "unknown norm placement 'sandwich'"),
])
def test_bad_config_is_one_clear_line_and_loses_nothing(tmp_path, data, edit, message):
    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.json").write_text("earlier result")
    cfg = tiny_config()
    edit(cfg)
    proc = subprocess.run(cli_train(write_config(cfg, tmp_path / "bad.yaml"), data[2], out),
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert (out / "metrics.json").read_text() == "earlier result"


def test_up_training_starts_from_the_pooled_weights_of_its_source(tmp_path, data):
    """cmd_train's up-training: the source run's checkpoint, pooled to fewer key/value heads, is where the run
    starts (its first loss is the pooled model's, far below a fresh model's), and the record says so."""
    from attnlab.train import initial_weights

    cfg = tiny_config(steps=20)
    run(cfg, data, tmp_path / "grouping" / "S6-mha" / "seed7", row="S6-mha")
    spec = spec_from_config(cfg, "S6-gqa-up")
    where, weights = initial_weights(cfg, cfg["grouping"]["S6-gqa-up"], spec,
                                     tmp_path / "grouping" / "S6-gqa-up" / "seed7")
    assert where == "grouping/S6-mha/seed7/ckpt.pt" and weights["blocks.0.mixer.k.weight"].shape[0] == 2 * spec.head_dim
    up = run({**cfg, "train": {**cfg["train"], "steps": 1}}, data, tmp_path / "up", row="S6-gqa-up",
             init=(where, weights))
    fresh = run({**cfg, "train": {**cfg["train"], "steps": 1}}, data, tmp_path / "fresh", row="S6-gqa-up")
    assert up["init_from"] == {"run": "S6-mha", "seed": 7} and fresh["init_from"] is None
    assert up["val_loss"] < fresh["val_loss"]


def test_up_training_without_its_source_says_so(tmp_path):
    from attnlab.train import initial_weights
    from attnlab.errors import AttnlabError

    cfg = tiny_config()
    with pytest.raises(AttnlabError, match=r"S6-gqa-up starts from run S6-mha's weights, and .* is not there: "
                                           r"train S6-mha \(seed7\) first"):
        initial_weights(cfg, cfg["grouping"]["S6-gqa-up"], spec_from_config(cfg, "S6-gqa-up"),
                        tmp_path / "grouping" / "S6-gqa-up" / "seed7")
