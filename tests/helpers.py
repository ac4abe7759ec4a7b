"""Small shared builders for tests: a tiny profile and token files that need no tokenizer."""
from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import yaml

from attnlab.report.build import template as template_of
from attnlab.config import load

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")  # Debian's: Playwright's own browser download cannot work here


@functools.lru_cache(maxsize=None)
def apt_install(*packages: str) -> str | None:
    """Install Debian packages with apt-get (once per test session): None when done, else why not, in one line
    (not root, no apt-get, the install failed)."""
    names = " ".join(packages)
    if os.geteuid() != 0:
        return f"installing {names} needs root"
    if not shutil.which("apt-get"):
        return f"there is no apt-get to install {names}"
    start = time.monotonic()
    proc = subprocess.run(["apt-get", "install", "-y", "-q", *packages], capture_output=True, text=True,
                          env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=900)
    if proc.returncode:
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        return f"apt-get install {names} failed: {last}"
    print(f"installed {names} in {time.monotonic() - start:.1f} s")
    return None


def playwright_or_skip():
    """playwright.sync_api, for tests that drive Debian's Chromium (launch it with executable_path=CHROMIUM),
    installed with apt-get where it is missing; skips the test in one line where it cannot be."""
    import pytest

    if not CHROMIUM.exists():
        why = apt_install("chromium")
        if why or not CHROMIUM.exists():
            pytest.skip(f"{CHROMIUM} not found and {why or 'the chromium package did not provide it'}: "
                        "the browser tests drive Debian's Chromium")
    return pytest.importorskip("playwright.sync_api", reason="the playwright module is not installed")


def tiny_config(**train) -> dict:
    cfg = copy.deepcopy(load(REPO / "config" / "smoke.yaml"))
    cfg["model"].update(d_model=16, context=8)
    cfg["data"]["vocab_size"] = 300  # the smallest BPE worth training; tokens stay below 64
    cfg["train"].update({"steps": 30, "batch_size": 4, "eval_every": 10, "eval_windows": 2, "ckpt_every": 5,
                         "train_eval_tokens": 512, **train})
    return cfg


def write_config(cfg: dict, path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_tokens(data_dir: Path, vocab: int = 64, n_train: int = 4000, n_val: int = 600, seed: int = 0) -> Path:
    """Random-but-learnable token files (a repeating pattern with noise) in the layout prepare() writes."""
    rng = np.random.default_rng(seed)
    pattern = rng.integers(0, vocab, 17)
    stream = np.resize(pattern, n_train + n_val)
    noise = rng.random(len(stream)) < 0.2
    stream[noise] = rng.integers(0, vocab, noise.sum())
    data_dir.mkdir(parents=True, exist_ok=True)
    stream[:n_train].astype(np.uint16).tofile(data_dir / "train.bin")
    stream[n_train:].astype(np.uint16).tofile(data_dir / "val.bin")
    (data_dir / "stats.json").write_text(json.dumps({"n_train": n_train, "n_val": n_val}))
    return data_dir


def eval_blocks(ppl: float, run: str, k: int = 20, shared: float = 0.05, own: float = 0.01) -> list[list]:
    """Evaluation blocks as train.py records them ([mean loss, tokens] per stretch of the split), averaging to
    exactly log(ppl): a pattern every run shares (the text's hard and easy stretches) plus the run's own scatter."""
    rng = np.random.default_rng(int(hashlib.md5(run.encode()).hexdigest()[:8], 16))
    pattern = shared * np.sin(np.arange(k) * 2.3 + 0.5) + own * rng.standard_normal(k)
    return [[math.log(ppl) + float(x), 1000] for x in pattern - pattern.mean()]


def eval_section(run: str, val: float, train: float, at: dict | None = None) -> dict:
    """metrics.json's "eval" for a finished run with these perplexities (and per window, for E5)."""
    out = {"method": "consecutive non-overlapping windows", "val_tokens_scored": 20000, "train_tokens_scored": 20000,
           "blocks": 20, "val_blocks": eval_blocks(val, run), "train_blocks": eval_blocks(train, run + "/train")}
    if at:
        out["val_blocks_at"] = {w: eval_blocks(v, f"{run}@{w}") for w, v in at.items()}
    return out


def site_for(root: Path, cfg: dict):
    """A report Site over the results under `root`, with the project's whole claims registry."""
    from attnlab.claims.evaluate import evaluate_all
    from attnlab.claims.registry import load_registry
    from attnlab.report.site import Site
    from attnlab.results import gather

    registry = load_registry()
    res = gather(root)
    return Site(res, registry, evaluate_all(registry, res), cfg)


def assert_causal(model, vocab: int, T: int, label: str, reacts: bool = True) -> None:
    """Changing token t+1 leaves every output at positions <= t unchanged (and, if `reacts`, changes later ones)."""
    import torch

    x = torch.randint(0, vocab, (2, T))
    base, _ = model(x)
    for t in range(T - 1):
        y = x.clone()
        y[:, t + 1] = (y[:, t + 1] + 1 + torch.arange(2)) % vocab
        out, _ = model(y)
        assert torch.equal(out[:, : t + 1], base[:, : t + 1]), f"{label}: position <= {t} saw token {t + 1}"
        if reacts:
            assert not torch.equal(out[:, t + 1 :], base[:, t + 1 :]), f"{label}: ignores token {t + 1}"


def rendered_page(site, name: str, blocks) -> str:
    """docs/<name>.md rendered with `blocks(site)`; fails if any marker is left unfilled."""
    from attnlab.report.build import MARKER, render
    from attnlab.report.site import NOT_RUN

    template = template_of(f"{name}.md").read_text()
    filled = blocks(site)
    assert NOT_RUN in filled or set(MARKER.findall(template)) <= set(filled), set(MARKER.findall(template)) - set(filled)
    text = render(template, filled, f"{name}.md")
    assert "<!-- attnlab:" not in text
    return text


def ten_chars(tmp_path):
    path = tmp_path / "ten.txt"
    path.write_text("0123456789")
    return {"path": str(path), "sha256": hashlib.sha256(b"0123456789").hexdigest()}


def one_word_corpus(tmp_path):
    """One word said 300 times: 3,001 bytes, enough for the smoke profile at one token a byte, but 301 tokens
    once BPE has learnt the word."""
    text = " wherefore" * 300 + "\n"
    path = tmp_path / "one-word.txt"
    path.write_text(text)
    return {"path": str(path), "sha256": hashlib.sha256(text.encode()).hexdigest()}


BAD = {  # name -> (edit of the smoke profile, the setting the one line must name)
    "val split shorter than a window": (lambda c, t: c["data"].update(val_fraction=1e-5), "data.val_fraction"),
    "train_eval_tokens below the context": (lambda c, t: c["train"].update(train_eval_tokens=16),
                                            "train.train_eval_tokens"),
    "a run's train_eval_tokens below its context": (
        lambda c, t: c["position"]["E5-rope"]["train"].update(train_eval_tokens=40),
        "position.E5-rope.train.train_eval_tokens"),
    "lr .nan": (lambda c, t: c["train"].update(lr=float("nan")), "train.lr"),
    "lr .inf": (lambda c, t: c["train"].update(lr=float("inf")), "train.lr"),
    "empty eval_contexts": (lambda c, t: c["position"]["E5-rope"]["train"].update(eval_contexts=[]),
                            "position.E5-rope.train.eval_contexts"),
    "S4 heads that do not divide the width": (lambda c, t: c["multihead"].update(heads=[1, 3]), "multihead.heads"),
    "E6 sizes that do not increase": (lambda c, t: c["cost"].update(sizes=[64, 32]), "cost.sizes"),
    "E6 every n above the CPU cap": (lambda c, t: c["cost"].update(max_n_cpu=16), "cost.max_n_cpu"),
    "S5 lengths that do not increase": (lambda c, t: c["decode"].update(lengths=[8, 4]), "decode.lengths"),
    "S6 key/value heads that do not divide the heads": (lambda c, t: c["decode"]["kv_heads"].update(wide=[3]),
                                                        "n_kv_heads=3 does not divide"),
    "up-training from a run that is not there": (lambda c, t: c["grouping"]["S6-gqa-up"].update(init_from="S6-x"),
                                                 "grouping.S6-gqa-up.init_from"),
    "up-training from another model": (lambda c, t: c["grouping"]["S6-gqa-up"].update(init_from="S6-mqa"),
                                       "only the key/value heads may differ"),
    "E8 a noun twice": (lambda c, t: c["winograd"].update(nouns=["animal", "street", "animal"]),
                        "winograd.nouns': 'animal' appears more than once"),
    "E8 one noun": (lambda c, t: c["winograd"].update(nouns=["animal"]), "winograd.nouns': needs at least two"),
    "E8 an adjective in both roles": (lambda c, t: c["winograd"].update(crossed=["wet", "tired"]),
                                      "'tired' is in both crosser and crossed"),
    "E8 a template without its referent": (
        lambda c, t: c["winograd"].update(template="the {x} did not cross the {y} because it was too {adj} ."),
        "winograd.template': has no {ref} slot"),
    "S10 a span longer than the sequence": (lambda c, t: c["induction"].update(span=40), "induction.span"),
    "S1 a source length below 1": (lambda c, t: c["seq2seq"].update(lengths=[0, 8]),
                                   "seq2seq.lengths.0': 0 is less than the minimum of 1"),
    "S1 an unknown score function": (lambda c, t: c["seq2seq"].update(variants=["none", "luong"]),
                                     "seq2seq.variants': unknown score function 'luong'"),
    "S1 an unknown cell type": (lambda c, t: c["seq2seq"].update(cell="rnn"), "seq2seq.cell': unknown cell type 'rnn'"),
    "S1 a task that does not exist": (lambda c, t: c["seq2seq"].update(tasks=["sort"]),
                                      "seq2seq.tasks': unknown task 'sort'"),
    "an unknown E6 method": (lambda c, t: c["cost"].update(methods=["naive", "flash"]), "unknown method 'flash'"),
    "a 10-character corpus": (lambda c, t: c["data"].update(ten_chars(t)), "data.path"),
    "an unknown mixer": (lambda c, t: c["ladder"]["L5"].update(mixer="lstm"), "unknown mixer 'lstm'"),
    "a misspelt setting": (lambda c, t: c["train"].update(stpes=3), "Additional properties"),
    "an unknown position encoding": (lambda c, t: c["ladder"]["L3"].update(position="rotary"),
                                     "unknown position encoding 'rotary'"),
    "a context longer than the position table": (lambda c, t: c["ladder"]["L9"].update(max_positions=4),
                                                 "longer than the position table"),
    "windows read past the learned table": (lambda c, t: c["position"]["E5-learned"].update(max_positions=64),
                                            "set max_positions: 128"),
    "a corpus that is not there": (lambda c, t: c["data"].update(path="no/such/input.txt"),
                                   "config error at 'data.path': corpus file not found: no/such/input.txt"),
    "a folder as the corpus": (lambda c, t: c["data"].update(path=str(t)), "is a folder; give the corpus file itself"),
    "a corpus too short once tokenised": (lambda c, t: c["data"].update(one_word_corpus(t)),
                                          "(tokenised with data.vocab_size=1024) gives 301 tokens, too few"),
    "a corpus with another checksum": (lambda c, t: c["data"].update(sha256="0" * 64), "corpus checksum mismatch"),
    "a negative learning rate": (lambda c, t: c["train"].update(lr=-1e-3), "train.lr"),
    "a learning rate YAML 1.1 reads as text": (lambda c, t: c["train"].update(lr="1e-3"),
                                               "'train.lr': '1e-3' is not of type 'number'; YAML 1.1 reads 1e-3 as "
                                               "text: write it with a dot and a signed exponent, 1.0e-3"),
    "a run's misspelt train setting": (lambda c, t: c["ladder"]["L6"].update(train={"stpes": 3}),
                                       "config error at 'ladder.L6.train': Additional properties"),
    "a width that cannot fit in memory": (lambda c, t: c["model"].update(d_model=10**6),
                                          "config error at 'model.d_model': run"),
    "a batch that cannot fit in memory": (lambda c, t: c["train"].update(batch_size=10**9),
                                          "config error at 'train.batch_size': run"),
    "a context that cannot fit in memory": (lambda c, t: c["model"].update(context=10**8),
                                            "config error at 'model.context': run"),
    "viewer tokens beyond the models' context": (lambda c, t: c["viewer"].update(tokens=33),
                                                 "config error at 'viewer.tokens': 33 tokens"),
    "a batch of zero": (lambda c, t: c["train"].update(batch_size=0), "train.batch_size"),
    "steps as words": (lambda c, t: c["train"].update(steps="ten"), "train.steps"),
    "heads that do not divide the width": (lambda c, t: c["ladder"]["L7"].update(n_heads=5),
                                           "n_heads=5 does not divide d_model=32"),
    "RoPE on an odd head width": (lambda c, t: c["position"]["E5-rope"].update(d_k=7), "RoPE needs an even"),
    "ALiBi on three heads": (lambda c, t: c["position"]["E5-alibi"].update(n_heads=3, d_model=48),
                             "ALiBi has no slopes for n_heads=3"),
    "one run name in two experiments": (lambda c, t: c["scaling"].update(L1={}), "run name 'L1' is used by both"),
    "a validation fraction above one": (lambda c, t: c["data"].update(val_fraction=1.5), "data.val_fraction"),
    "a vocabulary smaller than the bytes": (lambda c, t: c["data"].update(vocab_size=100), "data.vocab_size"),
    "dropout of one": (lambda c, t: c["ladder"]["L9"].update(dropout=1.0), "ladder.L9.dropout"),
    "an unknown profile name": (lambda c, t: c.update(profile="bogus"), "'profile'"),
    "an unknown section": (lambda c, t: c.update(ladders={}), "('ladders' was unexpected)"),
    "an unknown device": (lambda c, t: c.update(device="tpu"), "'device'"),
    "zero threads": (lambda c, t: c.update(threads=0), "'threads'"),
    "a negative seed": (lambda c, t: c.update(seeds=[-1]), "'seeds.0'"),
    "a seed listed twice": (lambda c, t: c.update(seeds=[1337, 1338, 1337]), "'seeds': [1337, 1338, 1337] has non-unique"),
    "a seed that is not an integer": (lambda c, t: c.update(seeds=[1337, 1.5]), "'seeds.1': 1.5 is not of type 'integer'"),
    "an unknown split pattern": (lambda c, t: c["data"].update(pattern="gpt5"), "data.pattern"),
    "a window of zero": (lambda c, t: c["position"]["E5-rope"]["train"].update(eval_contexts=[0]),
                         "position.E5-rope.train.eval_contexts.0"),
    "no S4 head counts": (lambda c, t: c["multihead"].update(heads=[]), "multihead.heads"),
    "an unknown spec field": (lambda c, t: c["ladder"]["L1"].update(width=3), "('width' was unexpected)"),
    "a seed past numpy's range": (lambda c, t: c.update(seeds=[2**70]), "config error at 'seeds.0': "
                                  f"{2**70} is greater than the maximum of 4294967295; allowed: 0 to 4294967295"),
    "more seeds than the verdicts weigh": (lambda c, t: c.update(seeds=list(range(1_000))),
                                           "config error at 'seeds': 1,000 entries, more than the 30 allowed"),
    "threads past the schema's maximum": (lambda c, t: c.update(threads=100_000), "config error at 'threads': "
                                          "100000 is greater than the maximum of 256; allowed: 1 to 256"),
}


def first(folder: Path, name: str) -> Path:
    """The first file called `name` under `folder`, in sorted order (a version and a live run both hold one)."""
    return sorted(folder.rglob(name))[0]


def cut(name: str, keep: int | None = None, inside: bool = False):
    """Damage: the first `name` cut to `keep` bytes, or at the line end nearest its middle (no row cut short),
    or (`inside`) a few bytes after that line end, inside the next row."""
    def damage(folder: Path) -> Path:
        path = first(folder, name)
        data = path.read_bytes()
        end = data.rindex(b"\n", 0, len(data) // 2) + 1
        path.write_bytes(data[:keep if keep is not None else end + 5 * inside])
        return path
    return damage


def rewrite(name: str, edit):
    """Damage: the first `name`'s bytes replaced by `edit(bytes)`."""
    def damage(folder: Path) -> Path:
        path = first(folder, name)
        path.write_bytes(edit(path.read_bytes()))
        return path
    return damage


def remove(name: str):
    def damage(folder: Path) -> Path:
        path = first(folder, name)
        path.unlink()
        return path
    return damage


def add(name: str):
    """Damage: a file `name` beside the version's manifest, which its RO-Crate does not list."""
    def damage(folder: Path) -> Path:
        path = folder / name
        path.write_text("a note left in a published version\n")
        return path
    return damage


def crated(folder: Path) -> Path:
    """`folder`, a version made or edited here, with the Snakefile and the RO-Crate `publish` writes beside its
    files (its crate rewritten for what it holds now)."""
    from attnlab.crate import WORKFLOW, write_crate

    if not (folder / WORKFLOW).is_file():
        shutil.copy(REPO / WORKFLOW, folder / WORKFLOW)
    write_crate(folder, json.loads((folder / "manifest.json").read_text()))
    return folder


BOTH, VERSION, PUBLISH = ("publish", "versions"), ("versions",), ("publish",)
DAMAGE = {  # name -> (damage a results folder or a version's copy: the path it damaged, the file, which verbs)
    "a curve.csv cut to 50 bytes": (cut("curve.csv", 50), "curve.csv", BOTH),
    "a curve.csv cut at a line end": (cut("curve.csv"), "curve.csv", BOTH),
    "a curve.csv whose header lacks its columns": (
        rewrite("curve.csv", lambda b: b.replace(b"step,lr,train_loss,val_loss", b"step,loss", 1)), "curve.csv", BOTH),
    "a curve.csv with a garbled number": (rewrite("curve.csv", lambda b: b.replace(b"\n1,", b"\n1x,", 1)),
                                          "curve.csv", BOTH),
    "a claims.csv cut inside a row": (cut("claims.csv", inside=True), "claims.csv", BOTH),
    "a claims.csv cut at a line end": (cut("claims.csv"), "claims.csv", BOTH),  # complete against its registry
    "a claims.csv with a garbled verdict": (
        rewrite("claims.csv", lambda b: b.replace(b",reproduced,", b",repr0duced,", 1)), "claims.csv", BOTH),
    "a probes.csv cut at a line end": (cut("probes.csv"), "probes.csv", VERSION),  # the smoke fixture has no probes
    "a metrics.json cut in half": (rewrite("metrics.json", lambda b: b[:len(b) // 2]), "metrics.json", BOTH),
    "a metrics.json that is not UTF-8": (rewrite("metrics.json", lambda b: b"\xff\xfe" + b), "metrics.json", BOTH),
    "a metrics.json without its steps": (rewrite("metrics.json", lambda b: b.replace(b'"steps"', b'"stops"', 1)),
                                         "metrics.json", BOTH),
    "a result.json garbled in the middle": (
        rewrite("result.json", lambda b: b[:len(b) // 2] + b"\x00garbled" + b[len(b) // 2 + 8:]), "result.json", BOTH),
    "an empty {} result.json": (rewrite("result.json", lambda b: b"{}\n"), "result.json", BOTH),
    "a result.json without provenance": (rewrite("result.json", lambda b: b.replace(b'"provenance"', b'"prov"', 1)),
                                         "result.json", BOTH),
    "a manifest.json cut in half": (rewrite("manifest.json", lambda b: b[:len(b) // 2]), "manifest.json", VERSION),
    "an empty {} manifest.json": (rewrite("manifest.json", lambda b: b"{}\n"), "manifest.json", VERSION),
    "a missing manifest.json": (remove("manifest.json"), "manifest.json", VERSION),
    "a run file the manifest lists, missing": (remove("result.json"), "result.json", VERSION),
    "a training run's curve.csv, missing": (remove("curve.csv"), "curve.csv", VERSION),
    "a version's profile, missing": (remove("config.yaml"), "config.yaml", VERSION),
    "a metrics.json field of the wrong type": (  # the publish fixture's metrics.json has no n_params
        rewrite("metrics.json", lambda b: re.sub(rb'"n_params": (\d+)', rb'"n_params": "\1"', b, count=1)),
        "metrics.json", VERSION),
    "an RO-Crate cut in half": (rewrite("ro-crate-metadata.json", lambda b: b[:len(b) // 2]), "ro-crate-metadata.json",
                                VERSION),
    "an RO-Crate with a checksum edited": (
        rewrite("ro-crate-metadata.json", lambda b: re.sub(rb'"sha256": "[0-9a-f]', b'"sha256": "x', b, count=1)),
        "ro-crate-metadata.json", VERSION),
    "a missing RO-Crate": (remove("ro-crate-metadata.json"), "ro-crate-metadata.json", VERSION),
    "a file its RO-Crate lists, missing": (remove("Snakefile"), "Snakefile", VERSION),
    "a file its RO-Crate does not list": (add("notes.txt"), "notes.txt", VERSION),
    "a run file changed in a way its kind allows": (  # whole JSON still: only its checksum tells
        rewrite("stats.json", lambda b: re.sub(rb"\d", lambda d: b"%d" % ((int(d[0]) + 1) % 10), b, count=1)),
        "stats.json", VERSION),
}


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, read from /proc (Linux)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid:
            found.append(int(stat.parent.name))
    return found


def argv_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_while_training(cmd: list[str], written: tuple[Path, ...] = (), **popen) -> list[int]:
    """Start the driver `cmd`, kill -9 it once one of its jobs trains (or, given `written`, the moment one of those
    files appears), and wait until its jobs have ended (they must die with it): the jobs' pids."""
    driver = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, **popen)
    try:
        if not written:
            wait_for(lambda: any("train" in argv_of(p) for p in children(driver.pid)), 300, "a training job")
        else:
            wait_for(lambda: any(f.exists() for f in written), 300, f"one of {written}", poll=0.001)
        jobs = children(driver.pid)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    # a training job dies at once (PR_SET_PDEATHSIG); one still importing torch on a loaded machine exits when it
    # reaches attnlab's main and finds its parent gone, which can take tens of seconds
    wait_for(lambda: not any(alive(p) for p in jobs), 60, f"the killed driver's jobs {jobs} to end")
    return jobs


def wait_for(what, seconds: float, waiting_for: str, poll: float = 0.1):
    """`what()` once it is true, polled every `poll` s; AssertionError naming what was awaited after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (value := what()):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {waiting_for}")
        time.sleep(poll)
    return value
