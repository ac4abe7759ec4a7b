"""S1's numbers as its page shows them, derived from its result file (producer.py writes it): the seeds' and the
means' values, the wiring comparison's rows, the gradient path's summaries and the map's alignment."""
from __future__ import annotations

import math

import pandas as pd

from attnlab.errors import diverged_record, is_diverged
from attnlab.nn.spec import WIRINGS

SEED_COLUMNS = ["task", "source length", "variant", "seed", "measure", "value"]
MEAN_COLUMNS = ["task", "source length", "variant", "measure", "value", "low", "high", "seeds"]


def seed_list(r: dict) -> list[int]:
    """The seeds S1 trained at: the profile's list, or (a version from before it) those its runs name."""
    seeds = r["settings"]["seeds"]
    return seeds if isinstance(seeds, list) else sorted({run["seed"] for run in r["runs"]})


def seed_values(r: dict, measures) -> pd.DataFrame:
    """One row per run and measure (a key of `measures`): every seed's value (a diverged run has none)."""
    return pd.DataFrame([{"task": run["task"], "source length": run["source_length"], "variant": run["variant"],
                          "seed": run["seed"], "measure": key, "value": run[key]}
                         for run in r["runs"] for key in measures if run[key] is not None], columns=SEED_COLUMNS)


def mean_values(r: dict, measures) -> pd.DataFrame:
    """One row per task, length, variant and measure: the mean over seeds and the lowest and highest seed."""
    return pd.DataFrame([{"task": row["task"], "source length": row["source_length"], "variant": row["variant"],
                          "measure": key, "value": row[key], "low": row[key + "_min"], "high": row[key + "_max"],
                          "seeds": row["seeds"]}
                         for row in r["summary"] for key in measures if row[key] is not None], columns=MEAN_COLUMNS)


def by_length(r: dict, key: str) -> pd.DataFrame:
    """One measure as task x length rows (sorted) and a column per variant: its (mean, standard deviation) over
    seeds."""
    cells: dict[tuple, dict] = {}
    for row in r["summary"]:
        task, length = row["task"], row["source_length"]
        at = cells.setdefault((task, length), {"task": task, "length": length})
        at[row["variant"]] = (row[key], row[key + "_sd"])
    return pd.DataFrame(sorted(cells.values(), key=lambda c: (c["task"], c["length"])))


def summary_at(r: dict) -> dict[tuple, dict]:
    """The summary's rows by (task, source length, variant)."""
    return {(row["task"], row["source_length"], row["variant"]): row for row in r["summary"]}


def diverged_runs(r: dict) -> list[dict]:
    """The Diverged records of the runs that diverged."""
    return [diverged_record(run["name"], run.get("diverged_at_step")) for run in r["runs"]
            if run.get("status") == "diverged"]


def contrast(c: dict, sign: int = 1) -> tuple[float, float | None, float]:
    """A paired contrast of the result as (mean, its standard error, degrees of freedom): n − 1 where the seeds'
    spread gave the error, infinite where the held-out rows did; `sign` -1 turns a drop into a change."""
    df = c["seeds"] - 1 if c.get("se_from") == "seeds" and c.get("seeds", 1) > 1 else math.inf
    return sign * c["mean"], c.get("se"), df


def measured(c) -> bool:
    """Whether a contrast was measured (not missing, no run of it diverged)."""
    return bool(c) and not is_diverged(c)


def wiring_rows(r: dict) -> list[dict]:
    """The wiring comparison's rows: Bahdanau's variant minus a Luong score at a task and length, with both
    accuracies and the paired difference (None where a run diverged or is missing)."""
    at = summary_at(r)
    return [{**w, "bahdanau_acc": at[(w["task"], w["source_length"], "bahdanau")]["token_accuracy"],
             "luong_acc": at[(w["task"], w["source_length"], w["luong"])]["token_accuracy"],
             "difference": w["difference"] if measured(w["difference"]) else None}
            for w in r["contrasts"].get("wiring", [])]


def by_wiring(variants: list[str]) -> dict[str, list[str]]:
    """The variants in each paper's wiring ('bahdanau', 'luong'), in their order."""
    return {wiring: [v for v in variants if WIRINGS[v] == wiring] for wiring in ("bahdanau", "luong")}


# ------------------------------------------------------------------ the gradient path

def geometric_mean(xs) -> float:
    """The geometric mean of norms (0 where one is 0): how the producer summarises the seeds' norms."""
    xs = list(xs)
    return 10 ** (sum(math.log10(x) for x in xs) / len(xs)) if min(xs) > 0 else 0.0


def gradient_lines(data: pd.DataFrame) -> pd.DataFrame:
    """Per layer and T, the norm over seeds as the reading states it: their geometric mean."""
    return data.groupby(["layer", "T"], as_index=False)["grad"].agg(geometric_mean)


def times_T(g: dict) -> float:
    """How norm × T changes from the shortest T to the longest, from the two norms the reading names: their
    ratio times T's, i.e. 10^-decades × T_long / T_short (not a mean of per-seed ratios, which would not follow
    from them)."""
    if g["grad_short"] == 0:
        return math.nan
    return g["grad_long"] * g["T_long"] / (g["grad_short"] * g["T_short"])


def decades_as_one_over_T(g: dict) -> float:
    """How many decades a norm falling as 1/T would fall from the shortest T to the longest."""
    return math.log10(g["T_long"] / g["T_short"])


def summary_over_seeds(norm: float, values: list[float]) -> str | None:
    """Which mean over the seeds' norms a result's summary `norm` is ('geometric' or 'arithmetic', the one it
    equals to float precision); None where it is neither."""
    means = {"geometric": geometric_mean(values), "arithmetic": sum(values) / len(values)}
    return next((name for name, m in means.items() if math.isclose(norm, m, rel_tol=1e-9)), None)


def gradient_seeds(r: dict) -> tuple[str | None, int]:
    """Which mean over the seeds the first layer's summary norms are (summary_over_seeds), and over how many
    seeds the rows run."""
    kind, g = next(iter(r["gradient"].items()))
    values = [row["grad"] for row in r["gradient_path"] if row["kind"] == kind and row["T"] == g["T_short"]]
    mean = summary_over_seeds(g["grad_short"], values) if values else None
    return mean, len({row["seed"] for row in r["gradient_path"] if row["kind"] == kind})


# ------------------------------------------------------------------ the map of one reversed sequence

def alignment(m: dict) -> dict:
    """Where the map's weight sits against the reversal's alignment (output t reads source S-1-t): the mean weight
    on that position (`on`) and within one of it (`near`), the commonest offset of a step's heaviest key from it
    (`offset`) and at how many steps (`steps`), and how many tokens the model got right (`right`)."""
    S, w = len(m["source"]), m["weights"]
    peaks = [max(range(S), key=w[t].__getitem__) for t in range(S)]
    offsets = pd.Series([p - (S - 1 - t) for t, p in enumerate(peaks)]).value_counts()
    return {"S": S, "on": sum(w[t][S - 1 - t] for t in range(S)) / S,
            "near": sum(sum(w[t][j] for j in range(S) if abs(j - (S - 1 - t)) <= 1) for t in range(S)) / S,
            "offset": int(offsets.index[0]), "steps": int(offsets.iloc[0]),
            "right": sum(p == t for p, t in zip(m["predicted"], m["target"]))}


def decoder_rows(m: dict) -> list[list[float] | None]:
    """The map as rows over the tokens [source, separator, greedy predictions]: each decoder step's row over the
    source (rounded to 4 decimals, 0 over the rest) on the token it predicts; None (not attending) elsewhere."""
    S, n = m["source_length"], len(m["source"]) + 1 + len(m["predicted"])
    rows = [None] * n
    for t, row in enumerate(m["weights"]):
        rows[S + 1 + t] = [round(x, 4) for x in row] + [0.0] * (n - S)
    return rows


def shift_after_mistake(m: dict, most: int = 3) -> tuple[int, int, int, int] | None:
    """Where greedy decoding lost its place: the first wrong step, how many tokens follow it, the shift k (within
    `most`; k > 0 a skip, k < 0 a repeat) under which most of them are right, and how many are; None where all are
    right or no shift explains most."""
    pred, tgt = m["predicted"], m["target"]
    wrong = [t for t, (p, y) in enumerate(zip(pred, tgt)) if p != y]
    if not wrong:
        return None
    first, rest = wrong[0], len(tgt) - wrong[0] - 1
    shifted = {k: sum(pred[t] == tgt[t + k] for t in range(first + 1, len(tgt)) if 0 <= t + k < len(tgt))
               for k in range(-most, most + 1) if k}
    k = max(shifted, key=shifted.get)
    return None if rest == 0 or shifted[k] <= rest / 2 else (first, rest, k, shifted[k])
