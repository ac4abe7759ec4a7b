"""The index of run files: everything the report reads from results/<profile>/, found through the registry."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from attnlab import registry as experiments
from attnlab.config import declared
from attnlab.errors import AttnlabError
from attnlab.nn.spec import ModelSpec
from attnlab.provenance import read_json


@dataclass
class Results:
    """Everything the report reads from results/<profile>/, with missing files simply absent."""

    root: Path
    files: dict[str, dict] = field(default_factory=dict)      # experiment -> its parsed result file
    runs: dict[str, dict] = field(default_factory=dict)       # run name -> metrics.json
    run_paths: dict[str, str] = field(default_factory=dict)   # run name -> path relative to root

    def result(self, experiment: str) -> dict | None:
        """The parsed result file of an experiment that is not training (None when it has not run)."""
        return self.files.get(experiment)

    def experiment(self, name: str) -> dict[str, dict]:
        """The training runs of one experiment, by run name."""
        return {n: m for n, m in self.runs.items() if self.run_paths[n].startswith(name + "/")}

    def spec(self, run: str) -> ModelSpec:
        """The model a training run trained, as the run file records it."""
        return ModelSpec(**self.runs[run]["spec"])

    def path(self, what: str) -> str:
        """Path of a result file (by experiment) or a run's metrics (by run name) relative to the results root."""
        if what in self.run_paths:
            return self.run_paths[what]
        files = result_files()
        return files[what] if what in files else f"{declared(what) or '*'}/{what}/metrics.json"

    def provenance(self) -> dict[str, dict]:
        """Run file (relative path) -> its provenance, for every file present."""
        files = result_files()
        out = {files[what]: (d.get("provenance") or {}) for what, d in self.files.items()}
        for name, m in self.runs.items():
            out[self.run_paths[name]] = m.get("provenance") or {}
        return out


def result_files() -> dict[str, str]:
    """Experiment -> its result file under results/<profile>/, for every experiment that is not training."""
    return {e.name: e.result for e in experiments.load() if not e.trains}


def gather(results_dir: str | Path) -> Results:
    root = Path(results_dir)
    res = Results(root=root)
    for what, rel in result_files().items():
        if (root / rel).is_file():
            res.files[what] = _read(root / rel)
    for experiment in experiments.training():
        for path in sorted(root.glob(f"{experiment}/*/metrics.json")):
            name = path.parent.name
            if name in res.runs:
                raise AttnlabError(f"two runs are named '{name}': {res.run_paths[name]} and "
                                   f"{path.relative_to(root)}; run names must be unique across experiments")
            res.runs[name] = _read(path)
            res.run_paths[name] = str(path.relative_to(root))
    return res


def _read(path: Path) -> dict:
    try:
        return read_json(path)
    except ValueError as err:
        raise AttnlabError(f"run file {path} is not valid JSON: {err}") from None


def diverged(metrics: dict) -> bool:
    if metrics.get("status") == "diverged":
        return True
    val = metrics.get("val_ppl")
    return isinstance(val, float) and not math.isfinite(val)


