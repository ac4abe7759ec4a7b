"""Checks of the generated tasks' settings (E8's sentences, S10's sequences, S1's transduction runs) that need
no torch, so that the Snakefile runs them before any job: one line naming the first bad value. Also what the
site says of them (S10's read positions), for the same reason: the report does not import torch."""
from __future__ import annotations

import re

from attnlab.errors import AttnlabError

SLOTS = ("x", "y", "adj", "ref")  # E8's template: the two nouns, the adjective, the referent

# S1 (attnlab.experiments.seq2seq): what its settings may name
SEQ2SEQ_TASKS = ("copy", "reverse")
CELLS = ("gru", "lstm")
VARIANTS = ("none", "bahdanau", "dot", "general", "concat")  # none: the fixed-vector bottleneck
PATH_KINDS = ("rnn", "lstm", "attention")  # what the gradient path runs through


def check_winograd(w: dict) -> None:
    """One line naming the first problem with the task's word lists or template, before anything runs."""
    def bad(key, msg):
        raise AttnlabError(f"config error at 'winograd.{key}': {msg}")

    for key in ("nouns", "animals", "places", "crosser", "crossed"):
        words = w[key]
        dup = sorted({x for x in words if words.count(x) > 1})
        if dup:
            bad(key, f"'{dup[0]}' appears more than once")
        if key in ("nouns", "animals", "places") and len(words) < 2:
            bad(key, f"needs at least two nouns, got {len(words)}")
        if key in ("crosser", "crossed") and not words:
            bad(key, "needs at least one adjective")
    both = sorted(set(w["crosser"]) & set(w["crossed"]))
    if both:
        bad("crossed", f"'{both[0]}' is in both crosser and crossed: an adjective has one role")
    overlap = sorted(set(w["animals"]) & set(w["places"]))
    if overlap:
        bad("places", f"'{overlap[0]}' is both an animal and a place")
    found = re.findall(r"\{(\w+)\}", w["template"])
    missing = [s for s in SLOTS if s not in found]
    if missing:
        bad("template", f"has no {{{missing[0]}}} slot (it needs {', '.join('{' + s + '}' for s in SLOTS)})")
    extra = sorted(set(found) - set(SLOTS))
    if extra:
        bad("template", f"has an unknown slot {{{extra[0]}}}")
    words = w["template"].split()
    if words.count("{ref}") != 1 or words.index("{ref}") == 0:
        bad("template", "needs one {ref} slot after at least one word (the word before it is where it is read)")
    m = w["map"]
    for key in ("x", "y"):
        if m[key] not in w["nouns"]:
            bad(f"map.{key}", f"'{m[key]}' is not one of winograd.nouns")
    if m["x"] == m["y"]:
        bad("map.y", f"'{m['y']}' is also map.x: the map sentences need two different nouns")
    for role in ("crosser", "crossed"):
        if m[role] not in w[role]:
            bad(f"map.{role}", f"'{m[role]}' is not one of winograd.{role}")
    if not 0 < w["held_out"] < 1:
        bad("held_out", f"must be a share strictly between 0 and 1, got {w['held_out']}")


# S10 (attnlab.experiments.induction): where the in-context-learning score reads a sequence, as fractions of its
# length (Olsson et al. read tokens 50 and 500); here, without torch, so that the site can say which positions
EARLY, LATE = 0.1, 0.9


def window(T: int, at: float) -> slice:
    """Positions around at * T: the nearest one with T // 40 neighbours each side (one position up to T = 39)."""
    k, centre = T // 40, min(T - 1, round(at * T))
    return slice(max(0, centre - k), min(T, centre + k + 1))


def check_induction(s: dict) -> None:
    """S10's repeated spans: the span must recur at least once in a sequence of the model's length."""
    if s["span"] > s["length"] + 1:
        raise AttnlabError(f"config error at 'induction.span': a span of {s['span']} tokens is longer than the "
                           f"sequence ({s['length'] + 1} tokens: induction.length + 1)")
    if 2 * s["span"] > s["length"] + 1:
        raise AttnlabError(f"config error at 'induction.span': a span of {s['span']} cannot recur in "
                           f"{s['length'] + 1} tokens (it needs at least twice its length)")


def check_seq2seq(s: dict) -> None:
    """S1's names: tasks, score functions (variants), the cell and the gradient path's layers must be known, and
    the plotted model must be one that is trained. (Lengths, counts and sizes are bounded by the schema.)"""
    def bad(key, msg):
        raise AttnlabError(f"config error at 'seq2seq.{key}': {msg}")

    for key, values, known, what in [("tasks", s["tasks"], SEQ2SEQ_TASKS, "task"),
                                     ("variants", s["variants"], VARIANTS, "score function"),
                                     ("cell", [s["cell"]], CELLS, "cell type"),
                                     ("gradient.kinds", s["gradient"]["kinds"], PATH_KINDS, "layer")]:
        for value in values:
            if value not in known:
                bad(key, f"unknown {what} {value!r} (choose from {', '.join(known)})")
    if "none" not in s["variants"] or len(s["variants"]) < 2:
        bad("variants", "needs 'none' (the fixed vector) and at least one score function to compare with it")
    m = s["map"]
    if m["task"] not in s["tasks"]:
        bad("map.task", f"{m['task']!r} is not one of seq2seq.tasks ({', '.join(s['tasks'])})")
    if m["variant"] == "none" or m["variant"] not in s["variants"]:
        bad("map.variant", f"{m['variant']!r} is not an attention variant of seq2seq.variants "
                           f"({', '.join(v for v in s['variants'] if v != 'none')})")
