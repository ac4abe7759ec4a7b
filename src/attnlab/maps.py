"""Attention maps as data: what a producer records for the attention viewer and what a page draws from it.

The data (checked by `check_data`; the report's viewer_widget draws it):

    {"examples": [
       {"id": "winograd-tired", "label": "Winograd: ... too tired ...", "tokens": ["the", "animal", ...],
        "models": {"E8 one block": [           # one entry per layer
                       [head0, head1, ...]]},  # each head: T x T, row i = query i over keys 0..T-1 (causal)
        "alternatives": [                      # optional: other weights for one model/layer/head
           {"name": "adversarial", "model": "E8 one block", "layer": 0, "head": 0, "weights": T x T,
            "note": "JS divergence 0.41 from the learned weights; ..."}]},   # note optional
       ...]}

Every layer of a model has the same number of heads. Weights are plain lists of numbers; round them
(4 decimals is plenty) to keep the page small.

A row may be null (None): that token does not attend in that head, e.g. cross-attention over tokens
[source..., SEP, target...], where only SEP and the target tokens but the last have rows (over the source).
Each head needs one row that is not null; "mean of heads" averages a query's rows in the heads that have one.
"""
from __future__ import annotations

import math

from attnlab.errors import AttnlabError, is_diverged

TOL = 1e-3  # how far a row's visible sum may stray from 1, and the largest weight allowed right of the query
EXAMPLE_KEYS = {"id", "label", "tokens", "models"}
ALTERNATIVE_KEYS = {"name", "model", "layer", "head", "weights"}


def _fail(where: str, problem: str):
    raise AttnlabError(f"viewer data: {where}: {problem}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_index(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_keys(obj, required: set, optional: set, where: str):
    if not isinstance(obj, dict):
        _fail(where, f"must be an object, not {type(obj).__name__}")
    missing = sorted(required - set(obj))
    if missing:
        _fail(where, f"missing {', '.join(map(repr, missing))}")
    unknown = sorted(set(obj) - required - optional, key=str)
    if unknown:
        _fail(where, f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(required | optional))})")


def _check_row(row, i: int, n: int, where: str):
    if not isinstance(row, list) or len(row) != n:
        got = len(row) if isinstance(row, list) else type(row).__name__
        _fail(where, f"row {i} has {got} weights, not one per token ({n})")
    for j, v in enumerate(row):
        if not _is_number(v):
            _fail(where, f"row {i}, key {j}: {v!r} is not a finite number")
        if v < -TOL:
            _fail(where, f"row {i}, key {j}: weight {v:g} is negative")
        if j > i and v > TOL:
            _fail(where, f"row {i}, key {j}: weight {v:g} right of the query (attention is causal; expected 0)")
    total = sum(row[:i + 1])
    if abs(total - 1) > TOL:
        _fail(where, f"row {i} sums to {total:.4f} over its visible keys 0..{i}, not 1 (within {TOL:g})")


def _check_weights(weights, n: int, where: str):
    """A T x T causal attention map: one row per query, each summing to 1 over keys 0..i, or null."""
    if not isinstance(weights, list) or len(weights) != n:
        got = len(weights) if isinstance(weights, list) else type(weights).__name__
        _fail(where, f"has {got} rows, not one per token ({n})")
    if all(row is None for row in weights):
        _fail(where, "every row is null (no token attends; at least one row needs weights)")
    for i, row in enumerate(weights):
        if row is not None:
            _check_row(row, i, n, where)


def _check_model(name, layers, n: int, where: str):
    where = f"{where}, model {name!r}"
    if not isinstance(layers, list) or not layers:
        _fail(where, "must be a non-empty list of layers")
    for l, heads in enumerate(layers):
        if not isinstance(heads, list) or not heads:
            _fail(f"{where}, layer {l}", "has no heads (expected a non-empty list of T x T maps)")
        if len(heads) != len(layers[0]):
            _fail(f"{where}, layer {l}", f"has {len(heads)} heads, layer 0 has {len(layers[0])}")
        for h, weights in enumerate(heads):
            _check_weights(weights, n, f"{where}, layer {l}, head {h}")


def _check_alternative(alt, k: int, models: dict, n: int, where: str):
    where = f"{where}, alternative {k}"
    _check_keys(alt, ALTERNATIVE_KEYS, {"note"}, where)
    if not isinstance(alt["name"], str) or not alt["name"] or alt["name"] == "learned":
        _fail(where, f"name {alt['name']!r} must be a non-empty string other than 'learned'")
    if alt["model"] not in models:
        _fail(where, f"unknown model {alt['model']!r} (the example has {', '.join(map(repr, models))})")
    layers = models[alt["model"]]
    if not _is_index(alt["layer"]) or not 0 <= alt["layer"] < len(layers):
        _fail(where, f"layer {alt['layer']!r} is not one of 0..{len(layers) - 1}")
    heads = layers[alt["layer"]]
    if not _is_index(alt["head"]) or not 0 <= alt["head"] < len(heads):
        _fail(where, f"head {alt['head']!r} is not one of 0..{len(heads) - 1}")
    if not isinstance(alt.get("note", ""), str):
        _fail(where, "note must be a string")
    _check_weights(alt["weights"], n, f"{where} ({alt['name']!r}) weights")


def _check_example(ex, k: int):
    where = f"example {k}"
    _check_keys(ex, EXAMPLE_KEYS, {"alternatives"}, where)
    if not isinstance(ex["id"], str) or not ex["id"]:
        _fail(where, f"id {ex['id']!r} must be a non-empty string")
    where = f"example {ex['id']!r}"
    if not isinstance(ex["label"], str):
        _fail(where, "label must be a string")
    tokens = ex["tokens"]
    if not isinstance(tokens, list) or not tokens or not all(isinstance(t, str) for t in tokens):
        _fail(where, "tokens must be a non-empty list of strings")
    models = ex["models"]
    if not isinstance(models, dict) or not models:
        _fail(where, "models must be a non-empty object {model name: layers}")
    for name, layers in models.items():
        _check_model(name, layers, len(tokens), where)
    alternatives = ex.get("alternatives", [])
    if not isinstance(alternatives, list):
        _fail(where, "alternatives must be a list")
    for i, alt in enumerate(alternatives):
        _check_alternative(alt, i, models, len(tokens), where)
    names = [alt["name"] for alt in alternatives]
    if len(set(names)) != len(names):
        _fail(where, "two alternatives share a name")


def check_data(data) -> None:
    """Raise AttnlabError (one line naming the place and the problem) unless `data` is viewer data."""
    _check_keys(data, {"examples"}, set(), "data")
    examples = data["examples"]
    if not isinstance(examples, list) or not examples:
        _fail("data", "examples must be a non-empty list")
    seen = set()
    for k, ex in enumerate(examples):
        _check_example(ex, k)
        if ex["id"] in seen:
            _fail(f"example {k}", f"id {ex['id']!r} is used twice")
        seen.add(ex["id"])


def drawable(data: dict) -> tuple[dict, list[dict]]:
    """The viewer's data without the models whose run diverged (their Diverged records, attnlab.errors, stand in
    for their maps; an example left with no model goes too), and those records, each once."""
    examples, lost = [], {}
    for ex in data["examples"]:
        models = {name: layers for name, layers in ex["models"].items() if not is_diverged(layers)}
        lost |= {layers["run"]: layers for layers in ex["models"].values() if is_diverged(layers)}
        if models:
            alternatives = [a for a in ex.get("alternatives", []) if a["model"] in models]
            examples.append({**ex, "models": models, **({"alternatives": alternatives} if "alternatives" in ex else {})})
    return {"examples": examples}, list(lost.values())
