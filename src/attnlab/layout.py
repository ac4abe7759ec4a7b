"""Where every run file lives under results/<profile>/: the one place that spells a path of one.

    data/stats.json                          the data experiment's (with its token files beside it)
    <experiment>/result.json                 an analysis's or a benchmark's
    <experiment>/<model>/                    a model an analysis trains, at its first seed
    <experiment>/<model>-seed<k>/            or at every seed, named with it (seeded)
    <experiment>/seed<k>/                    an analysis's own work at a seed after its first (the first's is
                                             beside its result)
    <experiment>/<run>/seed<k>/metrics.json  a training run's at one seed, with curve.csv, probes.csv, ckpt.pt
    <experiment>/<run>/metrics.json          the same, in a version from before seeds (its one seed)

Paths are relative to results/<profile>/ and use '/' whatever the system. Nothing here imports torch, the
registry or the settings: the registry, the plan, the rules and the report all build and read paths here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

METRICS = "metrics.json"  # a training run's run file: its spec, status, steps and measurements
CURVE = "curve.csv"       # its losses, one row per step
PROBES = "probes.csv"     # its probes, one row per step they ran at
CHECKPOINT = "ckpt.pt"    # its weights (and optimiser state while it runs); never published
TRAINING_FILES = (METRICS, CURVE, PROBES)  # what a published version keeps of a run
RUN_FILES = (*TRAINING_FILES, CHECKPOINT)
RESULT = "result.json"    # an analysis's or a benchmark's run file
DATA = "data"             # the data experiment's folder: the token files and their stats
STATS_FILE = "stats.json"
STATS = f"{DATA}/{STATS_FILE}"
SEED_FOLDER = re.compile(r"seed(\d+)")


def seed_folder(seed: int | str) -> str:
    """The folder of one seed's work (a string seed: a Snakemake wildcard such as '{seed}')."""
    return f"seed{seed}"


def seed_of_folder(name: str) -> int | None:
    """The seed a folder holds the work of (None: not a seed's folder)."""
    found = SEED_FOLDER.fullmatch(name)
    return int(found[1]) if found else None


def run_dir(experiment: str, run: str, seed: int | str | None) -> str:
    """A training run's folder at one seed (also its job's name); seed None: a version from before seeds kept
    its files in the run's folder."""
    return f"{experiment}/{run}" if seed is None else f"{experiment}/{run}/{seed_folder(seed)}"


def run_file(experiment: str, run: str, seed: int | str | None, name: str = METRICS) -> str:
    """One file of a training run at one seed (default its run file, metrics.json)."""
    return f"{run_dir(experiment, run, seed)}/{name}"


def sibling(path: str, name: str) -> str:
    """Another file of the training run whose file `path` is (e.g. the curve beside a metrics.json)."""
    return str(PurePosixPath(path).with_name(name))


def result(experiment: str, kind: str) -> str | None:
    """The run file of an experiment of `kind` (data | training | analysis | benchmark); None for training,
    which has one per run and seed."""
    return None if kind == "training" else STATS if kind == "data" else f"{experiment}/{RESULT}"


def seed_dir(folder: Path, seed: int, first: int) -> Path:
    """Where an analysis whose result is in `folder` keeps its own work (a model it trains) at `seed`: beside
    the result at its first seed, in a seed<k> folder at every other."""
    return folder if seed == first else folder / seed_folder(seed)


def results_of(result: Path) -> Path:
    """The results/<profile>/ folder an analysis's result file is in (where the runs it reads are)."""
    return Path(result).parents[1]


def model_dir(experiment: str, model: str) -> str:
    """A model an analysis trains and keeps beside its result (at its first seed) for others to read."""
    return f"{experiment}/{model}"


def seeded(name: str, seed: int) -> str:
    """The name (and folder, under its analysis's) of a model an analysis trains at `seed`."""
    return f"{name}-{seed_folder(seed)}"


@dataclass(frozen=True)
class RunPath:
    """A training run's path read back: its experiment (None where the path does not say), run, seed (None:
    a version from before seeds, or a path that names none) and file (None: the folder)."""
    run: str
    experiment: str | None = None
    seed: int | None = None
    file: str | None = None

    def source(self) -> dict:
        """What a run file records as where an up-trained run started: the run and its seed."""
        return {"run": self.run, "seed": self.seed}


def parse(path: str | Path | None) -> RunPath | None:
    """A training run's file or folder ('grouping/S6-mha/seed1337/ckpt.pt', 'ladder/L9/metrics.json',
    'ladder/L9/seed7', or a bare run name) read back; None where `path` is not one."""
    parts = list(PurePosixPath(str(path)).parts) if path else []
    file = parts.pop() if parts and parts[-1] in RUN_FILES else None
    seed = seed_of_folder(parts[-1]) if parts else None
    if seed is not None:
        parts.pop()
    if not 1 <= len(parts) <= 2 or any(p in ("", ".", "..", "/") for p in parts):
        return None
    return RunPath(parts[-1], parts[0] if len(parts) == 2 else None, seed, file)


def seed_of(path: str | Path) -> int | None:
    """The seed a training run's file or folder is at (None: a version from before seeds, or not a run's path)."""
    found = parse(path)
    return found.seed if found else None


def source_of(init_from) -> RunPath | None:
    """Where an up-trained run started, as its run file records it: {run, seed}, or (a version published before
    that) the path of the checkpoint, or the run's name; None: from scratch."""
    if isinstance(init_from, dict):
        return RunPath(init_from["run"], seed=init_from.get("seed")) if init_from.get("run") else None
    return parse(init_from)


# Snakemake's output patterns (its wildcards in braces), relative to results/<profile>/
TRAIN_DIR = run_dir("{experiment}", "{run}", "{seed}")
ANALYSIS_RESULT = result("{name}", "analysis")
