"""The plan: every job of a complete run of a profile, worked out once from the registry and the profile.

Snakemake's rules (workflow/rules/common.smk), the Snakemake-free runner and published versions all read it:
which run files a run writes, which settings each job reads (its rerun trigger), what it needs finished first.
Nothing here imports torch: the Snakefile reads it on every invocation.
"""
from __future__ import annotations

from dataclasses import dataclass

from attnlab import layout, registry
from attnlab.config import job_settings, seeds
from attnlab.errors import AttnlabError
from attnlab.runs import OWN_SEEDS, entries, find_run, own_seeds

PREPARE = "prepare_data"  # the data experiment's job: the corpus's token files, and their stats (layout.STATS)


@dataclass(frozen=True)
class Job:
    name: str                 # e.g. ladder/L9/seed1337, winograd, prepare_data
    experiment: str           # its registry entry
    kind: str                 # the entry's kind: data | training | analysis | benchmark
    files: tuple[str, ...]    # the run files it writes, relative to results/<profile>/; the first is its run file
    reads: tuple[str, ...]    # the profile sections it reads (a dotted one, e.g. 'ladder.L9', is one entry)
    settings: str             # those sections as canonical JSON (config.job_settings): its config hash
    needs: tuple[str, ...] = ()  # names of the jobs that must finish first, prepare_data included
    run: str | None = None    # a training job's run and seed
    seed: int | None = None
    data: bool = False        # it reads the token files
    gpu: bool = False         # it takes the GPU where there is one

    @property
    def output(self) -> str:
        return self.files[0]


def run_seeds(cfg: dict, e: registry.Experiment, run: str) -> list[int]:
    """The seeds a training run is trained at: its experiment's, and those of every analysis that reads it at
    every seed (`every_seed`) with seeds of its own."""
    at = seeds(cfg, e.name)
    for other in registry.load():
        if other.every_seed and any(need in (e.name, f"{e.name}.{run}") for need in other.needs):
            at += [seed for seed in seeds(cfg, other.name) if seed not in at]
    return at


def as_read_by(cfg: dict, e: registry.Experiment) -> dict:
    """The profile as `e`'s job reads it: where e's section sets its own seeds, those are its seeds; and every
    experiment's section without its own seeds (which only the plan reads), so that its settings are what they
    were."""
    out = {**cfg, **{x.name: {k: v for k, v in cfg[x.name].items() if k != OWN_SEEDS} for x in registry.load()
                     if own_seeds(cfg, x.name)}}
    own = own_seeds(cfg, e.name)
    return {**out, "seeds": own} if own else out


def job_name(e: registry.Experiment) -> str:
    """The job of an experiment that trains nothing."""
    return PREPARE if e.kind == "data" else e.name


def needed(cfg: dict, e: registry.Experiment) -> list[str]:
    """The jobs whose work `e` reads (its registry `needs`): a training run at the first seed, or at every seed
    of the profile for an experiment that reads them all (`every_seed`; the checkpoint is written with the
    metrics), every run of a training experiment, or another experiment's result."""
    at = seeds(cfg, e.name) if e.every_seed else seeds(cfg)[:1]
    out = []
    for need in e.needs:
        name, _, run = need.partition(".")
        other = registry.get(name)
        if other.trains:
            runs = [run] if run else list(entries(cfg.get(name)))
            out += [layout.run_dir(name, r, seed) for r in runs for seed in at]
        else:
            out.append(job_name(other))
    return out


def training(cfg: dict, e: registry.Experiment, picked: set[str] | None = None) -> list[Job]:
    """One job per run of a training experiment (of its runs `picked`) and seed; an up-trained run reads its
    source's entry too (its weights are pooled to fit) and needs the source at the same seed."""
    declared = entries(cfg.get(e.name))
    unknown = sorted((picked or set()) - set(declared))
    if unknown:
        raise AttnlabError(f"'{e.name}.{unknown[0]}' names no run of this profile ({e.name}'s runs: "
                           f"{', '.join(declared)})")
    out = []
    for run, entry in declared.items():
        if picked and run not in picked:
            continue
        source = (entry or {}).get("init_from")
        owner = find_run(cfg, source)[0] if source else None
        reads = ("device", "data", "model", "train", f"{e.name}.{run}", *([f"{owner}.{source}"] if source else ()))
        for seed in run_seeds(cfg, e, run):
            files = tuple(layout.run_file(e.name, run, seed, name) for name in (layout.METRICS, layout.CURVE))
            out.append(Job(layout.run_dir(e.name, run, seed), e.name, e.kind, files, reads,
                           job_settings(cfg, *reads, seed=seed),
                           (PREPARE, *([layout.run_dir(owner, source, seed)] if source else ())), run, seed,
                           data=True, gpu=True))
    return out


def picked_runs(only: list[str]) -> dict[str, set[str]]:
    """Experiment -> the runs `only` names of it (`depth.E4-pre`: one run of a training experiment; `depth`: every
    run, an empty set), each experiment checked against the registry."""
    whole = {registry.get(name).name for name in only if "." not in name}
    out: dict[str, set[str]] = {}
    for name in only:
        experiment, _, run = name.partition(".")
        e = registry.get(experiment)
        if run and not e.trains:
            raise AttnlabError(f"'{name}' names a run of {e.name}, which trains none: give the experiment alone")
        runs = out.setdefault(e.name, set())
        if run and e.name not in whole:
            runs.add(run)
    return out


def plan(cfg: dict, only: list[str] | None = None) -> list[Job]:
    """Every job of a complete run of `cfg` (or of the experiments `only` names, or runs of one it names as
    `depth.E4-pre`, without what they need), in an order that respects what each needs: the registry's, whose
    entries need only those above them."""
    wanted = picked_runs(only) if only else None
    out = []
    for e in registry.load():
        if wanted is not None and e.name not in wanted:
            continue
        if e.trains:
            out += training(cfg, e, wanted and wanted[e.name])
        else:
            settings = job_settings(as_read_by(cfg, e), *e.reads)
            out.append(Job(job_name(e), e.name, e.kind, (e.result,), e.reads, settings,
                           (*([PREPARE] if e.data else []), *needed(cfg, e)), data=e.data, gpu=e.gpu))
    return out


def with_needs(cfg: dict, only: list[str] | None) -> list[Job]:
    """The plan's jobs: every one, or those of the experiments `only` names and every job they need."""
    every = plan(cfg)
    if not only:
        return every
    names = {job.name for job in plan(cfg, only)}
    by_name = {job.name: job for job in every}
    todo = list(names)
    while todo:
        for need in by_name[todo.pop()].needs:
            if need not in names:
                names.add(need)
                todo.append(need)
    return [job for job in every if job.name in names]
