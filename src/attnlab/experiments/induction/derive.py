"""S10's numbers as its page shows them: the control models' scores as they train and every head's at the end,
and where the in-context-learning score reads an input (as the producer's icl_score does)."""
from __future__ import annotations

import pandas as pd

from attnlab.config import run_settings
from attnlab.experiments.induction import settings
from attnlab.nn.spec import ModelSpec

NAME = "induction"
ICL_SHARES = (settings.EARLY, settings.LATE)  # the shares of an input's length the score reads its two ends at


def control_spec(cfg: dict, **more) -> ModelSpec:
    """The control models' spec as the profile sets it (`more`: n_blocks, for one depth)."""
    s = cfg[NAME]
    return ModelSpec(**{**s["model"], "vocab_size": s["vocab_size"], "context": s["length"], **more})


def control_train(cfg: dict) -> dict:
    """The control models' training: the profile's train section under induction.train."""
    return {**cfg["train"], **cfg[NAME]["train"]}


def read_length(cfg: dict, source: str) -> int | None:
    """The length of the input the score reads: S10's control sequences ('induction') or a training run's
    windows (its context); None for a run the profile does not declare."""
    if source == NAME:
        return cfg[NAME]["length"]
    run = run_settings(cfg, source)
    return run.spec.context if run else None


def icl_windows(T: int) -> tuple[slice, slice]:
    """The positions the in-context-learning score reads, early and late, in an input of length T."""
    return settings.window(T, settings.EARLY), settings.window(T, settings.LATE)


def series(control: dict, scores) -> pd.DataFrame:
    """Every control model's `scores` (keys of its probed series) at every probe: columns model (its layers),
    step, score, value."""
    return pd.DataFrame([{"model": c["layers"], "step": row["step"], "score": key, "value": row[key]}
                         for c in control.values() for row in c["series"] for key in scores])


def jumps(control: dict) -> list[tuple[int, int]]:
    """(layers, step) of every control model whose best prefix-matching score jumps, at the step it does."""
    return [(c["layers"], c["induction_jump"]["step"]) for c in control.values()
            if c["induction_jump"]["step"] is not None]


def head_rows(name: str, scores: dict) -> list[dict]:
    """One row per head of model `name`: its prefix-matching, previous-token and (where recorded) copying score."""
    return [{"model": name, "layer": layer + 1, "head": head + 1, "prefix": p,
             "previous": scores["previous"][layer][head],
             "copying": scores["copying"][layer][head] if scores.get("copying") else None}
            for layer, heads in enumerate(scores["prefix"]) for head, p in enumerate(heads)]


def heads(models: dict) -> pd.DataFrame:
    """Every head of every model (name -> its scores)."""
    return pd.DataFrame([row for name, scores in models.items() for row in head_rows(name, scores)])


def final_heads(control: dict) -> pd.DataFrame:
    """Every head of every control model at the end of training, its copying score with it."""
    return heads({name: {**c["final"], "copying": c["copying"]} for name, c in control.items()})
