"""Every check a profile can fail, run before any job starts (by the Snakefile and by `attnlab check`).

Nothing here imports torch: the Snakefile runs it on every invocation, so it must stay fast.
"""
from __future__ import annotations

from pathlib import Path

from attnlab.bench.settings import check_cost, check_decode
from attnlab.config import check_splits, runs, validate
from attnlab.device import cuda_usable
from attnlab.errors import AttnlabError
from attnlab.experiments.tasks import check_induction, check_seq2seq, check_winograd


def check(cfg: dict, results: str | Path = "results", corpus: bool = True) -> dict:
    """The validated profile; raise AttnlabError naming the first setting that would fail a job.

    `results`: the folder of every profile's results: results/<profile> must be able to be a folder, and a corpus
    downloaded by an earlier run is cached in it.
    `corpus`: False where no job reads it (the benchmarks run alone).
    """
    cfg = validate(cfg)
    check_results(Path(results) / cfg["profile"])
    check_device(cfg["device"])
    check_decode(cfg["decode"])
    check_winograd(cfg["winograd"])
    check_induction(cfg["induction"])
    check_seq2seq(cfg["seq2seq"])
    check_init(cfg)
    check_viewer(cfg)
    check_approximation(cfg)
    check_cost(cfg["cost"], on_cpu=cfg["device"] == "cpu" or (cfg["device"] == "auto" and not cuda_usable()[0]))
    if corpus:
        check_corpus(cfg, Path(results) / cfg["profile"] / "data")
    check_claims(cfg)
    return cfg


def check_init(cfg: dict) -> None:
    """Every up-trained run starts from a run of this profile whose model differs at most in key/value heads
    (more of them, a multiple of this run's), so that its weights can be pooled into this run's shape."""
    from attnlab.config import spec_from_config

    declared = {name for _, name in runs(cfg)}
    for experiment, name in runs(cfg):
        source = (cfg[experiment][name] or {}).get("init_from")
        if not source:
            continue
        where = f"config error at '{experiment}.{name}.init_from'"
        if source not in declared or source == name:
            raise AttnlabError(f"{where}: '{source}' is not another run of this profile")
        a, b = spec_from_config(cfg, source), spec_from_config(cfg, name)
        if {**a.to_dict(), "n_kv_heads": None} != {**b.to_dict(), "n_kv_heads": None} or a.kv_heads % b.kv_heads:
            raise AttnlabError(f"{where}: run '{source}' is another model; only the key/value heads may differ, "
                               f"and {b.kv_heads} must divide its {a.kv_heads}")


def check_viewer(cfg: dict) -> None:
    """The viewer shows `viewer.tokens` tokens of each line through trained models: no more than their context."""
    from attnlab.config import spec_from_config
    from attnlab.registry import get

    tokens = cfg["viewer"]["tokens"]
    for name in (need.partition(".")[2] for need in get("viewer").needs if "." in need):
        context = spec_from_config(cfg, name).context
        if tokens > context:
            raise AttnlabError(f"config error at 'viewer.tokens': {tokens} tokens are more than the context of run "
                               f"'{name}' ({context}), which the viewer reads them through; set {context} or fewer")


def check_approximation(cfg: dict) -> None:
    """S8 on a trained layer: increasing windows and feature counts, and a model whose attention the approximations
    stand for (learned, scaled by √d_k, no ALiBi: they approximate softmax(q kᵀ / √d) v), every window with its
    global tokens shorter than its context (a window that sees every key is exact attention)."""
    from attnlab.config import find_run, spec_from_config

    a = cfg["approximation"]
    for key in ("windows", "features"):
        if any(b <= x for x, b in zip(a[key], a[key][1:])):
            raise AttnlabError(f"config error at 'approximation.{key}': {key} must increase, got {a[key]}")
    for name in approximated_runs():
        spec, where = spec_from_config(cfg, name), f"config error at '{find_run(cfg, name)[0]}.{name}'"
        if spec.mixer not in ("head", "multihead"):
            raise AttnlabError(f"{where}: S8 (approximation) measures its learned attention, and its mixer is "
                               f"'{spec.mixer}'")
        if not spec.scale or spec.position == "alibi":
            raise AttnlabError(f"{where}: {'ALiBi adds to its scores' if spec.scale else 'its scores are not scaled'}"
                               ", and S8 (approximation) approximates softmax(q kᵀ / √d_k) v alone")
        last = a["windows"][-1]
        if last + a["n_global"] >= spec.context:
            raise AttnlabError(f"config error at 'approximation.windows': a window of {last} with "
                               f"{a['n_global']} global tokens sees every one of the {spec.context} keys run "
                               f"'{name}' reads at once, so it is exact attention; take windows below "
                               f"{spec.context - a['n_global']}")


def check_approximation_split(cfg: dict, n_val: int, at_most: bool = False) -> None:
    """S8 on a trained layer reads approximation.batches x batch_size windows of each run's context from the
    validation split (`at_most`: n_val is an upper bound)."""
    from attnlab.config import spec_from_config

    a = cfg["approximation"]
    for name in approximated_runs():
        context = spec_from_config(cfg, name).context
        need = a["batches"] * a["batch_size"] * context
        if n_val < need:
            raise AttnlabError(f"config error at 'approximation.batches': {a['batches']} batches of "
                               f"{a['batch_size']} windows of {context} tokens (the context of run '{name}') need "
                               f"{need:,} validation tokens, and the corpus leaves {'at most ' if at_most else ''}"
                               f"{n_val:,}")


def approximated_runs() -> list[str]:
    """The training runs whose trained layers S8 measures (the registry's needs of `approximation`)."""
    from attnlab.registry import get

    return [need.partition(".")[2] for need in get("approximation").needs if "." in need]


def check_claims(cfg: dict) -> None:
    """The registry and its claims files load, and every run a claim reads is declared by some profile."""
    from attnlab.config import chosen
    from attnlab.registry import ROOT
    from attnlab.report.claims import load_registry

    profiles, claims = ROOT / "config", ROOT / "claims"
    registry = load_registry(claims)  # loads (and checks) the experiment registry too
    declared = {name for _, name in runs(cfg)}
    for path in sorted(Path(profiles).glob("*.yaml")):
        try:
            declared |= {name for _, name in runs(chosen({"profile": str(path)}, []))}
        except AttnlabError:
            continue  # a broken profile that is not the one running is not this run's problem
    for claim in registry.claims:
        unknown = sorted(claim.rows - declared)
        if unknown:
            raise AttnlabError(f"claim {claim.id} (claims/{claim.experiment}.yaml) reads run '{unknown[0]}', "
                               f"which no profile in config/ declares")


def check_device(device: str) -> None:
    if device == "cuda":
        ok, why = cuda_usable()
        if not ok:
            raise AttnlabError(f"config error at 'device': cuda was asked for, but {why}; "
                               f"use device: auto (the GPU when there is one) or cpu")


def check_corpus(cfg: dict, cache: Path) -> None:
    """A local corpus (or one downloaded earlier) must match its checksum and give every run enough tokens.

    Its token count lies between one per pre-split chunk (BPE never merges across chunks) and one per byte. A
    corpus too short even at one per byte, or long enough at one per chunk, is settled at once; only one in
    between (a short corpus, or any with pattern none: one chunk) is tokenised here, as the data job would.
    """
    from attnlab.data.bpe import RegexTokenizer
    from attnlab.data.corpus import read_text

    data = cfg["data"]
    if data["path"]:
        path, key = Path(data["path"]), "data.path"
    elif (cache / "input.txt").is_file():
        path, key = cache / "input.txt", "data.url"
    else:
        return  # downloaded by the data job, checked when it lands; the splits are checked before training
    text = read_text(path, data["sha256"], key)

    def enough(n_tokens: int, what: str, at_most: bool = False) -> None:
        n_val = int(n_tokens * data["val_fraction"])
        check_splits(cfg, n_tokens - n_val, n_val, at_most=at_most, source=(key, f"the corpus {path} {what}"))
        check_approximation_split(cfg, n_val, at_most)

    n_bytes = len(text.encode())
    enough(n_bytes, f"({n_bytes:,} bytes)", at_most=True)
    tok = RegexTokenizer(data["pattern"])
    try:
        enough(len(tok.split(text)), "")
    except AttnlabError:
        tok.train(text, data["vocab_size"])
        enough(len(tok.encode(text)), f"(tokenised with data.vocab_size={data['vocab_size']})")


def check_results(results: str | Path, write: bool = False) -> None:
    """The results folder can hold this run's files: every part of its path that exists is a folder and,
    with `write` (before the first job of a real run, never on a dry run), it takes new files."""
    import os
    import tempfile

    results = Path(results)
    for part in [*reversed(results.parents), results]:
        if part.exists() and not part.is_dir():
            raise AttnlabError(f"results folder {results} cannot be made: {part} is a file, not a folder")
    if not write:
        return
    try:
        results.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=results):
            pass
    except OSError as err:
        raise AttnlabError(f"results folder {results} is not writable ({err.strerror}); make it writable "
                           f"(chmod -R u+w {results}) or move it away to start afresh") from None
    for folder in (p for p in results.rglob("*") if p.is_dir()):
        if not os.access(folder, os.W_OK):
            raise AttnlabError(f"results folder {folder} is not writable; make it writable (chmod -R u+w {results})")
