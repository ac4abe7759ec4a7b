"""The index of run files: everything the report reads from results/<profile>/, found through the registry."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab import layout, registry
from attnlab.config import declared
from attnlab.errors import AttnlabError, is_diverged, why_diverged
from attnlab.nn.spec import ModelSpec
from attnlab.runfiles import read_json

if TYPE_CHECKING:
    import pandas as pd


BLOCKS = {"val_ppl": "val_blocks", "train_ppl": "train_blocks", "val_ppl_at": "val_blocks_at"}  # metric -> its blocks


@dataclass(frozen=True)
class Spread:
    """One measure of a training run over its seeds: the mean, the sample standard deviation (None for one
    seed) and every seed's value; for a perplexity, each seed's evaluation blocks too (what its sampling error
    is read from, see claims.design.paired)."""

    by_seed: dict
    blocks: dict = field(default_factory=dict)  # seed -> [(mean loss, tokens), ...], where the run records them

    @property
    def values(self) -> list[float]:
        return list(self.by_seed.values())

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values)

    @property
    def sd(self) -> float | None:
        n, m = len(self.values), self.mean
        return math.sqrt(sum((v - m) ** 2 for v in self.values) / (n - 1)) if n > 1 else None


@dataclass
class Results:
    """Everything the report reads from results/<profile>/, with missing files simply absent."""

    root: Path
    files: dict[str, dict] = field(default_factory=dict)      # experiment -> its parsed result file
    file_paths: dict[str, str] = field(default_factory=dict)  # experiment -> that file's path relative to root
    runs: dict[str, dict] = field(default_factory=dict)       # run name -> its run file at its first seed
    run_paths: dict[str, str] = field(default_factory=dict)   # run name -> that file's path relative to root
    by_seed: dict[str, dict] = field(default_factory=dict)    # run name -> {seed: its run file}, every seed
    seed_paths: dict[str, dict] = field(default_factory=dict)  # run name -> {seed: path relative to root}
    owner: dict[str, str] = field(default_factory=dict)  # run name -> its experiment

    def result(self, experiment: str) -> dict | None:
        """The parsed result file of an experiment that is not training (None when it has not run)."""
        return self.files.get(experiment)

    def experiment(self, name: str) -> dict[str, dict]:
        """The training runs of one experiment, by run name."""
        return {n: m for n, m in self.runs.items()
                if self.owner.get(n, self.run_paths.get(n, "").split("/")[0]) == name}

    def seeds(self, run: str) -> list[int]:
        """The seeds a training run has run files for (one, unknown (None), for a file from before seeds)."""
        return sorted(self.by_seed.get(run) or {}, key=lambda s: (s is None, s))

    def values(self, run: str, key: str) -> list:
        """One field of a training run's metrics at every seed it has (e.g. val_ppl), in seed order."""
        return [self.by_seed[run][seed].get(key) for seed in self.seeds(run)]

    def spread(self, run: str, key: str, sub: str | None = None) -> Spread | None:
        """A finite number of a training run's metrics (`key`, or `key`[`sub`]) over every seed it has; None
        where no seed has one (not run, diverged, not measured)."""
        by_seed, blocks = {}, {}
        for seed in self.seeds(run):
            m = self.by_seed[run][seed]
            v = m.get(key)
            v = v.get(sub) if sub is not None and isinstance(v, dict) else v
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                by_seed[seed] = v
                b = (m.get("eval") or {}).get(BLOCKS.get(key, ""))
                b = b.get(sub) if sub is not None and isinstance(b, dict) else b
                if isinstance(b, list) and b:
                    blocks[seed] = b
        return Spread(by_seed, blocks if len(blocks) == len(by_seed) else {}) if by_seed else None

    def mean(self, run: str, key: str, sub: str | None = None) -> float | None:
        sp = self.spread(run, key, sub)
        return sp.mean if sp else None

    def status(self, run: str) -> str:
        """'ok', 'diverged', or how many of its seeds diverged where only some did."""
        bad = [diverged(m) for m in self.by_seed[run].values()]
        if not any(bad):
            return self.runs[run].get("status", "ok")
        return "diverged" if all(bad) else f"diverged at {sum(bad)} of {len(bad)} seeds"

    def common_seeds(self, runs=(), files=(), keys=None) -> list[int]:
        """The seeds at which every run in `runs` and every result in `files` that holds seeds (a `by_seed`
        mapping) has a value; [] when none of them is seeded. `keys`: result file -> the top-level keys read from
        it (None or absent: all); a file seeds only what reads a key it holds per seed, so that a value it holds
        once is not read as if each seed had given it."""
        sets = [set(self.seeds(r)) for r in runs if r in self.by_seed]
        sets += [set(self.seeded(f, (keys or {}).get(f))) for f in files]
        sets = [s for s in sets if s]
        return sorted(set.intersection(*sets)) if sets and None not in set().union(*sets) else []

    def seeded(self, what: str, keys=None) -> list[int]:
        """The seeds a result file holds the `keys` at (None: any key) under `by_seed`; [] where it holds none."""
        per_seed = (self.files.get(what) or {}).get("by_seed") or {}
        held = {k for entry in per_seed.values() if isinstance(entry, dict) for k in dict.keys(entry)}
        return [int(s) for s in per_seed] if keys is None or held & set(keys) else []

    def recorded_seeds(self, what: str) -> list[int]:
        """The seeds a result file's numbers were made at, as the file records them: its `by_seed` entries, else
        the seeds its settings name, else the one seed of its provenance ([] where it records none)."""
        d = self.files.get(what) or {}
        settings = d.get("settings") if isinstance(d.get("settings"), dict) else {}
        named = settings.get("seeds") if isinstance(settings.get("seeds"), list) else []
        seeds = list(d.get("by_seed") or {}) or named or [(d.get("provenance") or {}).get("seed")]
        return sorted(int(s) for s in seeds if s is not None)

    def at(self, seed: int) -> Results:
        """These results as one seed saw them: each run's metrics at that seed, each seeded result's entry."""
        view = Results(root=self.root, file_paths=self.file_paths, by_seed=self.by_seed, seed_paths=self.seed_paths,
                       owner=self.owner)
        for name, per_seed in self.by_seed.items():
            if seed in per_seed:
                view.runs[name], view.run_paths[name] = per_seed[seed], self.seed_paths[name][seed]
        for what, d in self.files.items():
            view.files[what] = {**d, **d["by_seed"][str(seed)]} if str(seed) in d.get("by_seed", {}) else d
        return view

    def spec(self, run: str) -> ModelSpec:
        """The model a training run trained, as the run file records it."""
        return ModelSpec(**self.runs[run]["spec"])

    def path(self, what: str) -> str:
        """Path of a result file (by experiment) or a run's metrics (by run name) relative to the results root; a
        missing run's in the folder of the lowest seed the other runs have (seed* where none has one)."""
        if what in self.run_paths:
            return self.run_paths[what]
        files = {**result_files(), **self.file_paths}
        if what in files:
            return files[what]
        seeded = sorted(s for paths in self.seed_paths.values() for s, p in paths.items()
                        if layout.seed_of(p) is not None)
        if self.seed_paths and not seeded:  # a version from before seeds: one folder a run
            return layout.run_file(declared(what) or "*", what, None)
        return layout.run_file(declared(what) or "*", what, seeded[0] if seeded else "*")

    def provenance(self) -> dict[str, dict]:
        """Run file (relative path) -> its provenance, for every file present (every seed's)."""
        out = {self.file_paths[what]: (d.get("provenance") or {}) for what, d in self.files.items()}
        for name, per_seed in self.by_seed.items():
            for seed, m in per_seed.items():
                out[self.seed_paths[name][seed]] = m.get("provenance") or {}
        return out


def row_order(rows, known=()) -> list[str]:
    """Rows in the order `known` gives them (a page's own order, or the profile's), then any others alphabetically."""
    known = [r for r in dict.fromkeys(known) if r in rows]
    return known + sorted(set(rows) - set(known))


def per_seed_csv(res: Results, run: str, file: str) -> pd.DataFrame:
    """A run's `file` (layout.CURVE, layout.PROBES) at every seed it was trained at, with a `seed` column (empty if
    none): a chart drawn from one seed would show one draw of the noise as if it were the result."""
    import pandas as pd  # here, so that reading the run files (at DAG parse time) does not import pandas

    frames = [pd.read_csv(res.root / layout.sibling(rel, file)).assign(seed=seed)
              for seed, rel in sorted(res.seed_paths.get(run, {}).items())
              if (res.root / layout.sibling(rel, file)).is_file()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def result_files() -> dict[str, str]:
    """Experiment -> its result file under results/<profile>/, for every experiment that is not training."""
    return {e.name: e.result for e in registry.load() if not e.trains}


def result_file(root: Path, e: registry.Experiment) -> str:
    """`e`'s result file relative to `root`; in a version published before it was renamed, the one under its
    former name (the registry's `formerly`)."""
    if e.formerly and not (root / e.result).is_file():
        former = e.result.replace(f"{e.name}/", f"{e.formerly}/", 1)
        if (root / former).is_file():
            return former
    return e.result


def gather(results_dir: str | Path) -> Results:
    root = Path(results_dir)
    res = Results(root=root)
    for e in registry.load():
        rel = None if e.trains else result_file(root, e)
        if rel and (root / rel).is_file():
            res.files[e.name], res.file_paths[e.name] = _records(read_json(root / rel)), rel
    owner = res.owner
    for experiment in registry.training():
        # at every seed; a version's from before seeds has its one seed's in the run's folder
        seeded, legacy = (sorted(root.glob(layout.run_file(experiment, "*", seed))) for seed in ("*", None))
        for path in seeded + legacy:
            found = layout.parse(path.relative_to(root))
            if found is None:  # a folder seed<not a number>: not a seed's
                continue
            name = found.run
            if owner.setdefault(name, experiment) != experiment:
                raise AttnlabError(f"two runs are named '{name}': {res.run_paths[name]} and "
                                   f"{path.relative_to(root)}; run names must be unique across experiments")
            m = read_json(path)
            seed = (m.get("provenance") or {}).get("seed") if found.seed is None else found.seed
            res.by_seed.setdefault(name, {})[seed] = m
            res.seed_paths.setdefault(name, {})[seed] = str(path.relative_to(root))
    for name in res.by_seed:
        first = res.seeds(name)[0]
        res.runs[name], res.run_paths[name] = res.by_seed[name][first], res.seed_paths[name][first]
    return res


def _records(doc):
    """A result file's contents with every Diverged record (attnlab.errors) made a DivergedRecord."""
    if isinstance(doc, dict):
        doc = {k: _records(v) for k, v in doc.items()}
        return DivergedRecord(doc) if is_diverged(doc) else doc
    return [_records(v) for v in doc] if isinstance(doc, list) else doc


def diverged(metrics: dict) -> bool:
    if metrics.get("status") == "diverged":
        return True
    val = metrics.get("val_ppl")
    return isinstance(val, float) and not math.isfinite(val)


def measured(entries: dict) -> tuple[dict, list[dict]]:
    """A result file's mapping of name -> measurement split in two: the measured entries, and the Diverged
    records of those whose run diverged."""
    return ({k: v for k, v in entries.items() if not is_diverged(v)},
            [v for v in entries.values() if is_diverged(v)])


class NotMeasured(Exception):
    """What a claim reads was not measured: the run it is measured on diverged (the message says which, where)."""


class DivergedRecord(dict):
    """A result file's stand-in for what a diverged run would have given (attnlab.errors.Diverged): its own keys
    read as in any mapping; reading anything else from it, or going through it, raises NotMeasured."""

    @property
    def why(self) -> str:
        return why_diverged(dict.__getitem__(self, "run"), self)

    def __getitem__(self, key):
        if key in self:
            return dict.__getitem__(self, key)
        raise NotMeasured(self.why)

    def __iter__(self):
        raise NotMeasured(self.why)


