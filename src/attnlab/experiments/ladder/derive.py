"""E2 · The ladder: the numbers its page shows, from the run files (each rung's perplexities over its seeds, its
parameters and curves, how it ran, and which run a reader's variant is read against)."""
from __future__ import annotations

import math

import pandas as pd

from attnlab import layout
from attnlab.claims.outcome import Outcome
from attnlab.config import run_settings
from attnlab.errors import AttnlabError
from attnlab.experiments.ladder import settings
from attnlab.results import Results, diverged
from attnlab.runs import LIKE, entries

NAME = "ladder"
RUNGS = list(settings.DEFAULTS)  # the chapter's rungs, bottom to top
REFERENCE = "L9"  # what a variant given whole (no `like`) is read against: one full block
SPEC_COLUMNS = ["n_blocks", "mixer", "n_heads", "residual", "position", "mlp", "norm"]
VALUE_COLUMNS = ["row", "n_params", "val_ppl", "train_ppl", "val_spread", "train_spread", "chapter_val_ppl",
                 "chapter_train_ppl", "status", "diverged_at_step", *SPEC_COLUMNS]


def variants(declared: dict | None) -> dict[str, dict]:
    """The profile's ladder runs that are not the chapter's rungs (a reader's own), name -> entry."""
    return {name: run or {} for name, run in entries(declared).items() if name not in RUNGS}


def reference_of(name: str, declared: dict | None, ran: dict) -> str | None:
    """The rung a variant is read against: the run it is `like` where that ran, else L9 where it ran."""
    like = (entries(declared).get(name) or {}).get(LIKE)
    return next((r for r in (like, REFERENCE) if r is not None and ran.get(r) is not None), None)


def read_against(declared: dict | None, ran: dict) -> list[tuple[str, str]]:
    """Each of the profile's variants that ran, with the rung it is read against (reference_of) where that ran."""
    pairs = [(name, reference_of(name, declared, ran)) for name in variants(declared) if ran.get(name) is not None]
    return [(name, reference) for name, reference in pairs if reference is not None]


def ladder_values(res: Results, rows: list[str], reference: dict | None = None) -> pd.DataFrame:
    """One line per row of `rows` (run or not); chapter values only where the chapter states one. Perplexities
    are means over the row's seeds (val_spread, train_spread: every seed's, results.Spread); a row with a
    diverged seed has none."""
    ref = (reference or {}).get(NAME, {})
    ladder = res.experiment(NAME)
    records = []
    for row in rows:
        m = ladder.get(row)
        spec = res.spec(row).to_dict() if m else {}
        bad = m is not None and any(diverged(x) for x in res.by_seed[row].values())
        status = Outcome.NOT_RUN if m is None else ("diverged" if bad else m.get("status", "ok"))
        val, train = (None, None) if m is None or bad else (res.spread(row, "val_ppl"), res.spread(row, "train_ppl"))
        records.append({
            "row": row,
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
    table = pd.DataFrame.from_records(records, columns=VALUE_COLUMNS)
    return table.astype({"n_params": "Int64", "diverged_at_step": "Int64"})


def numbers_only(table: pd.DataFrame) -> pd.DataFrame:
    """The ladder table with numbers only, one to a column (ladder.csv). In place of the results.Spread objects:
    the number of seeds, each perplexity's standard deviation over them (empty at one seed), and every seed's
    value (val_ppl_seed1337, ...)."""
    table = table.copy()
    spreads = {"val_ppl": list(table.pop("val_spread")), "train_ppl": list(table.pop("train_spread"))}
    seeds = sorted({k for column in spreads.values() for sp in column if sp for k in sp.by_seed})
    table.insert(table.columns.get_loc("val_ppl"), "n_seeds",
                 pd.array([len(sp.by_seed) if sp else None for sp in spreads["val_ppl"]], dtype="Int64"))
    for measure, column in spreads.items():
        table.insert(table.columns.get_loc(measure) + 1, f"{measure}_sd", [sp.sd if sp else None for sp in column])
    for measure, column in spreads.items():
        for seed in seeds:
            table[f"{measure}_{layout.seed_folder(seed)}"] = [sp.by_seed.get(seed) if sp else None for sp in column]
    return table


def curves_long(curves: dict[str, pd.DataFrame], max_points: int = 250) -> pd.DataFrame:
    """Long format (row, seed, step, split, loss) from each row's curve.csv at every seed (row -> the files with
    a `seed` column). Train loss is thinned to about `max_points` per row and seed."""
    frames = []
    for row, by_seed in curves.items():
        for seed, curve in by_seed.groupby("seed") if len(by_seed) else []:
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


def param_table(res: Results, rows: list[str]) -> pd.DataFrame:
    """Parameter breakdown per ladder row that ran, long format (row, part, n_params)."""
    ladder = res.experiment(NAME)
    records = [{"row": row, "part": part, "n_params": n}
               for row in rows for part, n in (ladder[row].get("param_breakdown") or {}).items()]
    return pd.DataFrame.from_records(records, columns=["row", "part", "n_params"])


def how_they_ran(res: Results, rows: list[str]) -> pd.DataFrame:
    """Per rung that ran: its steps, its speed, the step it resumed from, its evaluation method and how many
    validation and training tokens that scored."""
    ladder = res.experiment(NAME)
    recs = []
    for row in rows:
        m = ladder[row]
        ev = m.get("eval") or {}
        recs.append({"row": row, "steps": m.get("steps"), "tok_s": m.get("tokens_per_second"),
                     "resumed": m.get("resumed_from_step"), "method": ev.get("method"),
                     "val_tokens": ev.get("val_tokens_scored"), "train_tokens": ev.get("train_tokens_scored")})
    return pd.DataFrame(recs)


def eval_windows(config: dict, row: str) -> int | None:
    """How many validation windows the training loop scored at each evaluation of `row` (train.eval_windows)."""
    try:
        found = run_settings(config, row)
        return found.train["eval_windows"] if found else None
    except (AttnlabError, KeyError, TypeError):
        return None


def last_evals(res: Results, config: dict, curves: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per rung and seed, from the run files: the curve's last in-training validation loss (its step, the tokens it
    scored: the split's first eval_windows windows) beside the run file's final one (the whole split). `curves`:
    row -> its curve.csv at every seed, in the rows' order."""
    recs = []
    for row, curves_of_row in curves.items():
        windows = eval_windows(config, row)
        for seed, m in res.by_seed[row].items():
            curve = (curves_of_row[curves_of_row["seed"] == seed].dropna(subset=["val_loss"]) if len(curves_of_row)
                     else curves_of_row)
            context, scored = (m.get("spec") or {}).get("context"), (m.get("eval") or {}).get("val_tokens_scored")
            if not len(curve) or not context or not scored:
                continue
            recs.append({"row": row, "seed": seed, "step": int(curve["step"].iloc[-1]),
                         "curve_loss": float(curve["val_loss"].iloc[-1]), "steps": m.get("steps"),
                         "final_loss": m.get("val_loss"), "context": context, "final_tokens": scored,
                         "windows": None if windows is None else min(windows, scored // context)})
    return pd.DataFrame(recs, columns=["row", "seed", "step", "curve_loss", "steps", "final_loss", "context",
                                       "final_tokens", "windows"])


def scores_part(evals: pd.DataFrame) -> bool:
    """Whether the dots score only part of the split (its first windows), or an unknown number of them."""
    return bool(evals["windows"].isna().any() or (evals["windows"] * evals["context"] < evals["final_tokens"]).any())


def at_final_weights(evals: pd.DataFrame) -> pd.DataFrame:
    """The runs whose last dot was scored at the weights the final evaluation scored (the last step, not
    diverged)."""
    return evals[(evals["step"] == evals["steps"]) & evals["final_loss"].notna()]


def pct(gap: float) -> float:
    """How far a dot's perplexity lies from its run's final one, in per cent, for a gap of `gap` nats."""
    return 100 * abs(math.exp(-gap) - 1)


def seed_spans(same: pd.DataFrame) -> pd.DataFrame:
    """Per rung with more than one seed: how far its seeds' last dots (curve) and final losses (final) spread,
    largest less smallest, in nats."""
    spans = same.groupby("row").agg(seeds=("seed", "size"), curve=("curve_loss", lambda v: v.max() - v.min()),
                                    final=("final_loss", lambda v: v.max() - v.min()))
    return spans[spans["seeds"] > 1]
