"""Tidy tables (pandas) built only from run files and the registry's reference values."""
from __future__ import annotations

import pandas as pd

from attnlab.claims.outcome import Outcome
from attnlab.results import Results, diverged

# The ladder, bottom to top. Each rung adds one piece to the one before it;
# learned positions, once added at L3, stay on for every later rung.
ROWS = {
    "L1": "no context: token embedding → linear to vocabulary",
    "L2": "uniform causal average of the context replaces the token",
    "L3": "L2 + learned positions added before averaging",
    "L4": "the average is added to the token (residual)",
    "L5": "one learned head (d_head 128) replaces the token",
    "L6": "one learned head, added (residual)",
    "L7": "4 heads of 32 + output projection W_o",
    "L8": "L7 + position-wise MLP (4×, GELU)",
    "L9": "L8 + pre-norm LayerNorm = one full block",
    "B2": "two full blocks",
}
SPEC_COLUMNS = ["n_blocks", "mixer", "n_heads", "residual", "position", "mlp", "norm"]
LADDER_COLUMNS = ["row", "description", "n_params", "val_ppl", "train_ppl", "val_spread", "train_spread", "chapter_val_ppl",
                  "chapter_train_ppl", "status", "diverged_at_step", *SPEC_COLUMNS]


def row_order(rows) -> list[str]:
    """Known rows in ladder order, then any others alphabetically."""
    known = [r for r in ROWS if r in rows]
    return known + sorted(set(rows) - set(known))


def ladder_table(res: Results, reference: dict | None = None) -> pd.DataFrame:
    """One line per ladder row (run or not); chapter values only where the chapter states one. Perplexities are
    means over the row's seeds (val_spread, train_spread: every seed's, results.Spread)."""
    ref = (reference or {}).get("ladder", {})
    ladder = res.experiment("ladder")
    records = []
    for row in row_order(set(ROWS) | set(ladder)):
        m = ladder.get(row)
        spec = res.spec(row).to_dict() if m else {}
        bad = m is not None and any(diverged(x) for x in res.by_seed[row].values())
        status = Outcome.NOT_RUN if m is None else ("diverged" if bad else m.get("status", "ok"))
        val, train = (None, None) if m is None or bad else (res.spread(row, "val_ppl"), res.spread(row, "train_ppl"))
        records.append({
            "row": row,
            "description": ROWS.get(row, m.get("name", row) if m else row),
            "n_params": None if m is None else m.get("n_params"),
            "val_ppl": val.mean if val else None,
            "train_ppl": train.mean if train else None,
            "val_spread": val,
            "train_spread": train,
            "chapter_val_ppl": ref.get(row, {}).get("val_ppl"),
            "chapter_train_ppl": ref.get(row, {}).get("train_ppl"),
            "status": status,
            "diverged_at_step": None if m is None else m.get("diverged_at_step"),
            **{k: spec.get(k) for k in SPEC_COLUMNS},
            "n_heads": res.spec(row).heads if m and spec["mixer"] in ("head", "multihead") else None,
        })
    table = pd.DataFrame.from_records(records, columns=LADDER_COLUMNS)
    return table.astype({"n_params": "Int64", "diverged_at_step": "Int64"})


def per_seed_csv(res: Results, run: str, file: str) -> pd.DataFrame:
    """A run's `file` (curve.csv, probes.csv) at every seed it was trained at, with a `seed` column (empty if none):
    a chart drawn from one seed would show one draw of the noise as if it were the result."""
    frames = [pd.read_csv(res.root / rel.replace("metrics.json", file)).assign(seed=seed)
              for seed, rel in sorted(res.seed_paths.get(run, {}).items())
              if (res.root / rel.replace("metrics.json", file)).is_file()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def seeds_named(table: pd.DataFrame) -> str:
    """'seed 1337' or 'seeds 1337, 1338, 1339 (a line each)': what a chart drawn from `table` shows."""
    seeds = sorted(set(table["seed"])) if "seed" in table else []
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"seeds {', '.join(map(str, seeds))} (a line each)" if seeds else "no seed"


def curves_table(res: Results, max_points: int = 250) -> pd.DataFrame:
    """Long format (row, seed, step, split, loss), every seed of every rung. Train loss is thinned to about
    `max_points` per row and seed."""
    frames = []
    for row in row_order(res.experiment("ladder")):
        for seed, curve in per_seed_csv(res, row, "curve.csv").groupby("seed") if res.seed_paths.get(row) else []:
            train = curve.dropna(subset=["train_loss"])
            train = train.iloc[::max(1, len(train) // max_points)]
            val = curve.dropna(subset=["val_loss"])
            frames += [pd.DataFrame({"row": row, "seed": seed, "step": train["step"], "split": "train",
                                     "loss": train["train_loss"]}),
                       pd.DataFrame({"row": row, "seed": seed, "step": val["step"], "split": "val",
                                     "loss": val["val_loss"]})]
    if not frames:
        return pd.DataFrame(columns=["row", "seed", "step", "split", "loss"])
    return pd.concat(frames, ignore_index=True)


def param_table(res: Results) -> pd.DataFrame:
    """Parameter breakdown per ladder row, long format (row, part, n_params)."""
    ladder = res.experiment("ladder")
    records = [
        {"row": row, "part": part, "n_params": n}
        for row in row_order(ladder)
        for part, n in (ladder[row].get("param_breakdown") or {}).items()
    ]
    return pd.DataFrame.from_records(records, columns=["row", "part", "n_params"])


def ladder_csv(res: Results, reference: dict | None = None) -> pd.DataFrame:
    """ladder.csv: the ladder table with numbers only, one to a column. In place of the results.Spread objects
    the pages format: the number of seeds, each perplexity's standard deviation over them (empty at one seed),
    and every seed's value (val_ppl_seed1337, ...)."""
    table = ladder_table(res, reference)
    spreads = {"val_ppl": list(table.pop("val_spread")), "train_ppl": list(table.pop("train_spread"))}
    seeds = sorted({k for column in spreads.values() for sp in column if sp for k in sp.by_seed})
    table.insert(table.columns.get_loc("val_ppl"), "n_seeds",
                 pd.array([len(sp.by_seed) if sp else None for sp in spreads["val_ppl"]], dtype="Int64"))
    for measure, column in spreads.items():
        table.insert(table.columns.get_loc(measure) + 1, f"{measure}_sd", [sp.sd if sp else None for sp in column])
    for measure, column in spreads.items():
        for seed in seeds:
            table[f"{measure}_seed{seed}"] = [sp.by_seed.get(seed) if sp else None for sp in column]
    return table
