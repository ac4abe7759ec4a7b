"""E8 · What a head does: what a profile sets for `winograd` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import re

import yaml

from attnlab.errors import AttnlabError


SCHEMA = yaml.safe_load(r"""
description: "E8: a Winograd-style probe on generated word-level sentences; the word after 'so the' is scored"
type: object
additionalProperties: false
default: {}
properties:
  template:
    type: string
    default: "the {x} did not cross the {y} because it was too {adj} , so the {ref} waited ."
    description: "words separated by spaces; slots {x} {y} (the two nouns), {adj}, {ref} (the referent)"
  nouns:
    description: the closed version's nouns, any of them in either slot
    type: array
    items: {type: string, pattern: "^\\S+$"}
    default: [animal, street, dog, road, cat, river, horse, bridge, child, field, bird, lake, man, hill, woman, square]
  animals:
    description: the cheating version's first noun (the one that crosses)
    type: array
    items: {type: string, pattern: "^\\S+$"}
    default: [animal, dog, cat, horse, child, bird, man, woman]
  places:
    description: the cheating version's second noun (the one crossed)
    type: array
    items: {type: string, pattern: "^\\S+$"}
    default: [street, road, river, bridge, field, lake, hill, square]
  crosser: {type: array, items: {type: string, pattern: "^\\S+$"}, default: [tired, scared, slow, weak],
            description: adjectives that make the first noun the referent}
  crossed: {type: array, items: {type: string, pattern: "^\\S+$"}, default: [wet, wide, busy, steep],
            description: adjectives that make the second noun the referent}
  held_out: {type: number, default: 0.25, description: share of noun pairs held out}
  model:
    description: what every model of the probe shares (a ModelSpec's fields)
    type: object
    default: {d_model: 64, n_heads: 4, position: learned, mlp: true, norm: pre}
  models:
    description: the three models, as overrides of `model`
    type: object
    additionalProperties: false
    default: {}
    properties:
      average: {type: object, default: {mixer: average}}
      one_block: {type: object, default: {mixer: multihead}}
      two_blocks: {type: object, default: {mixer: multihead, n_blocks: 2}}
  train:
    description: overrides of the profile's `train` section for these models
    type: object
    default: {steps: 1000, batch_size: 64, lr: 3.0e-3, eval_every: 250, eval_windows: 64, ckpt_every: 250,
              train_eval_tokens: null}
  map:
    description: whose attention the page draws, in which sentences
    type: object
    additionalProperties: false
    default: {}
    properties:
      model: {type: string, enum: [one_block, two_blocks], default: two_blocks}
      x: {type: string, default: animal}
      y: {type: string, default: street}
      crosser: {type: string, default: tired, description: the map sentence whose referent is x}
      crossed: {type: string, default: wet, description: the map sentence whose referent is y}
""")
DEFAULTS = {}

SLOTS = ("x", "y", "adj", "ref")  # the template's slots: the two nouns, the adjective, the referent


def check(cfg: dict) -> None:
    check_section(cfg["winograd"])


def check_section(w: dict) -> None:
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
