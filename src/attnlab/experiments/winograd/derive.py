"""E8's numbers as its page shows them, derived from its result file (producer.py writes it): every model's
held-out accuracy, by seed and against chance, and where the maps' rows put their weight."""
from __future__ import annotations

import pandas as pd

from attnlab.errors import is_diverged
from attnlab.results import Spread, measured

SIZES = ("pairs_trained", "pairs_held_out", "sentences_trained", "sentences_held_out")


def task_sizes(r: dict) -> pd.DataFrame:
    """Each version's pairs and sentences, trained on and held out."""
    return pd.DataFrame([{"version": v, **{k: e[k] for k in SIZES}} for v, e in r["versions"].items()])


def accuracies(r: dict) -> pd.DataFrame:
    """One row per version and model that was measured: its held-out answers (accuracy, its error, the other
    noun, ...) at the result's own seed."""
    rows = [{"version": v, "model": m, **d} for v, e in r["versions"].items()
            for m, d in measured(e["models"])[0].items()]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=["version", "model"])


def two_se_band(rows: pd.DataFrame) -> dict[str, pd.Series]:
    """Each accuracy ± 2 standard errors, clipped to [0, 1]: columns low and high."""
    return {"low": (rows.accuracy - 2 * rows.accuracy_se).clip(lower=0),
            "high": (rows.accuracy + 2 * rows.accuracy_se).clip(upper=1)}


def diverged_models(r: dict) -> list[dict]:
    """The Diverged records of the models that diverged."""
    return [d for e in r["versions"].values() for d in measured(e["models"])[1]]


def seeds(r: dict) -> list:
    """The seeds the models were trained at (the result's one seed where it ran one; [None] where it names none)."""
    return list(r.get("by_seed") or {}) or [r.get("seed")]


def runs(r: dict) -> list[dict]:
    """The result of every seed (the result itself where it ran one)."""
    return list((r.get("by_seed") or {}).values()) or [r]


def seen(r: dict, version: str, model: str) -> list[dict]:
    """A model's answers at every seed it did not diverge at."""
    return [d["versions"][version]["models"][model] for d in runs(r)
            if not is_diverged(d["versions"][version]["models"][model])]


def accuracy_spreads(r: dict) -> pd.DataFrame:
    """Every version and model measured at some seed: its held-out accuracy over the seeds (results.Spread)."""
    by_seed = r.get("by_seed") or {}
    rows = pd.DataFrame([{"version": v, "model": m,
                          "accuracy": Spread({int(k): d["versions"][v]["models"][m]["accuracy"]
                                              for k, d in by_seed.items()
                                              if not is_diverged(d["versions"][v]["models"][m])})}
                         for v, e in r["versions"].items() for m in e["models"]])
    return rows[rows.accuracy.map(lambda sp: bool(sp.by_seed))]  # a model diverged at every seed has none


def chance_inputs(r: dict, version: str, model: str) -> tuple[list[float], float | None] | None:
    """A model's accuracies over the seeds and the mean binomial error they state (None where one states none),
    what its estimate against chance is made of; None where it diverged at every seed."""
    answers = seen(r, version, model)
    if not answers:
        return None
    stated = [x.get("accuracy_se") for x in answers]
    return [x["accuracy"] for x in answers], None if None in stated else sum(stated) / len(stated)


def at_the_ends(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose accuracy is 0 or 1 and whose count of held-out sentences is recorded."""
    return rows[rows.accuracy.isin([0.0, 1.0]) & rows.n.notna()]


def heaviest(row: list[float]) -> int:
    """The key position a row of weights puts the most on (the first, on a tie)."""
    return max(range(len(row)), key=row.__getitem__)


def sentence_weights(m: dict) -> pd.DataFrame:
    """The maps' sentences' rows at the scored position, one row per (sentence, by its adjective; block, from 1;
    key position j) with the word there and its weight."""
    return pd.DataFrame([{"sentence": s["adjective"], "block": b + 1, "j": j, "word": s["words"][j], "weight": weight}
                         for s in m["sentences"].values() for b, row in enumerate(s["blocks"])
                         for j, weight in enumerate(row)])
