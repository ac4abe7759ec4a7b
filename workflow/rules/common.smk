# Each job runs `python -m attnlab --log {log} VERB`: its output goes to its log, and a failure's one-line
# error also reaches the terminal, so that Snakemake's "job failed" comes with its reason.
from pathlib import Path

import attnlab.check
import attnlab.config

ENV = "../../environment.yml"
GPU = 1 if config["device"] == "cuda" or (config["device"] == "auto" and attnlab.check.cuda_usable()[0]) else 0


def settings(*sections, **extra):
    """A param: the settings one job reads, as canonical JSON. The job reads nothing else, so they are both
    its rerun trigger (whatever order they were written in) and fixed once it is scheduled."""
    return attnlab.config.job_settings(config, *sections, **extra)


def code(*patterns):
    """Source files a rule's work depends on: editing them reruns that rule, and only that rule."""
    return sorted(str(p) for pattern in patterns for p in Path("src/attnlab").glob(pattern))


def parent_of(kind, name):
    """A param: the folder holding one of the rule's inputs or outputs (kind 'input' or 'output')."""

    def param(wildcards, input, output):
        return str(Path(getattr(input if kind == "input" else output, name)).parent)

    return param


TRAINING = {experiment: list(config.get(experiment) or {}) for experiment in attnlab.config.TRAINING}
LADDER = TRAINING["ladder"]


def trained(experiment, output="metrics.json"):
    """The metrics (or curves) of every run of one experiment."""
    return expand(f"{R}/{experiment}/{{run}}/{output}", run=TRAINING[experiment])


ANALYSES = {  # name -> (results folder, source files its numbers depend on)
    "averaging": ("e1", code("experiments/averaging.py", "nn/attention.py")),
    "scores": ("e3", code("experiments/scores.py", "nn/attention.py")),
    "params": ("e7", code("experiments/params.py", "nn/*.py")),
    "equivalence": ("e9", code("experiments/equivalence.py", "nn/*.py")),
    "multihead": ("s4", code("bench/multihead.py", "nn/*.py")),
}


def analysis(name):
    folder, _ = ANALYSES[name]
    return f"{R}/{folder}/{name}.json"
