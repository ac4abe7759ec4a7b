"""S9's numbers as its page shows them, derived from its result file (producer.py writes it): each sentence's
divergences, the adversaries' against both yardsticks, and what the model it explains is."""
from __future__ import annotations

import pandas as pd

from attnlab import registry, stats
from attnlab.nn.spec import ModelSpec

NAME = "explanation"
WINOGRAD = registry.get(NAME).needs[0]  # the experiment whose model it explains


def second_seed(cfg: dict) -> int:
    """The seed the second model, the seed yardstick, is trained at: the profile's seed + 1."""
    return cfg["seed"] + 1


def studied(cfg: dict) -> tuple[str, ModelSpec]:
    """E8's model that S9 explains: its name and spec (winograd.model with that model's overrides; the vocabulary
    and context, which E8's data sets, stand in as 2)."""
    w, name = cfg[WINOGRAD], cfg[NAME]["model"]
    return name, ModelSpec(**{**w["model"], **w["models"][name], "vocab_size": 2, "context": 2})


def divergences(r: dict) -> pd.DataFrame:
    """Every sentence's divergence from the learned row: of the adversary ('adversary'), of a second seed's row
    ('seed') and of the uniform row ('uniform'), where measured."""
    kinds = {"adversary": r["adversarial"]["max_jsd"], "seed": (r.get("seeds") or {}).get("jsd") or [],
             "uniform": r["uniform"]["jsd_learned_uniform"]}
    return pd.DataFrame([{"sentence": i, "kind": kind, "jsd": j} for kind, values in kinds.items()
                         for i, j in enumerate(values) if j is not None], columns=["sentence", "kind", "jsd"])


def adversary_median(r: dict) -> tuple[float | None, float | None]:
    """The adversaries' median divergence over all sentences (0 where none moved) and its error; an older file
    records only the median over the sentences that moved, the same where every sentence did."""
    a = r["adversarial"]
    far, se = a.get("median_jsd_under_bound"), a.get("se_median_jsd_under_bound")
    if far is None and a["n_feasible"] == r["n_examples"]:
        far = a["median_max_jsd"]
    return far, se


def seed_ratio(r: dict) -> tuple[float | None, float | None]:
    """How many times as far the adversaries move the row as a retraining at another seed does (their medians'
    ratio) and its bootstrap error where both sets of divergences are recorded; (None, None) without a second
    seed."""
    a, seeds = r["adversarial"], (r.get("seeds") or {}).get("median_jsd")
    if seeds is None or a["median_max_jsd"] is None or seeds <= 0:
        return None, None
    ratio, se = a["median_max_jsd"] / seeds, None
    if a.get("max_jsd") and r["seeds"].get("jsd"):
        se = stats.se_median_ratio(a["max_jsd"], r["seeds"]["jsd"], 1e-6)
    return ratio, se


def uniform_cost(r: dict) -> float:
    """The held-out accuracy lost when the row is made uniform (0 where either is not recorded)."""
    acc = r.get("accuracy") or {}
    return (acc.get("learned") or 0) - (acc.get("row") or 0)
