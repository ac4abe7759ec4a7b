# Each job runs `python -m attnlab --log {log} VERB`: its output goes to its log, and a failure's one-line
# error also reaches the terminal, so that Snakemake's "job failed" comes with its reason.
# Every experiment, its runs and its result files come from the registry (src/attnlab/experiments.yaml).
import os

import attnlab.check
import attnlab.config
import attnlab.imports
import attnlab.registry
import attnlab.runlock
import attnlab.runner

os.environ[attnlab.runlock.PARENT] = str(os.getpid())  # its jobs end with this Snakemake, even on a kill -9

ENV = "../../environment.yml"
GPU = 1 if config["device"] == "cuda" or (config["device"] == "auto" and attnlab.check.cuda_usable()[0]) else 0
EXPERIMENTS = {e.name: e for e in attnlab.registry.load()}
TRAINING = {name: list(config.get(name) or {}) for name, e in EXPERIMENTS.items() if e.trains}
MEASURED = {name: e for name, e in EXPERIMENTS.items() if e.kind in ("analysis", "benchmark")}


def settings(*sections, **extra):
    """A param: the settings one job reads, as canonical JSON. The job reads nothing else, so they are both
    its rerun trigger (whatever order they were written in) and fixed once it is scheduled."""
    return attnlab.config.job_settings(config, *sections, **extra)


def code(verb, *modules):
    """A rule's code inputs: every attnlab source file that `attnlab VERB` (and `modules`) imports, directly
    or not, read from the source. Editing one reruns exactly the jobs that import it."""
    imported = attnlab.imports.verb(verb) | attnlab.imports.closure(*modules)
    return attnlab.imports.files(imported, root=workflow.basedir)


def gpu(wanted=True):
    """A rule's `gpu` resource: the GPUs a job that runs on one takes. It is Snakemake's standard resource, so
    on one machine `--resources gpu=1` counts it (1 only where this machine has a GPU, so that CPU jobs are not
    made to queue), and the SLURM executor plugin turns it into `sbatch --gpus=1`. On a cluster the machine
    running Snakemake is no guide (a login node seldom has a GPU): every such job asks for one, unless the
    settings say `device: cpu` (`--config device=cpu`). Called when the DAG is built, once the executor is known."""
    if not wanted or config["device"] == "cpu":
        return 0
    return GPU if workflow.local_exec else 1


def parent_of(kind, name):
    """A param: the folder holding one of the rule's inputs or outputs (kind 'input' or 'output')."""

    def param(wildcards, input, output):
        files = getattr(input if kind == "input" else output, name)
        return str(Path(files if isinstance(files, str) else files[0]).parent)

    return param


def run_files(name, file="metrics.json"):
    """Every run file of one experiment: a training experiment's runs at every seed, or the result of any other."""
    e = EXPERIMENTS[name]
    if e.trains:
        return [f"{R}/{e.run_file(run, seed, file)}" for run in TRAINING[name] for seed in config["seeds"]]
    return [f"{R}/{e.result}"]


def init_source(experiment, run, seed):
    """The finished run an up-trained run starts from, at the same seed (its metrics: its checkpoint is
    written with them)."""
    source = config[experiment][run].get("init_from")
    if not source:
        return []
    owner = next(e for e, runs in TRAINING.items() if source in runs)
    return [f"{R}/{EXPERIMENTS[owner].run_file(source, seed)}"]


def run_sections(experiment, run):
    """The run's own entry, and for an up-trained run its source run's too (its weights are pooled to fit)."""
    return attnlab.runner.run_sections(config, experiment, run)
