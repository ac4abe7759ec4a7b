"""Every check a profile can fail, run before any job starts (by the Snakefile and by `attnlab check`).

Nothing here imports torch: the Snakefile runs it on every invocation, so it must stay fast.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from attnlab.bench.settings import check_cost, check_decode
from attnlab.config import check_splits, runs, validate
from attnlab.errors import AttnlabError
from attnlab.experiments.tasks import check_induction, check_seq2seq, check_winograd


def check(cfg: dict, results: str | Path = "results", corpus: bool = True) -> dict:
    """The validated profile; raise AttnlabError naming the first setting that would fail a job.

    `results`: the folder of every profile's results, where a corpus downloaded by an earlier run is cached.
    `corpus`: False where no job reads it (the benchmarks run alone).
    """
    cfg = validate(cfg)
    check_device(cfg["device"])
    check_decode(cfg["decode"])
    check_winograd(cfg["winograd"])
    check_induction(cfg["induction"])
    check_seq2seq(cfg["seq2seq"])
    check_init(cfg)
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


def cuda_usable() -> tuple[bool, str]:
    """Whether torch can run on a CUDA GPU here, and why not; torch's build is read, not imported."""
    found = importlib.util.find_spec("torch")
    if found is None or not found.origin:
        return False, "torch is not installed"
    version = (Path(found.origin).parent / "version.py").read_text()
    built = re.search(r"^cuda\b[^=]*=\s*['\"]([^'\"]+)['\"]", version, re.M)
    if not built:
        return False, "this torch build has no CUDA support"
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as err:  # no driver, no library: NVML says why
        return False, f"no NVIDIA driver answered ({err})"
    return (count > 0), f"{count} CUDA device(s)"


def check_device(device: str) -> None:
    if device == "cuda":
        ok, why = cuda_usable()
        if not ok:
            raise AttnlabError(f"config error at 'device': cuda was asked for, but {why}; "
                               f"use device: auto (the GPU when there is one) or cpu")


def check_corpus(cfg: dict, cache: Path) -> None:
    """A local corpus (or one downloaded earlier) must match its checksum and hold enough tokens.

    Byte-level BPE never makes more tokens than the corpus has bytes, so the bytes bound every split
    from above: a split that is too short even then is an error now, not after the data job.
    """
    from attnlab.data.corpus import read_text

    data = cfg["data"]
    if data["path"]:
        path, key = Path(data["path"]), "data.path"
    elif (cache / "input.txt").is_file():
        path, key = cache / "input.txt", "data.url"
    else:
        return  # downloaded by the data job, checked when it lands; the splits are checked before training
    n_bytes = len(read_text(path, data["sha256"]).encode())
    n_val = int(n_bytes * data["val_fraction"])
    check_splits(cfg, n_bytes - n_val, n_val, at_most=True, source=(key, f"the corpus {path} ({n_bytes:,} bytes)"))


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
