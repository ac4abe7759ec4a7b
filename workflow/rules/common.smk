# Each job runs `python -m attnlab.jobs --log {log} VERB` (a run's) or `python -m attnlab --log {log} VERB` (the
# report's): its output goes to its log, and a failure's one-line error also reaches the terminal, so that
# Snakemake's "job failed" comes with its reason. Their code inputs are what the verb imports (code() below): the
# reader's verbs (publish, versions, ...) are not a run's, so editing them reruns no run.
# Every job, its run files, its settings and what it needs come from the plan (attnlab.plan), which reads the
# registry (src/attnlab/experiments.yaml) and the profile; the Snakemake-free runner and `publish` read it too.
import os
import sys
from pathlib import Path

import attnlab.check
import attnlab.config
import attnlab.imports
import attnlab.layout
import attnlab.plan
import attnlab.registry
import attnlab.runlock

os.environ[attnlab.runlock.PARENT] = str(os.getpid())  # its jobs end with this Snakemake, even on a kill -9

ENV = "../../environment.yml"
GPU = 1 if config["device"] == "cuda" or (config["device"] == "auto" and attnlab.check.cuda_usable()[0]) else 0
EXPERIMENTS = {e.name: e for e in attnlab.registry.load()}
PLAN = attnlab.plan.plan(config)  # every job of the profile, in an order that respects what each needs
JOBS = {job.name: job for job in PLAN}
MEASURED = {job.name: job for job in PLAN if job.kind in ("analysis", "benchmark")}  # the analyse rule's jobs
TRAINED = [job for job in PLAN if job.run]  # the train rule's


def title(wildcards):
    """A report() category: the title of the experiment an output's wildcards name (its page's)."""
    return EXPERIMENTS[wildcards.get("experiment") or wildcards.name].title


def decides(name):
    """The claims experiment `name` decides, from its claims.yaml, as the report's captions name them ('C2.1, C2.2,
    ...'; '' for none)."""
    return ", ".join(attnlab.registry.claim_ids(name))


def decided(wildcards, output):
    """A param only the report's captions read (workflow/report/*.rst): the claims that the experiment the job's
    wildcards name decides. It takes `output`, so Snakemake counts it derived from the outputs rather than a
    setting: it reruns no job."""
    return decides(wildcards.get("experiment") or wildcards.name)


def settings(*sections):
    """A param: the settings a job outside the plan reads, as canonical JSON (a planned job's are its
    `settings`). The job reads nothing else, so they are both its rerun trigger (whatever order they were
    written in) and fixed once it is scheduled."""
    return attnlab.config.job_settings(config, *sections)


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


def trained(wildcards):
    """The training job a train rule's wildcards name."""
    return JOBS[attnlab.layout.run_dir(wildcards.experiment, wildcards.run, int(wildcards.seed))]


def needed(job):
    """An input: the run files of the work `job` reads (an up-trained run's source, an analysis's `needs`);
    the token files are inputs of their own."""
    return [f"{R}/{JOBS[name].output}" for name in job.needs if name != attnlab.plan.PREPARE]


def expected_time(jobs):
    """The expected run time of `jobs` (those whose run file is not there yet), per experiment, and the wall time
    at the jobs this run takes at once (`--cores` over a training job's threads), from recorded run times."""
    import attnlab.eta

    todo = [job for job in PLAN if job.name in jobs]
    slots = max(1, (workflow.resource_settings.cores or 1) // (config["threads"] or 2))
    print("attnlab: " + attnlab.eta.expected(todo, PROFILE, slots, f"the {len(todo)} jobs whose run file is not "
                                             "there yet (Snakemake may rerun others whose code or settings changed)"),
          file=sys.stderr, flush=True)


def missing():
    return {job.name for job in PLAN if not Path(R, job.output).is_file()}
