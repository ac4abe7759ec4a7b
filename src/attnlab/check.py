"""Every check a profile can fail, run before any job starts (by the Snakefile and by `attnlab check`): what all
experiments share here, then each registered experiment's own (its settings module's check()).

Nothing here imports torch: the Snakefile runs it on every invocation, so it must stay fast.
"""
from __future__ import annotations

from pathlib import Path

from attnlab.config import validate
from attnlab.device import cuda_usable
from attnlab.errors import AttnlabError
from attnlab.registry import load, settings_of
from attnlab.runs import check_splits, runs, spec_from_config


def check(cfg: dict, results: str | Path = "results", corpus: bool = True, only: list[str] | None = None) -> dict:
    """The validated profile; raise AttnlabError naming the first setting that would fail a job.

    `results`: the folder of every profile's results: results/<profile> must be able to be a folder, and a corpus
    downloaded by an earlier run is cached in it.
    `corpus`: False where no job reads it (the benchmarks run alone).
    `only`: the experiments a run is limited to: the others' own checks are skipped (their settings may ask for
    what this machine cannot do, e.g. the chapter's E6 sizes on a CPU running only the ladder).
    """
    cfg = validate(cfg)
    check_results(Path(results) / cfg["profile"])
    check_device(cfg["device"])
    check_init(cfg)
    experiments = in_run(cfg, only)
    for module in modules_with("check", experiments):
        module.check(cfg)
    if corpus:
        check_corpus(cfg, Path(results) / cfg["profile"] / "data", experiments)
    check_claims(cfg)
    return cfg


def in_run(cfg: dict, only: list[str] | None) -> set[str] | None:
    """The experiments whose jobs a run limited to `only` runs (those it names and those they need); None: all."""
    if not only:
        return None
    from attnlab.plan import with_needs
    return {job.experiment for job in with_needs(cfg, only)}


def modules_with(function: str, experiments: set[str] | None = None) -> list:
    """The registered experiments' settings modules that define `function` (of `experiments` only, if given)."""
    chosen = (settings_of(e) for e in load() if experiments is None or e.name in experiments)
    return [m for m in chosen if callable(getattr(m, function, None))]


def check_init(cfg: dict) -> None:
    """Every up-trained run starts from a run of this profile whose model differs at most in key/value heads
    (more of them, a multiple of this run's), so that its weights can be pooled into this run's shape."""
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


def check_claims(cfg: dict) -> None:
    """The registry and its claims files load, and every run a claim reads is declared by some profile."""
    from attnlab.claims.registry import load_registry
    from attnlab.config import chosen
    from attnlab.registry import ROOT, get, relative

    profiles = ROOT / "config"
    registry = load_registry()  # loads (and checks) the experiment registry too
    declared = {name for _, name in runs(cfg)}
    for path in sorted(Path(profiles).glob("*.yaml")):
        try:
            declared |= {name for _, name in runs(chosen({"profile": str(path)}, []))}
        except AttnlabError:
            continue  # a broken profile that is not the one running is not this run's problem
    for claim in registry.claims:
        unknown = sorted(claim.rows - declared)
        if unknown:
            raise AttnlabError(f"claim {claim.id} ({relative(get(claim.experiment).claims_file)}) reads run '{unknown[0]}', "
                               f"which no profile in config/ declares")


def check_device(device: str) -> None:
    if device == "cuda":
        ok, why = cuda_usable()
        if not ok:
            raise AttnlabError(f"config error at 'device': cuda was asked for, but {why}; "
                               f"use device: auto (the GPU when there is one) or cpu")


def check_corpus(cfg: dict, cache: Path, experiments: set[str] | None = None) -> None:
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
        n_train = n_tokens - n_val
        check_splits(cfg, n_train, n_val, at_most=at_most, source=(key, f"the corpus {path} {what}"))
        for module in modules_with("check_split", experiments):
            module.check_split(cfg, n_train, n_val, at_most)

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
