"""E3 trained · √d_k: the numbers its page shows, from the run files (each run's perplexities over its seeds, and
its one head's probes at every seed, through training and at its first and last probed step)."""
from __future__ import annotations

import pandas as pd

from attnlab.results import Results

NAME = "scaling"
TWIN = {"E3-block-raw": "L9"}  # the divided twin of a run that lives in another experiment
PROBES = ("score_std", "saturated", "entropy")  # what the probes record of a head
C35_RUNS = ("E3-h1024-raw", "E3-h1024-div")  # the pair C3.5 reads


def runs_table(res: Results) -> pd.DataFrame:
    """One line per run, with the twin of any that lives in another experiment: its mixer, heads and d_k, whether
    it divides by √d_k, its steps, and its perplexities (means over seeds; val_spread, train_spread: every
    seed's)."""
    names = list(res.experiment(NAME))
    names += [twin for name, twin in TWIN.items() if name in names and twin in res.runs]
    rows = []
    for name in names:
        m, spec = res.runs[name], res.spec(name)
        rows.append({
            "run": name, "mixer": spec.mixer, "heads": spec.heads, "d_k": spec.head_dim, "divided": spec.scale,
            "steps": m.get("steps"), "val_ppl": res.mean(name, "val_ppl"), "train_ppl": res.mean(name, "train_ppl"),
            "val_spread": res.spread(name, "val_ppl"), "train_spread": res.spread(name, "train_ppl"),
            "status": res.status(name),
        })
    return pd.DataFrame(rows)


def probes_long(probes: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Long format (run, seed, step, probe, value) from each run's probes.csv at every seed (run -> the files with
    a `seed` column): the first head's probes, the only head these runs probe."""
    frames = []
    for name, df in probes.items():
        if len(df):
            cols = {c: c.rsplit("_", 1)[0] for c in df.columns if c.endswith("_0")}
            frames.append(df[["seed", "step", *cols]].rename(columns=cols).assign(run=name))
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames).melt(id_vars=["run", "seed", "step"], var_name="probe", value_name="value")


def probe_spreads(res: Results) -> dict[str, dict]:
    """Run -> {(probe, 'start' or 'end'): Spread over its seeds} from every seed's first and last probe (the
    first head's, the only one these runs have; a diverged run's last probe may be NaN, and is left out)."""
    out = {}
    for name in res.experiment(NAME):
        at = {(probe, when): res.spread(name, key, f"{probe}_0")
              for when, key in (("start", "probes_first"), ("end", "probes_last")) for probe in PROBES}
        if any(at.values()):
            out[name] = {k: sp for k, sp in at.items() if sp}
    return out


def c35_steps(res: Results) -> list[int]:
    """The steps at which C3.5's pair took its last probe, over their seeds."""
    return sorted({m["probes_last"]["step"] for run in C35_RUNS for m in (res.by_seed.get(run) or {}).values()
                   if (m.get("probes_last") or {}).get("step") is not None})


def c35_seconds(res: Results) -> float:
    """The run time of C3.5's pair at every seed, from each run file's wall time."""
    return sum(m["provenance"]["wall_seconds"] for run in C35_RUNS for m in (res.by_seed.get(run) or {}).values()
               if isinstance((m.get("provenance") or {}).get("wall_seconds"), (int, float)))
