"""S1 · Where attention came from: what a profile sets for `seq2seq` (no torch: every check of a profile reads it)."""
from __future__ import annotations

import yaml

from attnlab.errors import AttnlabError
from attnlab.nn.spec import CELLS, VARIANTS


SCHEMA = yaml.safe_load(r"""
description: "S1: a recurrent encoder-decoder with and without attention on copy and reverse, and the gradient path"
type: object
additionalProperties: false
default: {}
properties:
  tasks: {type: array, items: {type: string}, minItems: 1, uniqueItems: true, default: [copy, reverse],
          description: "copy or reverse a random sequence (the names: attnlab.experiments.seq2seq.settings)"}
  lengths: {type: array, items: {type: integer, minimum: 1}, minItems: 1, uniqueItems: true, default: [8, 16, 32],
            description: source lengths every variant is trained at}
  variants: {type: array, items: {type: string}, minItems: 2, uniqueItems: true,
             default: [none, bahdanau, dot, general, concat],
             description: "none (the encoder's last state only, the fixed vector), bahdanau (the additive score in
               Bahdanau et al.'s wiring: scored with the previous decoder state, the context an input of the
               recurrence, a two-way encoder), dot, general, concat (Luong et al.'s scores in their wiring: scored
               with the current state, the context combined after the recurrence)"}
  vocab: {type: integer, minimum: 2, default: 16, description: symbols a sequence is drawn from}
  cell: {type: string, default: gru, description: gru or lstm}
  d_model: {type: integer, minimum: 1, default: 32}
  bidirectional: {type: boolean, default: true,
                  description: "the encoder reads both ways (Bahdanau's, which his wiring needs; Luong's read one way)"}
  input_feeding: {type: boolean, default: true,
                  description: "Luong's wiring: the attentional state h~_{t-1} joins the next step's input (the
                    paper's main setting); false: the context reaches only the output"}
  train_rows: {type: integer, minimum: 1, default: 20000, description: training examples per task x length x seed}
  eval_rows: {type: integer, minimum: 1, default: 512, description: held-out examples the accuracies are read on}
  map:
    description: the trained model whose weights the page draws (its first seed, at the longest length)
    type: object
    additionalProperties: false
    default: {}
    properties:
      task: {type: string, default: reverse}
      variant: {type: string, default: bahdanau}
  gradient:
    description: "the gradient path: untrained layers of width d, read at every length T"
    type: object
    additionalProperties: false
    default: {}
    properties:
      kinds: {type: array, items: {type: string}, minItems: 1, uniqueItems: true, default: [rnn, lstm, attention]}
      lengths: {type: array, items: {type: integer, minimum: 2}, minItems: 2, uniqueItems: true,
                default: [2, 4, 8, 16, 32, 64, 128, 256]}
      d: {type: integer, minimum: 1, default: 32}
      seeds: {type: integer, minimum: 1, default: 3}
  train:
    description: the training of every variant (its own settings, not the profile's `train`)
    type: object
    additionalProperties: false
    default: {}
    properties:
      steps: {type: integer, minimum: 1, default: 500}
      batch_size: {type: integer, minimum: 1, default: 64}
      lr: {type: number, exclusiveMinimum: 0, default: 1.0e-2}
      weight_decay: {type: number, minimum: 0, default: 0.0}
      warmup_steps: {type: integer, minimum: 0, default: 0}
      grad_clip: {type: [number, "null"], exclusiveMinimum: 0, default: 1.0}
      eval_every: {type: integer, minimum: 1, default: 100}
      eval_windows: {type: integer, minimum: 1, default: 64, description: held-out rows scored during training}
      ckpt_every: {type: integer, minimum: 1, default: 100}
      train_eval_tokens: {type: [integer, "null"], minimum: 2, default: 8192}
""")
DEFAULTS = {}

TASKS = ("copy", "reverse")
PATH_KINDS = ("rnn", "lstm", "attention")  # what the gradient path runs through


def check(cfg: dict) -> None:
    check_section(cfg["seq2seq"])


def check_section(s: dict) -> None:
    """S1's names: tasks, score functions (variants), the cell and the gradient path's layers must be known,
    Bahdanau's wiring needs the two-way encoder, and the plotted model must be one that is trained. (Lengths, counts and sizes are bounded by the schema.)"""
    def bad(key, msg):
        raise AttnlabError(f"config error at 'seq2seq.{key}': {msg}")

    for key, values, known, what in [("tasks", s["tasks"], TASKS, "task"),
                                     ("variants", s["variants"], VARIANTS, "score function"),
                                     ("cell", [s["cell"]], CELLS, "cell type"),
                                     ("gradient.kinds", s["gradient"]["kinds"], PATH_KINDS, "layer")]:
        for value in values:
            if value not in known:
                bad(key, f"unknown {what} {value!r} (choose from {', '.join(known)})")
    if "bahdanau" in s["variants"] and not s["bidirectional"]:
        bad("bidirectional", "false, but variant 'bahdanau' is Bahdanau's wiring, which reads a two-way encoder")
    if "none" not in s["variants"] or len(s["variants"]) < 2:
        bad("variants", "needs 'none' (the fixed vector) and at least one score function to compare with it")
    m = s["map"]
    if m["task"] not in s["tasks"]:
        bad("map.task", f"{m['task']!r} is not one of seq2seq.tasks ({', '.join(s['tasks'])})")
    if m["variant"] == "none" or m["variant"] not in s["variants"]:
        bad("map.variant", f"{m['variant']!r} is not an attention variant of seq2seq.variants "
                           f"({', '.join(v for v in s['variants'] if v != 'none')})")
