"""Nothing silently wrong: failures are results, a damaged checkpoint never blocks, and every config error is
one line before any job (checked here without Snakemake; the DAG's side is in test_workflow.py)."""
import copy
import csv
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml

import attnlab.config
import attnlab.train
from attnlab import provenance
from attnlab.check import check, check_results
from attnlab.config import canonical, chosen, load_settings, resolve, validate
from attnlab.data.prepare import load_tokens
from attnlab.errors import AttnlabError, Diverged, why_diverged
from attnlab.runlock import LOCK, held
from attnlab.runs import spec_from_config
from attnlab.train import finished, initial_weights, train
from helpers import BAD, REPO, tiny_config, ten_chars, wait_for, write_config, write_tokens

CLI = [sys.executable, "-m", "attnlab"]


@pytest.fixture
def data(tmp_path):
    d = write_tokens(tmp_path / "data")
    return load_tokens(d, "train"), load_tokens(d, "val")


def run(cfg, data, out, row="L9"):
    return train(spec_from_config(cfg, row), cfg, data[0], data[1], out, name=row, progress=False)


def curve_steps(out):
    return [int(r["step"]) for r in csv.DictReader((out / "curve.csv").open())]


# --- failures are results ------------------------------------------------------------------------------

@pytest.mark.parametrize("lr", [10.0, 100.0, 1e30])  # large but finite losses, and NaN
def test_a_diverging_run_is_recorded_with_the_step_the_curve_gives_it(tmp_path, data, lr):
    m = run(tiny_config(lr=lr), data, tmp_path, row="L1")
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert m["status"] == on_disk["status"] == "diverged"
    assert on_disk["val_ppl"] is None and on_disk["train_ppl"] is None  # not a finite number
    steps = curve_steps(tmp_path)
    assert steps == list(range(1, len(steps) + 1)), "one curve row per step"
    assert on_disk["diverged_at_step"] == steps[-1]


def test_a_diverged_run_reruns_to_the_same_record(tmp_path, data):
    cfg = tiny_config(lr=10.0, ckpt_every=1)
    first = run(cfg, data, tmp_path, row="L1")
    again = run(cfg, data, tmp_path, row="L1")  # a checkpoint from before the divergence is on disk
    assert (again["status"], again["diverged_at_step"]) == (first["status"], first["diverged_at_step"])


def test_a_final_loss_past_exps_range_is_diverged_not_an_overflow(tmp_path, data, monkeypatch):
    monkeypatch.setattr(attnlab.train, "evaluate", lambda *a, **k: attnlab.train.Scored(5000.0, 8))
    m = run(tiny_config(steps=3), data, tmp_path, row="L1")
    assert m["status"] == "diverged" and m["diverged_at_step"] == 3 and m["val_ppl"] is None


# --- a checkpoint belongs to one run: a diverged run lends no weights -----------------------------------

def test_a_diverged_rerun_leaves_no_weights_behind(tmp_path, data, capsys):
    """A healthy run, then a rerun with other settings in its folder that diverges before its first checkpoint:
    the healthy run's ckpt.pt must not survive to stand for the diverged run's model."""
    healthy = run(tiny_config(steps=10), data, tmp_path)
    assert healthy["status"] == "ok" and (tmp_path / "ckpt.pt").is_file()
    m = run(tiny_config(steps=10, lr=100.0), data, tmp_path)
    assert m["status"] == "diverged" and m["diverged_at_step"] < 5
    assert not (tmp_path / "ckpt.pt").exists()
    with pytest.raises(Diverged, match=rf"^L9 diverged at step {m['diverged_at_step']}: .* has no finished model$"):
        finished(tmp_path)


def test_a_run_that_diverges_after_a_checkpoint_leaves_none(tmp_path, data):
    m = run(tiny_config(steps=30, lr=10.0, ckpt_every=1), data, tmp_path, row="L1")
    assert m["status"] == "diverged" and m["diverged_at_step"] > 1  # checkpoints were written before it diverged
    assert not (tmp_path / "ckpt.pt").exists()


def stale_metrics(out, data):
    """metrics.json of another run of the same row (other settings), beside this run's checkpoint."""
    run(tiny_config(steps=10, lr=2e-3), data, out.parent / "other", row="S6-mha")
    (out / "metrics.json").write_text((out.parent / "other" / "metrics.json").read_text())


def earlier_step(out, data):
    state = torch.load(out / "ckpt.pt", weights_only=True)
    torch.save({**state, "step": state["step"] - 5}, out / "ckpt.pt")


def diverged_metrics(out, data):
    """The sequence of the issue: the run file says diverged, and the healthy checkpoint is back beside it."""
    m = json.loads((out / "metrics.json").read_text())
    (out / "metrics.json").write_text(json.dumps({**m, "status": "diverged", "diverged_at_step": 3}))


def no_metrics(out, data):
    (out / "metrics.json").unlink()


def other_settings_hash(out, data):
    state = torch.load(out / "ckpt.pt", weights_only=True)
    torch.save({**state, "config_hash": "0" * 16}, out / "ckpt.pt")


@pytest.mark.parametrize("tamper,error,message", [
    (stale_metrics, AttnlabError, r"ckpt.pt belongs to another run \(run id \w+, settings \w+; the run file's are "),
    (other_settings_hash, AttnlabError, r"ckpt.pt belongs to another run"),
    (earlier_step, AttnlabError, r"ckpt.pt holds step 5, not the finished run's last step 10: rerun it"),
    (diverged_metrics, Diverged, r"^S6-mha diverged at step 3: .* has no finished model$"),
    (no_metrics, AttnlabError, r"(has no metrics.json: it has not finished|metrics.json is not there: train S6-mha)"),
])
def test_a_checkpoint_lends_its_weights_only_to_its_own_finished_run(tmp_path, data, tamper, error, message):
    """finished() and initial_weights() (up-training) read a run's model through one check: the checkpoint's run
    id and settings hash are the run file's, the run finished, and it did not diverge; else one line, no weights."""
    out = tmp_path / "grouping" / "S6-mha" / "seed1337"
    run(tiny_config(steps=10), data, out, row="S6-mha")
    finished(out)  # untouched, it loads
    tamper(out, data)
    with pytest.raises(error, match=message):
        finished(out)
    cfg = tiny_config(steps=10)
    with pytest.raises(error, match=message):
        initial_weights(cfg, cfg["grouping"]["S6-gqa-up"], spec_from_config(cfg, "S6-gqa-up"),
                        tmp_path / "grouping" / "S6-gqa-up" / "seed1337")


def test_up_training_from_a_diverged_run_is_recorded_as_diverged(tmp_path):
    """The up-trained run has nothing to start from: its job succeeds, and its run file says why it has no model."""
    data_dir = write_tokens(tmp_path / "data")
    cfg = tiny_config(steps=10, lr=100.0)
    source = run(cfg, (load_tokens(data_dir, "train"), load_tokens(data_dir, "val")),
                 tmp_path / "grouping" / "S6-mha" / "seed1337", row="S6-mha")
    assert source["status"] == "diverged"
    out = tmp_path / "grouping" / "S6-gqa-up" / "seed1337"
    proc = subprocess.run([*CLI, "train", "--config", str(write_config(cfg, tmp_path / "cfg.yaml")), "--run",
                           "S6-gqa-up", "--data", str(data_dir), "--out", str(out), "--quiet"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    m = json.loads((out / "metrics.json").read_text())
    assert (m["status"], m["steps"], m["val_ppl"]) == ("diverged", 0, None)
    assert m["init_diverged"] == {"status": "diverged", "run": "S6-mha", "diverged_at_step": source["diverged_at_step"]}
    assert why_diverged("S6-gqa-up", m) == f"S6-gqa-up starts from S6-mha, which diverged at step {source['diverged_at_step']}"
    assert (out / "curve.csv").read_text() == "step,lr,train_loss,val_loss\n" and not (out / "ckpt.pt").exists()


def test_the_induction_analysis_records_a_diverged_shakespeare_model(tmp_path):
    """S10 reads L9 and B2: a diverged L9 is recorded as diverged at its step; B2 is still measured."""
    from attnlab.experiments.induction.producer import on_text

    data_dir = write_tokens(tmp_path / "data")
    tokens = load_tokens(data_dir, "train"), load_tokens(data_dir, "val")
    L9 = run(tiny_config(steps=10, lr=100.0), tokens, tmp_path / "ladder" / "L9" / "seed1337")
    run(tiny_config(steps=10), tokens, tmp_path / "ladder" / "B2" / "seed1337", row="B2")
    text = on_text(tiny_config(), tmp_path, data_dir, ["ladder.L9", "ladder.B2"])
    assert text["L9"] == {"status": "diverged", "run": "L9", "diverged_at_step": L9["diverged_at_step"]}
    assert text["B2"]["blocks"] == 2 and 0 <= text["B2"]["induction"] <= 1


def test_a_claim_that_reads_a_diverged_models_record_is_not_run_naming_it(tmp_path):
    """A result file's Diverged record: a claim that reads through it is "not run: L9 diverged at step N", one that
    does not is judged as usual, and the page shows the run as diverged."""
    from helpers import rendered_page, site_for
    from attnlab.provenance import write_json
    from attnlab.experiments.induction import page

    def scores(layers, induction):
        return {"prefix": [[induction] * 2] * layers, "previous": [[0.1] * 2] * layers, "induction": induction,
                "chance": 0.05, "icl": -0.5 * layers, "loss": 2.0, "losses": [2.0] * 4}

    jump = {"step": 5, "before": 0.1, "after": 0.6, "start": 0.1, "end": 0.7, "change": 0.6}
    control = {f"attn-only-{n}": {"layers": n, "steps": [0, 5, 10], "final": scores(n, 0.1 * n ** 3),
                                  "series": [{"step": s, "induction": 0.1, "icl": 0.0} for s in (0, 5, 10)],
                                  "copying": [[0.5, 0.5]] * n, "induction_jump": jump, "icl_drop": jump,
                                  "same_phase": True, "n_params": 100} for n in (1, 2)}
    settings = {"sequences": 64, "length": 16, "vocab_size": 16, "span": 4, "probe_every": 5, "probe_sequences": 8,
                "model": {"d_model": 16, "n_heads": 2}}
    text = {"L9": Diverged("L9", 7).record, "B2": {"blocks": 2, "windows": 4, "context": 32, **scores(2, 0.5),
                                                    "copying": [[0.5, 0.5]] * 2, "se_over_chance": 0.5}}
    write_json(tmp_path / "induction" / "result.json", {
        "control": control, "settings": settings, "icl_positions": [0.1, 0.9], "text": text,
        "by_seed": {"1337": {"control": control, "text": text}}})
    site = site_for(tmp_path, tiny_config())
    by_id = {v.claim.id: v for v in site.verdicts}
    assert (by_id["S10.3"].verdict, by_id["S10.3"].note) == ("not run", "L9 diverged at step 7")
    assert (by_id["S10.1"].verdict, by_id["S10.1"].settle) == ("inconclusive", "no error estimate")  # it reads no
    # diverged model; at one seed its values have no spread to give them an error
    text = rendered_page(site, "induction", page.blocks)
    assert "Not measured, because the run diverged: L9 diverged at step 7." in text


# --- a damaged checkpoint never blocks -----------------------------------------------------------------

DAMAGE = {
    "empty": lambda blob: b"",
    "truncated": lambda blob: blob[: len(blob) // 2],
    "garbage": lambda blob: bytes(range(256)) * 8,
    "not a checkpoint": lambda blob: None,  # a readable torch file holding something else
    "wrong shapes": lambda blob: "shapes",  # a readable checkpoint of this run whose tensors do not fit
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_checkpoint_is_set_aside_and_the_run_starts_afresh(tmp_path, data, damage, capsys):
    cfg = tiny_config(steps=10, ckpt_every=5)
    clean = run(cfg, data, tmp_path / "clean")
    out = tmp_path / "damaged"
    run(tiny_config(steps=5, ckpt_every=5), data, out)  # leaves ckpt.pt of another run
    ckpt = out / "ckpt.pt"
    blob = ckpt.read_bytes()
    damaged = DAMAGE[damage](blob)
    if damaged is None:
        torch.save([1, 2, 3], ckpt)
    elif damaged == "shapes":
        good = torch.load(tmp_path / "clean" / "ckpt.pt", weights_only=True)
        good["model"] = {k: v[..., :1] for k, v in good["model"].items()}
        good["step"] = 5
        torch.save(good, ckpt)
    else:
        ckpt.write_bytes(damaged)
    capsys.readouterr()
    m = run(cfg, data, out)
    said = [line for line in capsys.readouterr().err.splitlines() if "set aside" in line]
    assert len(said) == 1 and "starting afresh" in said[0]
    assert (out / "ckpt.pt.bad").is_file()
    assert m["resumed_from_step"] is None
    assert (m["val_loss"], m["train_loss"]) == (clean["val_loss"], clean["train_loss"])  # as if never interrupted


# --- one writer per run folder ---------------------------------------------------------------------------

def test_a_second_writer_of_a_run_folder_is_refused_in_one_line_and_a_kill_leaves_no_lock(tmp_path):
    """Two drivers (a rerun beside a job a killed driver left running, the runner beside Snakemake) start the same
    job: the second is refused, naming the folder and the writer, and leaves the first's log alone."""
    cfg = write_config(tiny_config(steps=1_000_000, eval_every=1_000_000, ckpt_every=1_000_000), tmp_path / "cfg.yaml")
    out, log, data = tmp_path / "run", tmp_path / "logs" / "L9.log", write_tokens(tmp_path / "data")
    job = ["train", "--config", str(cfg), "--run", "L9", "--data", str(data), "--out", str(out)]
    first = subprocess.Popen([*CLI, "--log", str(log), *job])
    try:
        wait_for(lambda: (out / LOCK).is_file() and (out / LOCK).read_text().strip() == str(first.pid), 60,
                 "the first writer's lock")
        wait_for(lambda: log.is_file() and "L9:" in log.read_text(), 120, "the first writer's progress bar in its log")
        said = log.read_text()
        second = subprocess.run([*CLI, "--log", str(log), *job], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and second.stdout == ""
        assert second.stderr.splitlines() == [f"attnlab: error: {out} is being written by another process "
                                              f"(pid {first.pid}); wait for it to end, or stop it, then rerun"]
        assert log.read_text().startswith(said) and first.poll() is None  # the first writes on, its log intact
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    with held(out):  # the kernel dropped the killed writer's lock: the next writer goes ahead
        assert (out / LOCK).read_text() == f"{os.getpid()}\n"


# --- every config error before the first job, in one line ------------------------------------------------

def smoke():
    """The smoke profile, laid over config/base.yaml (every run declared)."""
    return resolve(yaml.safe_load((REPO / "config" / "smoke.yaml").read_text()))


def with_corpus(cfg, path):
    cfg["data"]["path"] = str(path)
    return cfg


@pytest.mark.parametrize("case", BAD)
def test_attnlab_check_names_the_setting_in_one_line(tmp_path, corpus_path, case):
    cfg = with_corpus(smoke(), corpus_path)
    edit, named = BAD[case]
    edit(cfg, tmp_path)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([*CLI, "check", "--config", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnlab: error:") and named in lines[0], proc.stderr


def test_cuda_on_a_machine_without_it_is_a_config_error(corpus_path):
    from attnlab.check import cuda_usable

    if cuda_usable()[0]:
        pytest.skip("this machine has a usable CUDA GPU")
    with pytest.raises(AttnlabError, match="config error at 'device': cuda was asked for"):
        check({**with_corpus(smoke(), corpus_path), "device": "cuda"})


def test_a_good_profile_passes_check(corpus_path):
    cfg = check(with_corpus(smoke(), corpus_path))
    assert cfg["train"]["steps"] == 40


def test_a_corpus_that_does_not_match_its_checksum_is_refused(tmp_path, corpus_path):
    cfg = with_corpus(smoke(), corpus_path)
    cfg["data"].update(ten_chars(tmp_path), sha256="0" * 64)
    with pytest.raises(AttnlabError, match="checksum mismatch"):
        check(cfg)


def test_a_downloaded_corpus_is_checked_once_it_is_cached(tmp_path, corpus_path):
    cfg = smoke()
    cfg["data"]["path"] = None
    assert check(cfg, tmp_path / "results")  # nothing downloaded yet: the data job checks it when it lands
    cache = tmp_path / "results" / "smoke" / "data"
    cache.mkdir(parents=True)
    (cache / "input.txt").write_bytes(corpus_path.read_bytes())
    cfg["data"]["val_fraction"] = 1e-5
    with pytest.raises(AttnlabError, match="data.val_fraction"):
        check(cfg, tmp_path / "results")


@pytest.mark.parametrize("content,message", [
    (None, "config file not found"),
    ("", "is empty"),
    ("- a\n- b\n", "must hold a mapping of settings, got a list"),
    ("profile: smoke\nseed: [1,\n  x: 2\n", "is not valid YAML at line 4"),
])
def test_a_broken_profile_file_is_named_with_its_line(tmp_path, content, message):
    path = tmp_path / "profile.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(AttnlabError, match=message) as err:
        chosen({"profile": str(path)}, [])
    assert str(path) in str(err.value)


BOMB = "profile: smoke\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))  # 9**9 values


@pytest.mark.parametrize("content,problem", [
    ("profile: smoke\nseeds: [1]\nseeds: [2]\n",
     "at line 3, column 1: key 'seeds' is given twice (first at line 2); keep one"),
    ("profile: smoke\ntrain: {steps: 40, steps: 5}\n",
     "at line 2, column 20: key 'train.steps' is given twice (first at line 2); keep one"),
    ("profile: smoke\nladder:\n  L1: {}\n  L2: {}\n  L1: {mlp: true}\n",
     "at line 5, column 3: key 'ladder.L1' is given twice (first at line 3); keep one"),
    (BOMB, "at line 7, column 4: its aliases expand 'f' to more than 100,000 values (an alias bomb?)"),
    ("profile: smoke\na: &a [1, *a]\n",
     "at line 2, column 4: an alias at 'a[1]' refers to a node that holds it, so it never ends"),
])
def test_a_profile_that_yaml_would_read_wrongly_or_forever_is_one_line_naming_the_key(tmp_path, content, problem):
    """A key given twice would let the last one win silently; aliases that expand past every sane size would
    hang every later walk of the settings. Both are named at their line, at once, as --config and --configfile
    give the file."""
    path = tmp_path / "profile.yaml"
    path.write_text(content)
    for configfiles in ([], [str(path)]):
        began = time.perf_counter()
        with pytest.raises(AttnlabError) as err:
            chosen({"profile": str(path)} if not configfiles else yaml.safe_load(content), configfiles)
        assert str(err.value) == f"config file {path} is not valid YAML {problem}"
        assert time.perf_counter() - began < 5


def test_aliases_that_expand_to_a_sane_size_are_read():
    text = "profile: smoke\nbase: &b {steps: 5}\none: *b\nmerged: {<<: *b, steps: 6}\nrows: [" + ", ".join(
        ["*b"] * 1000) + "]\n"
    doc = yaml.load(text, Loader=attnlab.config.StrictLoader)
    assert doc["one"] == {"steps": 5} and doc["merged"] == {"steps": 6} and len(doc["rows"]) == 1000


@pytest.mark.parametrize("kind", ["a bare name", "a .yaml name"])
def test_a_folder_given_as_the_profile_is_called_a_folder(tmp_path, kind):
    folder = tmp_path / ("profile" if kind == "a bare name" else "profile.yaml")
    folder.mkdir()
    with pytest.raises(AttnlabError) as err:
        chosen({"profile": str(folder)}, [])
    assert str(err.value) == (f"config file {folder} is a folder, not a profile: give a profile's YAML file, or "
                              "the name of one in config/ (smoke, quick or chapter)")
    with pytest.raises(AttnlabError) as err:  # any other YAML file the project reads (claims, a version's profile)
        attnlab.config.read_yaml(folder, "claims file")
    assert str(err.value) == f"claims file {folder} is a folder, not a file: give a YAML file"


@pytest.mark.parametrize("setting,edge,past", [("seeds", [0, 2**32 - 1], [2**32]),
                                               ("seeds", list(range(30)), list(range(31))),
                                               ("threads", 256, 257), ("threads", 1, 0)])
def test_seeds_and_threads_are_bounded_on_both_sides(setting, edge, past):
    assert validate({**smoke(), setting: edge})[setting] == edge
    with pytest.raises(AttnlabError, match=f"config error at '{setting}"):
        validate({**smoke(), setting: past})


def test_the_most_seeds_a_profile_takes_are_the_most_the_verdicts_weigh():
    from attnlab.claims.design import MAX_SEEDS

    schema = attnlab.config.schema()
    assert schema["$defs"]["seeds"]["maxItems"] == MAX_SEEDS  # the profile's seeds and each experiment's own


def test_config_profile_picks_a_profile_and_overrides_lay_over_it():
    cfg = chosen({"profile": "smoke", "seed": 7, "train": {"steps": 3}}, [])
    assert cfg["seeds"] == [7] and cfg["train"]["steps"] == 3 and cfg["train"]["batch_size"] == 8
    assert chosen({}, [])["profile"] == "quick"


def test_command_line_overrides_are_typed_as_yaml_would_type_them():
    """Snakemake reads a nested --config value (seeds=[7,8], train='{steps: 10}') with every scalar a string."""
    cfg = validate(chosen({"profile": "smoke", "seeds": ["7", "8"], "train": {"steps": "10"}}, []))
    assert cfg["seeds"] == [7, 8] and cfg["seed"] == 7 and cfg["train"]["steps"] == 10


def test_a_seed_that_is_not_the_first_of_the_seeds_is_named():
    with pytest.raises(AttnlabError, match=r"config error at 'seed': 7 is not the first of seeds \[1, 2\]"):
        resolve({"profile": "smoke", "seed": 7, "seeds": [1, 2]})


def test_a_jobs_inline_settings_are_validated_like_a_profile():
    cfg = validate(smoke())
    job = canonical({"profile": "smoke", "seed": 1, "train": cfg["train"]})
    assert load_settings(job)["train"] == cfg["train"]
    with pytest.raises(AttnlabError, match="train.lr"):
        load_settings(canonical({"profile": "smoke", "train": {**cfg["train"], "lr": -1}}))


def test_settings_text_does_not_depend_on_key_order():
    cfg = validate(smoke())
    flipped = json.loads(json.dumps(cfg), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(flipped) != list(cfg) and canonical(flipped) == canonical(cfg)


def test_a_results_path_through_a_file_is_one_line(tmp_path):
    (tmp_path / "results").write_text("")
    with pytest.raises(AttnlabError, match="is a file, not a folder"):
        check_results(tmp_path / "results" / "smoke")


def test_an_unwritable_results_folder_is_one_line(tmp_path, monkeypatch):
    import tempfile

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # root writes everywhere; a user hits exactly this
    check_results(tmp_path / "results", write=False)  # a dry run writes nothing, so needs nothing
    with pytest.raises(AttnlabError, match="is not writable \\(Permission denied\\)"):
        check_results(tmp_path / "results", write=True)


def test_checking_a_profile_never_imports_torch(corpus_path):
    """The Snakefile runs these checks on every invocation, a no-op included: torch alone costs ~2.5 s."""
    code = ("import sys, yaml, attnlab.check, attnlab.config\n"
            f"cfg = yaml.safe_load(open({str(REPO / 'config' / 'smoke.yaml')!r}))\n"
            f"cfg['data']['path'] = {str(corpus_path)!r}\n"
            "attnlab.check.check(attnlab.config.resolve(cfg)); attnlab.check.cuda_usable()\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_job_failure_reaches_the_terminal_as_one_line(tmp_path):
    """With --log, everything goes to the log, and the one-line error also to the terminal."""
    bad = tmp_path / "bad.yaml"
    cfg = copy.deepcopy(smoke())
    cfg["data"].update(path=None, url=(tmp_path / "nowhere" / "input.txt").as_uri())
    bad.write_text(yaml.safe_dump(cfg))
    log = tmp_path / "logs" / "prepare.log"
    proc = subprocess.run([*CLI, "--log", str(log), "prepare", "--config", str(bad), "--out", str(tmp_path / "d")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "could not download corpus" in lines[0] and "data.path" in lines[0]
    assert str(log) in lines[0] and "could not download corpus" in log.read_text()


def test_attnlab_check_refuses_a_results_folder_that_is_a_file(tmp_path, corpus_path):
    """`attnlab check` runs every check the DAG runs, the results folder's included."""
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(with_corpus(smoke(), corpus_path)))
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "smoke").write_text("")
    proc = subprocess.run([*CLI, "check", "--config", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "attnlab: error: results folder results/smoke cannot be made: results/smoke is a file, not a folder")


def test_a_size_that_cannot_fit_says_its_estimate_and_the_memory(monkeypatch, corpus_path):
    monkeypatch.setattr(attnlab.config, "device_memory", lambda device: (2**30, "that this test's device has"))
    cfg = with_corpus(smoke(), corpus_path)
    cfg["train"]["batch_size"] = 100_000
    with pytest.raises(AttnlabError) as err:
        check(cfg)
    assert re.fullmatch(r"config error at 'train.batch_size': run 'L1' needs at least [\d.]+ GiB for a batch of "
                        r"100,000 windows \([\d.]+ MiB for the parameters, [\d.]+ GiB for the activations\), more "
                        r"than the 1.0 GiB that this test's device has", str(err.value)), err.value


def test_the_memory_is_the_gpus_where_jobs_run_on_it(monkeypatch):
    import attnlab.device

    gpu = SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: i,
                          nvmlDeviceGetMemoryInfo=lambda handle: SimpleNamespace(total=141 * 10**9))
    monkeypatch.setitem(sys.modules, "pynvml", gpu)
    monkeypatch.setattr(attnlab.device, "cuda_usable", lambda: (True, "1 CUDA device(s)"))
    memory = attnlab.device.device_memory.__wrapped__  # not the cached answer for this machine
    assert memory("auto") == memory("cuda") == (141 * 10**9, "that the GPU has")
    assert memory("cpu") == (os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "that this machine has")
    del gpu.nvmlDeviceGetMemoryInfo  # NVML that cannot say: no estimate, no refusal
    assert memory("auto") == (None, "that the GPU has")


@pytest.mark.parametrize("profile", ["smoke", "quick", "chapter"])
def test_every_profile_fits_in_eight_gib(monkeypatch, profile):
    """The estimate refuses only what clearly cannot fit: every real profile fits a small GPU."""
    monkeypatch.setattr(attnlab.config, "device_memory", lambda device: (8 * 2**30, "that a small GPU has"))
    validate(chosen({"profile": profile}, []))


def test_a_corpus_settled_by_its_chunks_is_not_tokenised_by_the_check(monkeypatch, corpus_path):
    """The whole corpus has more pre-split chunks than any run needs tokens: the check stays fast."""
    from attnlab.data.bpe import RegexTokenizer

    def refuse(*a, **k):
        raise AssertionError("the check trained a tokenizer")

    monkeypatch.setattr(RegexTokenizer, "train", refuse)
    check(with_corpus(smoke(), corpus_path))


# --- a refused write is one line naming the file -------------------------------------------------------

@pytest.mark.parametrize("code,words", [(errno.ENOSPC, "no space left on device"),
                                        (errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied")])
def test_a_refused_run_file_is_one_line_naming_it_and_the_last_good_one_stays(tmp_path, monkeypatch, code, words):
    path = tmp_path / "run" / "metrics.json"
    provenance.write_json(path, {"v": 1})

    def refuse(self, *a, **k):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(Path, "write_text", refuse)
    with pytest.raises(AttnlabError) as err:
        provenance.write_json(path, {"v": 2})
    assert str(err.value) == f"{words} writing {path}"
    assert json.loads(path.read_text()) == {"v": 1} and [p.name for p in path.parent.iterdir()] == ["metrics.json"]


TORCH_SHORT = "[enforce fail at inline_container.cc:672] . unexpected pos 3200 vs 3094"


@pytest.mark.parametrize("behind,free,words", [
    (OSError(errno.ENOSPC, "No space left on device"), 10**9, "no space left on device"),  # what a full disk does
    (None, 0, "no space left on device"),  # torch's error alone, on a full disk
    (None, 10**9, f"torch's writer stopped short ({TORCH_SHORT})"),  # ... on one with room: say what torch said
])
def test_a_checkpoint_torch_cannot_write_is_one_line_naming_it(tmp_path, data, monkeypatch, behind, free, words):
    def short(obj, f):
        if behind is None:
            raise RuntimeError(TORCH_SHORT)
        try:
            raise behind
        except OSError:
            raise RuntimeError(TORCH_SHORT)

    monkeypatch.setattr(attnlab.provenance.torch, "save", short)
    monkeypatch.setattr(attnlab.provenance.shutil, "disk_usage", lambda folder: SimpleNamespace(free=free))
    with pytest.raises(AttnlabError) as err:
        run(tiny_config(steps=10, ckpt_every=5), data, tmp_path / "run")
    assert str(err.value) == f"{words} writing {tmp_path / 'run' / 'ckpt.pt'}"
    assert not list((tmp_path / "run").glob("*.tmp*"))


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (mounting needs root: skipped where it is refused)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                          capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    yield disk
    subprocess.run(["umount", "--lazy", str(disk)], check=True)  # lazy: a failed test may still hold a file open


def test_a_full_disk_mid_run_names_the_checkpoint(small_disk, data):
    with pytest.raises(AttnlabError) as err:  # a checkpoint of even the tiny model is larger than the disk
        run(tiny_config(steps=10, ckpt_every=5), data, small_disk / "run")
    assert str(err.value) == f"no space left on device writing {small_disk / 'run' / 'ckpt.pt'}"
    assert [p.name for p in (small_disk / "run").iterdir()] == []  # nor half a checkpoint


def test_a_folder_made_read_only_mid_run_names_the_file(small_disk):
    provenance.write_json(small_disk / "metrics.json", {"v": 1})
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    with pytest.raises(AttnlabError, match=f"^read-only file system writing {small_disk / 'metrics.json'}$"):
        provenance.write_json(small_disk / "metrics.json", {"v": 2})


def test_a_log_that_cannot_be_written_is_one_line(monkeypatch, capsys):
    import attnlab.cli
    import attnlab.jobs

    def refuse(path):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(attnlab.jobs, "log_to", refuse)
    assert attnlab.cli.main(["--log", "results/smoke/logs/x.log", "check", "--config", "smoke"]) == 2
    assert capsys.readouterr().err == "attnlab: error: permission denied: results/smoke/logs/x.log\n"
